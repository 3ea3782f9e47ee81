package testkit

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Set only in child processes that the tests below run from this binary.
const (
	childExpectURLEnv = "TESTHARNESS_CHILD_EXPECT_URL"
	childBlockEnv     = "TESTHARNESS_CHILD_BLOCK"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func pool(t *testing.T, schema string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func schemaExists(t *testing.T, schema string) bool {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var exists bool
	err = conn.QueryRow(context.Background(),
		"SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists)
	if err != nil {
		t.Fatal(err)
	}
	return exists
}

func TestDatabaseSchemaIsolatesAndIsDropped(t *testing.T) {
	schemas := make(chan string, 4)
	t.Run("group", func(t *testing.T) {
		for i := range cap(schemas) {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				schema := NewDatabaseSchema(t)
				schemas <- schema
				db := pool(t, schema)
				// Every test uses the same table name; schemas keep them apart.
				_, err := db.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()+"; CREATE TABLE items (n int)")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(ctx, "INSERT INTO items VALUES ($1)", i); err != nil {
					t.Fatal(err)
				}
				var rows, n int
				if err := db.QueryRow(ctx, "SELECT count(*), max(n) FROM items").Scan(&rows, &n); err != nil {
					t.Fatal(err)
				}
				if rows != 1 || n != i {
					t.Errorf("items holds %d rows, max %d; want only this test's row %d", rows, n, i)
				}
			})
		}
	})
	close(schemas)
	seen := map[string]bool{}
	for s := range schemas {
		if seen[s] {
			t.Errorf("schema %s handed out twice", s)
		}
		seen[s] = true
		if schemaExists(t, s) {
			t.Errorf("schema %s still exists after its test ended", s)
		}
	}
}

func TestRedisPrefixIsolatesAndIsCleaned(t *testing.T) {
	ctx := context.Background()
	opts, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()

	outside := RedisPrefix(t) + "outside"
	if err := c.Set(ctx, outside, "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var prefix string
	t.Run("inner", func(t *testing.T) {
		prefix = RedisPrefix(t)
		if prefix == "" || strings.HasPrefix(outside, prefix) {
			t.Fatalf("prefix %q is not unique", prefix)
		}
		// More keys than one SCAN batch, to check cleanup pages through them.
		pipe := c.Pipeline()
		for i := range 2500 {
			pipe.Set(ctx, fmt.Sprintf("%skey:%d", prefix, i), i, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	})
	left, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d keys with prefix %q left after the test ended", len(left), prefix)
	}
	if err := c.Get(ctx, outside).Err(); err != nil {
		t.Errorf("key of another prefix was deleted: %v", err)
	}
}

// TestUsesProvidedURL runs this binary with TEST_DATABASE_URL pointing at our
// server, as `make test` does, and checks that the child uses it rather than
// starting its own.
func TestUsesProvidedURL(t *testing.T) {
	if want := os.Getenv(childExpectURLEnv); want != "" {
		if got := PostgresURL(t); got != want {
			t.Fatalf("PostgresURL() = %q, want %q from %s", got, want, databaseURLEnv)
		}
		if h.pg != nil {
			t.Fatal("started a private server although one was provided")
		}
		db := pool(t, NewDatabaseSchema(t))
		if _, err := db.Exec(context.Background(), "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		return
	}
	url := PostgresURL(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestUsesProvidedURL$", "-test.v")
	cmd.Env = append(os.Environ(), databaseURLEnv+"="+url, childExpectURLEnv+"="+url)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestSignalStopsServers sends SIGTERM to a child that started private
// PostgreSQL and MinIO servers and checks that the servers and their data dir
// are gone afterwards.
func TestSignalStopsServers(t *testing.T) {
	if os.Getenv(childBlockEnv) != "" {
		PostgresURL(t)
		S3(t)
		fmt.Printf("READY %d %d %s\n", h.pg.Port, h.minio.Port, h.dir)
		time.Sleep(time.Minute)
		t.Fatal("not stopped by the signal")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalStopsServers$", "-test.v")
	env := []string{childBlockEnv + "=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, databaseURLEnv+"=") && !strings.HasPrefix(kv, s3EndpointEnv+"=") {
			env = append(env, kv) // the child must start its own servers
		}
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var port, minioPort int
	var dir string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if _, err := fmt.Sscanf(lines.Text(), "READY %d %d %s", &port, &minioPort, &dir); err == nil {
			break
		}
	}
	if dir == "" {
		t.Fatal("child never reported its server")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || status.Signal() != syscall.SIGTERM {
		t.Errorf("child ended with %v, want death by SIGTERM", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("server dir %s not removed: %v", dir, err)
	}
	for name, port := range map[string]int{"postgres": port, "minio": minioPort} {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("%s port %d still taken: %v", name, port, err)
		}
		l.Close()
	}
}

// The test servers let nobody in without a password, whether this binary
// started them or make test's testinfra did.
func TestServersNeedPasswords(t *testing.T) {
	strip := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := u.User.Password(); !ok {
			t.Errorf("%s carries no password", u.Redacted())
		}
		u.User = url.User(u.User.Username())
		return u.String()
	}
	ctx := t.Context()
	if conn, err := pgx.Connect(ctx, strip(PostgresURL(t))); err == nil {
		conn.Close(ctx)
		t.Error("PostgreSQL let a client in without a password")
	} else if !strings.Contains(err.Error(), "28P01") {
		t.Errorf("PostgreSQL without a password: %v, want password authentication failed", err)
	}
	opts, err := redis.ParseURL(strip(RedisURL(t)))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("Redis without a password: %v, want NOAUTH", err)
	}
}

// A database of a test's own keeps what PostgreSQL waits for across a
// database apart: an index built CONCURRENTLY in it does not wait for a
// transaction held open in the shared one. The database is gone after.
func TestDatabaseOfItsOwnIsApartAndIsDropped(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("own", func(t *testing.T) {
		own := NewDatabase(t)
		u, err := url.Parse(own)
		if err != nil {
			t.Fatal(err)
		}
		name = strings.TrimPrefix(u.Path, "/")
		shared, err := pgx.Connect(ctx, PostgresURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer shared.Close(ctx)
		holder, err := shared.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Rollback(ctx)                              //nolint:errcheck // read only
		if _, err := holder.Exec(ctx, "SELECT 1"); err != nil { // takes the snapshot
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, own)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var database string
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&database); err != nil || database != name {
			t.Fatalf("connected to %q (%v), want %q", database, err, name)
		}
		build, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if _, err := conn.Exec(build, "CREATE TABLE items (n int)"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(build, "CREATE INDEX CONCURRENTLY items_n ON items (n)"); err != nil {
			t.Fatalf("the index build in a database of its own waited for the shared one's transaction: %v", err)
		}
	})
	conn, err := pgx.Connect(ctx, PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s outlived its test", name)
	}
}
