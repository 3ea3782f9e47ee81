package store_test

import (
	"maps"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/assetregistry/registry/pkg/store"
)

// indexValid says whether the schema has the index and whether it is
// valid (a CONCURRENTLY build that failed leaves it invalid).
func indexValid(t *testing.T, pool *store.Pool, name string) (exists, valid bool) {
	t.Helper()
	err := pool.QueryRow(t.Context(), `SELECT true, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, name).Scan(&exists, &valid)
	if err != nil && err.Error() != "no rows in result set" {
		t.Fatal(err)
	}
	return exists, valid
}

// The migrator's bookkeeping before any migration (the locks, the schema,
// tern's version table) is not bounded by the requests' statement timeout
// either: here tern's read of the version waits 300 ms for a lock another
// session holds on its table, six times a 50 ms timeout, and the run goes
// on once the lock is let go.
func TestMigratorBookkeepingOutlivesTheStatementTimeout(t *testing.T) {
	t.Parallel()
	cfg := openAlone(t)
	first := migrated(t, cfg, migrations)
	holder, err := first.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(t.Context()) //nolint:errcheck // rolled back below on success
	if _, err := holder.Exec(t.Context(), "LOCK TABLE schema_version IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = holder.Rollback(t.Context())
	}()
	cfg.StatementTimeout = 50 * time.Millisecond
	migrated(t, cfg, migrations)
}

// A migration marked to run outside a transaction builds its index
// CONCURRENTLY (writes go on meanwhile), and no migration is cut short by
// the statement timeout that bounds requests: the deploy bounds it.
func TestMigrationBuildsAnIndexConcurrently(t *testing.T) {
	t.Parallel()
	cfg := openAlone(t)
	cfg.StatementTimeout = 500 * time.Millisecond
	files := fstest.MapFS{
		"001_items.sql": {Data: []byte(`CREATE TABLE items (id bigint PRIMARY KEY, kind text NOT NULL);
INSERT INTO items SELECT n, 'kind-' || (n % 7) FROM generate_series(1, 10000) n;`)},
		"002_slow.sql": {Data: []byte(`SELECT pg_sleep(1);`)},
		"003_items_kind.sql": {Data: []byte(`---- tern: disable-tx ----
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_kind ON items (kind, id);
SELECT pg_sleep(1);
---- create above / drop below ----
DROP INDEX items_kind;`)},
	}
	pool := migrated(t, cfg, files)
	if exists, valid := indexValid(t, pool, "items_kind"); !exists || !valid {
		t.Fatalf("items_kind: exists %v, valid %v; want a valid index", exists, valid)
	}
	var timeout string
	if err := pool.QueryRow(t.Context(), `SHOW statement_timeout`).Scan(&timeout); err != nil || timeout != "500ms" {
		t.Errorf("statement_timeout after the migrations = %q (%v), want the pool's 500ms again", timeout, err)
	}
}

// A CONCURRENTLY build that fails leaves an invalid index behind; the
// migration is not recorded, and the next start drops the leftover and
// builds the index again, rather than take the broken one for built.
func TestFailedConcurrentBuildIsBuiltAgain(t *testing.T) {
	t.Parallel()
	cfg := openAlone(t)
	files := fstest.MapFS{
		"001_items.sql": {Data: []byte(`CREATE TABLE items (id bigint PRIMARY KEY, name text);
INSERT INTO items VALUES (1, 'twice'), (2, 'twice'), (3, 'once');`)},
		"002_items_name.sql": {Data: []byte(`---- tern: disable-tx ----
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS items_name ON items (name);
---- create above / drop below ----
DROP INDEX items_name;`)},
	}
	if _, err := store.OpenAndMigrate(t.Context(), cfg, files, nil); err == nil {
		t.Fatal("the unique index was built over a duplicate")
	}
	first := maps.Clone(files)
	delete(first, "002_items_name.sql")
	pool := migrated(t, cfg, first)
	if exists, valid := indexValid(t, pool, "items_name"); !exists || valid {
		t.Fatalf("after the failed build: exists %v, valid %v; want the invalid leftover", exists, valid)
	}
	if _, err := pool.Exec(t.Context(), `DELETE FROM items WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	again := migrated(t, cfg, files)
	if exists, valid := indexValid(t, again, "items_name"); !exists || !valid {
		t.Fatalf("after the second start: exists %v, valid %v; want a valid index", exists, valid)
	}
	if _, err := again.Exec(t.Context(), `INSERT INTO items VALUES (4, 'once')`); err == nil {
		t.Error("a duplicate name was stored: the index does not hold")
	}
}

// Two schemas migrating at once, one of them building an index
// CONCURRENTLY: the other waits for its turn without holding a snapshot
// the build would wait for, so neither waits on the other (which the
// deadlock detector would end by failing one), and neither is retried.
func TestConcurrentBuildBesideAnotherSchemasMigration(t *testing.T) {
	t.Parallel()
	building, waiting := openAlone(t), open(t)
	waiting.URL = building.URL
	buildingFiles := fstest.MapFS{
		"001_items.sql": {Data: []byte(`CREATE TABLE items (id bigint PRIMARY KEY, kind text NOT NULL);`)},
		"002_slow.sql":  {Data: []byte(`SELECT pg_sleep(2);`)},
		"003_items_kind.sql": {Data: []byte(`---- tern: disable-tx ----
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_kind ON items (kind, id);
---- create above / drop below ----
DROP INDEX items_kind;`)},
	}
	waitingFiles := fstest.MapFS{"001_other.sql": {Data: []byte(`CREATE TABLE other (id bigint PRIMARY KEY);`)}}
	var (
		mu      sync.Mutex
		retried []error
	)
	onRetry := func(err error) { mu.Lock(); retried = append(retried, err); mu.Unlock() }
	runs := []struct {
		cfg   store.Config
		files fstest.MapFS
	}{{building, buildingFiles}, {waiting, waitingFiles}}
	migrateTogether(t, len(runs), func(i int) (*store.Pool, error) {
		if i == 1 {
			time.Sleep(time.Second) // while the first is in its slow migration
		}
		return store.OpenAndMigrateSets(t.Context(), runs[i].cfg, onRetry, store.Migrations(runs[i].files)...)
	})
	if len(retried) > 0 {
		t.Errorf("migrations were retried: %v", retried)
	}
}
