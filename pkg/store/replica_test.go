package store_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

// withParam is u with a connection parameter added (application_name
// tells the test which pool a query ran on).
func withParam(t *testing.T, raw, name, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func applicationName(t *testing.T, q store.Querier) string {
	t.Helper()
	var name string
	if err := q.QueryRow(t.Context(), "SELECT current_setting('application_name')").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

// readsOnPrimary is store_replica_reads_on_primary_total of schema, from
// the default registry (the metrics port's); 0 before its first count.
func readsOnPrimary(t *testing.T, schema string) float64 {
	t.Helper()
	v, _ := testkit.Metric(t, "store_replica_reads_on_primary_total", map[string]string{"schema": schema})
	return v
}

// Lists, finds and the compliance report read the replica of
// database.read-url; a request's own writes, and what it reads inside
// them, stay on the primary.
func TestReadsGoToTheReplica(t *testing.T) {
	t.Parallel()
	cfg := open(t)
	cfg.URL = withParam(t, cfg.URL, "application_name", "primary")
	cfg.ReadURL = withParam(t, testkit.PostgresURL(t), "application_name", "replica")
	pool := migrated(t, cfg, migrations)
	s := store.New(pool, nil)
	if got := applicationName(t, s.Reads(t.Context())); got != "replica" {
		t.Errorf("a read ran on %q, want the replica", got)
	}
	if got := applicationName(t, s.DB(t.Context())); got != "primary" {
		t.Errorf("a read that must see the primary ran on %q", got)
	}
	err := s.Write(t.Context(), "insert item", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if got := applicationName(t, s.Reads(ctx)); got != "primary" {
			t.Errorf("a read inside a write ran on %q; it must see the write's own rows", got)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The replica reads the same schema: its sessions have the search path.
	if _, err := pool.Exec(t.Context(), "INSERT INTO items (id, kind) VALUES ($1, 'x')", uuid.New()); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.Reads(t.Context()).QueryRow(t.Context(), "SELECT count(*) FROM items").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the replica's session reads %d items (%v), want the schema's 1", n, err)
	}
	if err := pool.ReplicaReady(t.Context()); err != nil {
		t.Errorf("the replica is up but not ready: %v", err)
	}
	var commit string
	if err := pool.QueryRow(t.Context(), "SHOW synchronous_commit").Scan(&commit); err != nil || commit != "remote_apply" {
		t.Errorf("with a replica, commits wait for %q (%v), want remote_apply: a read there after a write's answer must see it", commit, err)
	}
}

// A replica that cannot be reached costs no read: the primary answers,
// and readiness says what is wrong without failing (the check is optional).
func TestReadsFallBackToThePrimary(t *testing.T) {
	t.Parallel()
	cfg := open(t)
	cfg.URL = withParam(t, cfg.URL, "application_name", "primary")
	cfg.ReadURL = "postgres://nobody:secret@127.0.0.1:" + strconv.Itoa(testkit.FreePort(t)) + "/registry?sslmode=disable&connect_timeout=1"
	pool, err := store.OpenAndMigrate(t.Context(), cfg, migrations, nil)
	if err != nil {
		t.Fatalf("a replica that is down stopped the service from starting: %v", err)
	}
	defer pool.Close()
	s := store.New(pool, nil)
	before := readsOnPrimary(t, cfg.Schema)
	for range 3 { // the first finds the replica down, the next skip it
		if got := applicationName(t, s.Reads(t.Context())); got != "primary" {
			t.Fatalf("a read ran on %q, want the primary standing in", got)
		}
	}
	if got := readsOnPrimary(t, cfg.Schema) - before; got != 3 {
		t.Errorf("store_replica_reads_on_primary_total rose by %v for 3 reads the primary answered", got)
	}
	if err := pool.ReplicaReady(t.Context()); err == nil {
		t.Error("readiness says a replica nobody can reach is up")
	}
}

// What holds a session (migrations, leaders' locks) uses database.direct-url.
func TestSessionsUseTheDirectURL(t *testing.T) {
	t.Parallel()
	cfg := open(t)
	cfg.DirectURL = withParam(t, cfg.URL, "application_name", "direct")
	pool := migrated(t, cfg, migrations)
	var name, path string
	if err := pool.Sessions().QueryRow(t.Context(), "SELECT current_setting('application_name'), current_setting('search_path')").Scan(&name, &path); err != nil {
		t.Fatal(err)
	}
	if name != "direct" || path != cfg.Schema {
		t.Errorf("a session ran on %q with search_path %q, want database.direct-url's, in %s", name, path, cfg.Schema)
	}
}

// A pooler in transaction mode drops the startup parameters the service
// asks its sessions with (its schema, its timeouts): the service refuses
// to start so, naming the remedy, and starts once the role has them.
func TestSettingsAPoolerDropsAreRefused(t *testing.T) {
	t.Parallel()
	conn, role, schema, u := schemaOwner(t, "t_pooled_")
	u.Host = droppingStartupParameters(t, u.Host)
	cfg := store.Config{URL: u.String(), Schema: schema, MaxConns: 2, StartupWait: time.Second,
		StatementTimeout: 5 * time.Second, LockTimeout: 2 * time.Second, IdleInTxTimeout: 30 * time.Second}

	_, err := store.OpenAndMigrate(t.Context(), cfg, migrations, nil)
	if err == nil || !strings.Contains(err.Error(), "statement_timeout") || !strings.Contains(err.Error(), "ALTER ROLE") {
		t.Fatalf("started though its sessions lack their settings (err %v)", err)
	}
	for _, stmt := range []string{
		"ALTER ROLE " + role + " SET search_path = " + schema,
		"ALTER ROLE " + role + " SET statement_timeout = '5s'",
		"ALTER ROLE " + role + " SET lock_timeout = '2s'",
		"ALTER ROLE " + role + " SET idle_in_transaction_session_timeout = '30s'",
		"ALTER ROLE " + role + " SET jit = off",
	} {
		if _, err := conn.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := store.OpenAndMigrate(t.Context(), cfg, migrations, nil)
	if err != nil {
		t.Fatalf("with the settings on the role: %v", err)
	}
	pool.Close()
}

// droppingStartupParameters is a proxy to the PostgreSQL server at addr
// that passes on only the user and database of a connection's startup
// message, as PgBouncer does with the parameters it ignores; it returns
// its own address.
func droppingStartupParameters(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer client.Close()
				backend := pgproto3.NewBackend(client, client)
				msg, err := backend.ReceiveStartupMessage()
				if _, ssl := msg.(*pgproto3.SSLRequest); ssl && err == nil {
					if _, err := client.Write([]byte{'N'}); err != nil {
						return
					}
					msg, err = backend.ReceiveStartupMessage()
				}
				startup, ok := msg.(*pgproto3.StartupMessage)
				if err != nil || !ok {
					return
				}
				server, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer server.Close()
				kept := &pgproto3.StartupMessage{ProtocolVersion: startup.ProtocolVersion, Parameters: map[string]string{
					"user": startup.Parameters["user"], "database": startup.Parameters["database"]}}
				raw, err := kept.Encode(nil)
				if err != nil {
					return
				}
				if _, err := server.Write(raw); err != nil {
					return
				}
				done := make(chan error, 2)
				go func() { _, err := io.Copy(server, client); done <- err }()
				go func() { _, err := io.Copy(client, server); done <- err }()
				if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) {
					return
				}
			}()
		}
	}()
	return l.Addr().String()
}
