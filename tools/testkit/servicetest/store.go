package servicetest

import (
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-kit/log"

	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

// Store is the fixture of store tests: spec's migrations applied to a
// fresh schema of the test PostgreSQL, without a find cache.
func Store(t testing.TB, spec servicekit.Spec) *store.Store {
	t.Helper()
	st, _ := StoreWithFinds(t, spec, "")
	return st
}

// StoreWithFinds is the fixture of service tests: spec's migrations applied
// to a fresh schema of the test PostgreSQL and, when redisURL is not empty,
// a find cache in a key space of its own that the store's writes make
// stale, as production wires them. The pool closes when the test ends.
func StoreWithFinds(t testing.TB, spec servicekit.Spec, redisURL string) (*store.Store, *cache.Finds) {
	t.Helper()
	cfg := store.Config{URL: testkit.PostgresURL(t), Schema: testkit.NewDatabaseSchema(t), MaxConns: 20, StartupWait: time.Second}
	pool, err := store.OpenAndMigrateSets(t.Context(), cfg, nil, store.Migrations(spec.Migrations)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	cacheCfg := cache.Config{Connection: cache.Connection{URL: redisURL}, TTL: time.Minute, Timeout: 200 * time.Millisecond, Backoff: time.Second}
	client, err := cache.Connect(cacheCfg)
	if err != nil {
		t.Fatal(err)
	}
	namespace := spec.Name
	if client != nil {
		t.Cleanup(func() { _ = client.Close() })
		namespace = testkit.RedisPrefix(t) + spec.Name
	}
	finds := cache.NewFinds(client, namespace, cacheCfg, log.NewNopLogger())
	return store.New(pool, finds), finds
}

// Caller is the machine client sub as a service method takes its caller
// (endpoints.CallerOf makes it from the verified token); Guard is a write
// of sub's under no rule of a route (no If-Match, no owner rule).
func Caller(sub string) model.Caller { return model.Caller{Subject: sub} }

// Guard is what a write of sub's obeys when its route declares no rule.
func Guard(sub string) model.Guard { return model.Guard{Caller: Caller(sub)} }

// MigrateAcross tests spec's migration version on a filled schema: it
// migrates a fresh schema of the test PostgreSQL up to the migration
// before version, lets fill write what an earlier release left there,
// then migrates it the rest of the way and returns the pool, which closes
// when the test ends.
func MigrateAcross(t testing.TB, spec servicekit.Spec, version string, fill func(old *store.Pool)) *store.Pool {
	t.Helper()
	cfg := store.Config{URL: testkit.PostgresURL(t), Schema: testkit.NewDatabaseSchema(t), MaxConns: 4, StartupWait: time.Second}
	old, err := store.OpenAndMigrate(t.Context(), cfg, MigrationsBefore(t, spec, version), nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(old)
	old.Close()
	pool, err := store.OpenAndMigrate(t.Context(), cfg, spec.Migrations, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// MigrationsBefore are spec's migrations whose names sort before version
// ("005" keeps 001 to 004): a schema as an earlier release left it, for a
// test that fills it and then migrates it the rest of the way.
func MigrationsBefore(t testing.TB, spec servicekit.Spec, version string) fstest.MapFS {
	t.Helper()
	entries, err := fs.ReadDir(spec.Migrations, ".")
	if err != nil {
		t.Fatal(err)
	}
	before := fstest.MapFS{}
	for _, e := range entries {
		if e.Name() < version {
			raw, err := fs.ReadFile(spec.Migrations, e.Name())
			if err != nil {
				t.Fatal(err)
			}
			before[e.Name()] = &fstest.MapFile{Data: raw}
		}
	}
	return before
}
