package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

var migrations = fstest.MapFS{
	"001_items.sql": {Data: []byte(`CREATE TABLE items (id uuid PRIMARY KEY, kind text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
---- create above / drop below ----
DROP TABLE items;`)},
	"002_items_name.sql": {Data: []byte(`ALTER TABLE items ADD COLUMN name text UNIQUE;`)},
}

type item struct {
	ID        uuid.UUID `db:"id"`
	Kind      string    `db:"kind"`
	Name      *string   `db:"name"`
	CreatedAt time.Time `db:"created_at"`
}

func open(t *testing.T) store.Config {
	return store.Config{URL: testkit.PostgresURL(t), Schema: testkit.NewDatabaseSchema(t), MaxConns: 4, StartupWait: time.Second}
}

// openAlone is open's config in a database of the test's own, for a test
// whose migrations hold tern's lock for seconds (slow steps, several
// migrators at once): the lock is the database's, and in the shared one
// every test running beside it would wait that long for its own migration.
func openAlone(t *testing.T) store.Config {
	cfg := open(t)
	cfg.URL = testkit.NewDatabase(t)
	return cfg
}

// migrated opens cfg's pool and migrates its schema with files, failing
// the test if either fails; the pool closes when the test ends.
func migrated(t *testing.T, cfg store.Config, files fs.FS) *store.Pool {
	t.Helper()
	pool, err := store.OpenAndMigrate(t.Context(), cfg, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// migrateTogether opens (and so migrates) n pools at once, as replicas
// starting together do, migrate(i) the i-th; it closes each and fails the
// test with what any of them returned.
func migrateTogether(t *testing.T, n int, migrate func(i int) (*store.Pool, error)) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			pool, err := migrate(i)
			if err == nil {
				pool.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentMigratorsAgree(t *testing.T) {
	t.Parallel()
	cfg := openAlone(t)
	migrateTogether(t, 4, func(int) (*store.Pool, error) {
		return store.OpenAndMigrate(t.Context(), cfg, migrations, nil)
	})
	pool := migrated(t, cfg, migrations)
	var version int
	if err := pool.QueryRow(t.Context(), "SELECT version FROM schema_version").Scan(&version); err != nil || version != 2 {
		t.Fatalf("version = %d, %v", version, err)
	}
}

func TestListFilterAndPages(t *testing.T) {
	t.Parallel()
	pool := migrated(t, open(t), migrations)
	var ids []uuid.UUID
	for i := range 5 {
		id := uuid.Must(uuid.NewV7())
		ids = append(ids, id)
		kind := []string{"a", "b"}[i%2]
		if _, err := pool.Exec(t.Context(), "INSERT INTO items (id, kind) VALUES ($1, $2)", id, kind); err != nil {
			t.Fatal(err)
		}
	}
	kind := "a"
	var f store.Filter
	store.Equal(&f, "kind", &kind)
	store.Equal[string](&f, "name", nil) // absent filters add nothing
	idOf := func(i item) uuid.UUID { return i.ID }
	page1, err := store.List(t.Context(), pool, "list", "SELECT id, kind, name, created_at FROM items", f, model.Page{Limit: 2}, idOf)
	if err != nil {
		t.Fatal(err)
	}
	if len(page1.Items) != 2 || page1.Items[0].ID != ids[0] || page1.Items[1].ID != ids[2] || page1.Next != ids[2] {
		t.Fatalf("page 1 = %+v", page1)
	}
	if page1.Items[0].CreatedAt.Location() != time.UTC {
		t.Errorf("timestamps must come back in UTC, got %v", page1.Items[0].CreatedAt.Location())
	}
	page2, err := store.List(t.Context(), pool, "list", "SELECT id, kind, name, created_at FROM items", f, model.Page{Limit: 2, After: page1.Next}, idOf)
	if err != nil {
		t.Fatal(err)
	}
	if len(page2.Items) != 1 || page2.Items[0].ID != ids[4] || page2.Next != uuid.Nil {
		t.Fatalf("page 2 = %+v", page2)
	}
	_, err = store.One[item](t.Context(), pool, "get", "item", ids[0], "SELECT id, kind, name, created_at FROM items WHERE id = $1", uuid.New())
	if !apperr.Is(err, apperr.KindNotFound) {
		t.Fatalf("missing row: err = %v", err)
	}
}

// A page stops before the row that would take it past MaxPageBytes, its
// Next continuing right after its last row, and holds its first row
// however large: following Next reads every row once, in order.
func TestListStopsBeforeMaxPageBytes(t *testing.T) {
	t.Parallel()
	pool := migrated(t, open(t), migrations)
	const mib = 1 << 20
	sizes := []int{mib, mib, mib, mib, mib, 5 * mib, mib} // the sixth alone is over the bound
	var ids []uuid.UUID
	for i, n := range sizes {
		id := uuid.Must(uuid.NewV7())
		ids = append(ids, id)
		if _, err := pool.Exec(t.Context(), "INSERT INTO items (id, kind) VALUES ($1, $2)", id, strings.Repeat(string(rune('a'+i)), n)); err != nil {
			t.Fatal(err)
		}
	}
	idOf := func(i item) uuid.UUID { return i.ID }
	// Each row is its kind plus 24 bytes (id and created_at): three of a
	// MiB fit in 4 MiB, a fourth does not.
	want := [][]uuid.UUID{ids[0:3], ids[3:5], ids[5:6], ids[6:7]}
	page := model.Page{Limit: model.MaxLimit}
	for i, w := range want {
		got, err := store.List(t.Context(), pool, "list", "SELECT id, kind, name, created_at FROM items", store.Filter{}, page, idOf)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []uuid.UUID
		for _, it := range got.Items {
			gotIDs = append(gotIDs, it.ID)
		}
		last := i == len(want)-1
		if fmt.Sprint(gotIDs) != fmt.Sprint(w) || (got.Next == uuid.Nil) != last || (!last && got.Next != w[len(w)-1]) {
			t.Fatalf("page %d: %v with next %v; want %v", i+1, gotIDs, got.Next, w)
		}
		page.After = got.Next
	}
}

func TestUniqueViolationIsNamed(t *testing.T) {
	t.Parallel()
	pool := migrated(t, open(t), migrations)
	insert := func() error {
		_, err := pool.Exec(t.Context(), "INSERT INTO items (id, kind, name) VALUES ($1, 'a', 'same')", uuid.New())
		return err
	}
	if err := insert(); err != nil {
		t.Fatal(err)
	}
	name, ok := store.Constraint(insert(), store.UniqueViolation)
	if !ok || name != "items_name_key" {
		t.Fatalf("constraint = %q, %v", name, ok)
	}
}

func TestDatabaseDownIsUnavailable(t *testing.T) {
	t.Parallel()
	cfg := store.Config{URL: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=1", Schema: "x", StartupWait: 0}
	pool, err := store.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := store.Ping(pool)(t.Context()); !apperr.Is(err, apperr.KindUnavailable) {
		t.Fatalf("ping err = %v, want unavailable", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if _, err := store.OpenAndMigrate(ctx, cfg, migrations, nil); !apperr.Is(err, apperr.KindUnavailable) {
		t.Fatalf("migrate err = %v, want unavailable", err)
	}
}

func TestStatementTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	cfg := open(t)
	cfg.StatementTimeout = 50 * time.Millisecond
	pool := migrated(t, cfg, migrations)
	_, err := pool.Exec(t.Context(), "SELECT pg_sleep(1)")
	if err := store.Classify(err, "sleep"); !apperr.Is(err, apperr.KindUnavailable) {
		t.Fatalf("err = %v, want unavailable", err)
	}
}

// A connection lost in the middle of a query (the server killed, a proxy
// cut it) is "unavailable", a 503, not a 500.
func TestLostConnectionIsUnavailable(t *testing.T) {
	t.Parallel()
	target := strings.TrimPrefix(strings.Split(testkit.PostgresURL(t), "@")[1], "")
	target = strings.Split(target, "/")[0]
	proxy := newCuttingProxy(t, target)
	cfg := open(t)
	cfg.URL = strings.Replace(testkit.PostgresURL(t), target, proxy.addr, 1)
	pool := migrated(t, cfg, migrations)
	go func() {
		time.Sleep(200 * time.Millisecond)
		proxy.cut()
	}()
	_, err := pool.Exec(t.Context(), "SELECT pg_sleep(5)")
	if err == nil {
		t.Fatal("the query survived its connection")
	}
	if err := store.Classify(err, "sleep"); !apperr.Is(err, apperr.KindUnavailable) {
		t.Fatalf("err = %v, want unavailable", err)
	}
}

// cuttingProxy forwards TCP to target until cut, which closes every
// connection it carries. It counts round trips: the times a client sends
// after the server has answered it.
type cuttingProxy struct {
	addr       string
	mu         sync.Mutex
	conns      []net.Conn
	roundTrips atomic.Int64
}

// turns reads what a client sends, counting a round trip each time it
// sends after an answer.
type turns struct {
	r        io.Reader
	answered *atomic.Bool
	count    *atomic.Int64
}

func (t turns) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	if n > 0 && t.answered.Swap(false) {
		t.count.Add(1)
	}
	return n, err
}

// answers reads what the server sends back.
type answers struct {
	r        io.Reader
	answered *atomic.Bool
}

func (a answers) Read(b []byte) (int, error) {
	n, err := a.r.Read(b)
	if n > 0 {
		a.answered.Store(true)
	}
	return n, err
}

func newCuttingProxy(t *testing.T, target string) *cuttingProxy {
	t.Helper()
	p := &cuttingProxy{}
	p.addr = testkit.Proxy(t, target, func(client, server net.Conn) {
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		var answered atomic.Bool
		answered.Store(true)
		go func() { _, _ = io.Copy(server, turns{client, &answered, &p.roundTrips}); server.Close() }()
		go func() { _, _ = io.Copy(client, answers{server, &answered}); client.Close() }()
	})
	t.Cleanup(p.cut)
	return p
}

func (p *cuttingProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// An index built CONCURRENTLY waits for every older transaction in the
// database, on any table, to end; a bulk load elsewhere that outlasts the
// pool's lock timeout must not cancel the migration. The test holds such a
// transaction in a database of its own: in the shared one, another
// package's index build waited for it while holding the migrations' lock
// this test's build waited for, until the test timed out.
func TestConcurrentIndexWaitsOutAnOlderTransaction(t *testing.T) {
	t.Parallel()
	cfg := open(t)
	cfg.URL = testkit.NewDatabase(t)
	cfg.LockTimeout = 100 * time.Millisecond
	pool := migrated(t, cfg, migrations)
	elsewhere, err := pgx.Connect(t.Context(), cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer elsewhere.Close(context.WithoutCancel(t.Context()))
	holder, err := elsewhere.BeginTx(t.Context(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(t.Context(), "SELECT 1"); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	withIndex := fstest.MapFS{"003_items_kind.sql": {Data: []byte(`---- tern: disable-tx ----
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_kind ON items (kind);`)}}
	maps.Copy(withIndex, migrations)
	migrated := make(chan error, 1)
	go func() {
		again, err := store.OpenAndMigrate(t.Context(), cfg, withIndex, nil)
		if err == nil {
			again.Close()
		}
		migrated <- err
	}()
	// The build is waiting for the holder: then the lock timeout would
	// have cancelled it.
	for waiting := false; !waiting; {
		select {
		case err := <-migrated:
			t.Fatalf("the migration ended while an older transaction was open: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if err := pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND query LIKE '%CREATE INDEX CONCURRENTLY%items_kind%' AND wait_event = 'virtualxid')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			time.Sleep(3 * cfg.LockTimeout)
		}
	}
	if err := holder.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-migrated; err != nil {
		t.Fatal(err)
	}
	var valid bool
	if err := pool.QueryRow(t.Context(), `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = 'items_kind' AND c.relnamespace = $1::regnamespace`, cfg.Schema).Scan(&valid); err != nil || !valid {
		t.Fatalf("items_kind valid = %v, %v", valid, err)
	}
}

// A row locked longer than the lock timeout is "unavailable" (busy).
func TestLockTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	cfg := open(t)
	cfg.LockTimeout = 100 * time.Millisecond
	pool := migrated(t, cfg, migrations)
	id := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(t.Context(), "INSERT INTO items (id, kind) VALUES ($1, 'a')", id); err != nil {
		t.Fatal(err)
	}
	holder, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(t.Context())
	if _, err := holder.Exec(t.Context(), "SELECT 1 FROM items WHERE id = $1 FOR UPDATE", id); err != nil {
		t.Fatal(err)
	}
	err = store.InTx(t.Context(), pool, "update", func(tx pgx.Tx) error {
		_, err := tx.Exec(t.Context(), "UPDATE items SET kind = 'b' WHERE id = $1", id)
		return store.Classify(err, "update")
	})
	if !apperr.Is(err, apperr.KindUnavailable) {
		t.Fatalf("err = %v, want unavailable", err)
	}
}

// Writes queued behind a lock never take every connection: a read still
// gets one at once, and a request that finds no connection free within
// the acquire timeout is "unavailable" rather than waiting out its own
// deadline.
func TestWritesLeaveConnectionsForReads(t *testing.T) {
	t.Parallel()
	cfg := open(t)
	// Long enough for a new connection on a busy machine (the read below
	// dials the pool's last one): the refusals checked here are about a
	// full pool, not a slow one.
	cfg.MaxConns, cfg.AcquireTimeout = 4, 2*time.Second
	pool := migrated(t, cfg, migrations)
	var writes []pgx.Tx
	// Runs before pool.Close, also after a failed check: Close waits for
	// every connection to come back, so an open transaction would hang
	// the test instead of failing it.
	defer func() {
		for _, tx := range writes {
			_ = tx.Rollback(context.Background())
		}
	}()
	for range 3 { // all the write slots of a pool of 4
		tx, err := pool.BeginWrite(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		writes = append(writes, tx)
	}
	if _, err := pool.BeginWrite(t.Context()); !apperr.Is(err, apperr.KindUnavailable) {
		t.Fatalf("a fourth write: %v, want unavailable", err)
	}
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM items").Scan(&n); err != nil {
		t.Fatalf("a read while writes hold their slots: %v", err)
	}
	reader, err := pool.Begin(t.Context()) // the last connection
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(context.Background()) //nolint:errcheck // a no-op once rolled back
	if err := pool.QueryRow(t.Context(), "SELECT 1").Scan(&n); !apperr.Is(store.Classify(err, "read"), apperr.KindUnavailable) {
		t.Fatalf("no connection free: %v, want unavailable", err)
	}
	// A write refused so never happened; one the server refused did reach it.
	if _, err := pool.Exec(t.Context(), "INSERT INTO items (id, kind) VALUES (gen_random_uuid(), 'x')"); err == nil || !store.NeverSent(err) {
		t.Errorf("a write with no connection free: %v, want one never sent", err)
	}
	if _, err := reader.Exec(t.Context(), "SELECT 1/0"); err == nil || store.NeverSent(err) {
		t.Errorf("a statement the server refused: %v, want one that was sent", err)
	}
	_ = reader.Rollback(t.Context())
	for _, tx := range writes {
		_ = tx.Rollback(t.Context())
	}
	tx, err := pool.BeginWrite(t.Context())
	if err != nil {
		t.Fatalf("after the writes ended: %v", err)
	}
	_ = tx.Rollback(t.Context())
}

// A role that owns its schema but may not create schemas (what a service
// gets under make run and in production) migrates and works in it.
func TestMigratesAsTheSchemaOwnerWithoutCreateOnTheDatabase(t *testing.T) {
	t.Parallel()
	conn, role, schema, u := schemaOwner(t, "t_role_")
	var mayCreate bool
	if err := conn.QueryRow(t.Context(), "SELECT has_database_privilege($1, current_database(), 'CREATE')", role).Scan(&mayCreate); err != nil || mayCreate {
		t.Fatalf("the role may create schemas (%v); the test would prove nothing", err)
	}

	pool, err := store.OpenAndMigrate(t.Context(), store.Config{URL: u.String(), Schema: schema, MaxConns: 2, StartupWait: time.Second}, migrations, nil)
	if err != nil {
		t.Fatalf("migrating as the schema's owner: %v", err)
	}
	defer pool.Close()
	if _, err := pool.Exec(t.Context(), "INSERT INTO items (id, kind) VALUES ($1, 'x')", uuid.New()); err != nil {
		t.Fatal(err)
	}
}

// schemaOwner makes a login role (its name begins with prefix) and a new
// schema it owns, dropped when the test ends. It returns a connection as
// the administrator, for what a test grants or sets besides, the role,
// the schema, and the database's address with the role's credentials.
func schemaOwner(t *testing.T, prefix string) (admin *pgx.Conn, role, schema string, u *url.URL) {
	t.Helper()
	adminURL := testkit.PostgresURL(t)
	admin, err := pgx.Connect(t.Context(), adminURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	role, password := prefix+strings.ReplaceAll(uuid.NewString()[:8], "-", ""), uuid.NewString()
	if _, err := admin.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the schema's own cleanup, registered below
		ctx := context.Background()
		c, err := pgx.Connect(ctx, adminURL)
		if err == nil {
			defer c.Close(ctx)
			_, err = c.Exec(ctx, "DROP ROLE "+role)
		}
		if err != nil {
			t.Errorf("drop role: %v", err)
		}
	})
	schema = testkit.NewDatabaseSchema(t)
	if _, err := admin.Exec(t.Context(), "CREATE SCHEMA "+schema+" AUTHORIZATION "+role); err != nil {
		t.Fatal(err)
	}
	if u, err = url.Parse(adminURL); err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	return admin, role, schema, u
}

func TestWriteSlots(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxConns, maxWrites, cpus int
		want                      int64
	}{
		{maxConns: 20, cpus: 2, want: 5},                 // the default: 2 × CPUs + 1
		{maxConns: 20, cpus: 8, want: 15},                // never past max-conns less a quarter
		{maxConns: 20, maxWrites: 9, cpus: 2, want: 9},   // set: as set
		{maxConns: 20, maxWrites: 40, cpus: 2, want: 15}, // set too high: reads keep their quarter
		{maxConns: 4, cpus: 2, want: 3},
		{maxConns: 2, cpus: 2, want: 1},
		{maxConns: 1, cpus: 2, want: 1},
	} {
		if got := store.WriteSlots(tc.maxConns, tc.maxWrites, tc.cpus); got != tc.want {
			t.Errorf("WriteSlots(%d, %d, %d) = %d, want %d", tc.maxConns, tc.maxWrites, tc.cpus, got, tc.want)
		}
	}
}

func TestClassifyUnavailableAndInternal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"statement timeout", &pgconn.PgError{Code: "57014"}, true},
		{"lock timeout", &pgconn.PgError{Code: "55P03"}, true},
		{"connection exception", &pgconn.PgError{Code: "08006"}, true},
		{"a deadlock's victim", &pgconn.PgError{Code: "40P01"}, true},
		{"a serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"no partition for the row", &pgconn.PgError{Code: "23514", Message: `no partition of relation "actions" found for row`}, true},
		{"a CHECK constraint", &pgconn.PgError{Code: "23514", Message: `new row for relation "actions" violates check constraint "x"`}, false},
		{"a unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"a syntax error", &pgconn.PgError{Code: "42601"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := store.Classify(c.err, "write")
			if got := apperr.Is(err, apperr.KindUnavailable); got != c.unavailable {
				t.Errorf("Classify(%v) unavailable = %v, want %v", c.err, got, c.unavailable)
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				t.Errorf("Classify(%v) = %v: the database's error is lost", c.err, err)
			}
		})
	}
}
