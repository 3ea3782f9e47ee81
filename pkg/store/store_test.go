package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-kit/log"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

var thingMigrations = fstest.MapFS{"001_things.sql": {Data: []byte(`
CREATE TABLE things (id uuid PRIMARY KEY, name text NOT NULL UNIQUE, size int NOT NULL DEFAULT 0,
	updated_by text NOT NULL DEFAULT '');`)}}

type thing struct {
	ID        uuid.UUID `db:"id"`
	Name      string    `db:"name"`
	Size      int       `db:"size"`
	UpdatedBy string    `db:"updated_by"`
}

func newStore(t *testing.T) (*store.Store, *cache.Finds) {
	t.Helper()
	pool, err := store.OpenAndMigrate(t.Context(), store.Config{URL: testkit.PostgresURL(t),
		Schema: testkit.NewDatabaseSchema(t), MaxConns: 10, StartupWait: time.Second}, thingMigrations, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	cfg := cache.Config{Connection: cache.Connection{URL: testkit.RedisURL(t)}, TTL: time.Minute, Timeout: time.Second, Backoff: time.Second}
	client, err := cache.Connect(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	finds := cache.NewFinds(client, testkit.RedisPrefix(t)+"things", cfg, log.NewNopLogger())
	return store.New(pool, finds), finds
}

func insert(ctx context.Context, s *store.Store, name string) (uuid.UUID, error) {
	id := store.NewID()
	err := s.Write(ctx, "insert thing", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		_, err := tx.Exec(ctx, "INSERT INTO things (id, name) VALUES ($1, $2)", id, name)
		return []string{"things"}, store.Classify(err, "insert thing")
	})
	return id, err
}

// cached reports whether a find cached under scope "things" is still
// served, i.e. no committed write invalidated it.
func cached(t *testing.T, finds *cache.Finds) func() bool {
	t.Helper()
	var v string
	entry, _ := finds.Get(t.Context(), []string{"things"}, "k", &v)
	entry.Store(t.Context(), "v")
	return func() bool {
		_, hit := finds.Get(t.Context(), []string{"things"}, "k", &v)
		return hit
	}
}

func TestWriteInvalidatesOnlyAfterCommit(t *testing.T) {
	t.Parallel()
	s, finds := newStore(t)
	stillCached := cached(t, finds)
	err := s.Write(t.Context(), "failing", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		return []string{"things"}, apperr.New(apperr.KindConflict, "no")
	})
	if !apperr.Is(err, apperr.KindConflict) || !stillCached() {
		t.Fatalf("a rolled-back write invalidated the cache (err %v)", err)
	}
	if _, err := insert(t.Context(), s, "a"); err != nil {
		t.Fatal(err)
	}
	if stillCached() {
		t.Error("a committed write left the cached find in place")
	}
}

func TestNestedWriteUsesASavepoint(t *testing.T) {
	t.Parallel()
	s, finds := newStore(t)
	stillCached := cached(t, finds)
	err := s.Write(t.Context(), "outer", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if _, err := insert(ctx, s, "kept"); err != nil {
			return nil, err
		}
		if _, err := insert(ctx, s, "kept"); err == nil {
			t.Error("the duplicate insert succeeded")
		}
		// The failed inner write rolled back to its savepoint only: the
		// outer transaction still works and sees its own first insert.
		var n int
		err := s.DB(ctx).QueryRow(ctx, "SELECT count(*) FROM things").Scan(&n)
		if n != 1 {
			t.Errorf("inside the outer write: %d things, %v", n, err)
		}
		if !stillCached() {
			t.Error("an inner write invalidated before the outer commit")
		}
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if stillCached() {
		t.Error("the outer commit did not apply the inner write's invalidation")
	}
}

func TestUpdater(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	id, err := insert(t.Context(), s, "a")
	if err != nil {
		t.Fatal(err)
	}
	saves := 0
	u := store.Updater[thing, int]{
		Resource: "thing",
		Select:   "SELECT id, name, size, updated_by FROM things WHERE id = $1",
		Input:    func(th thing) int { return th.Size },
		Save: func(ctx context.Context, tx pgx.Tx, old thing, size int, actor string) ([]string, error) {
			saves++
			_, err := tx.Exec(ctx, "UPDATE things SET size = $2, updated_by = $3 WHERE id = $1", old.ID, size, actor)
			return nil, err
		},
	}
	grow := func(th thing) (int, error) { return th.Size + 1, nil }
	// Concurrent read-modify-writes never lose one another's change.
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := u.Update(t.Context(), s, model.Guard{Caller: model.Caller{Subject: "me"}}, id, grow); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var got thing
	if err := s.Pool.QueryRow(t.Context(), "SELECT id, name, size, updated_by FROM things WHERE id = $1", id).
		Scan(&got.ID, &got.Name, &got.Size, &got.UpdatedBy); err != nil || got.Size != 20 || got.UpdatedBy != "me" {
		t.Fatalf("after 20 increments: %+v, %v", got, err)
	}
	before := saves
	if _, err := u.Update(t.Context(), s, model.Guard{Caller: model.Caller{Subject: "me"}}, id, func(th thing) (int, error) { return th.Size, nil }); err != nil || saves != before {
		t.Errorf("an unchanged state was saved (%v)", err)
	}
	if _, err := u.Update(t.Context(), s, model.Guard{Caller: model.Caller{Subject: "me"}}, uuid.New(), grow); !apperr.Is(err, apperr.KindNotFound) {
		t.Errorf("missing row: %v", err)
	}
}

func TestDuplicateNamesTheHolder(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	id, err := insert(t.Context(), s, "a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = insert(t.Context(), s, "a")
	err = s.Duplicate(t.Context(), err, "a thing named a exists", "SELECT id FROM things WHERE name = $1", "a")
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.KindConflict || e.Extensions["existing_id"] != id.String() {
		t.Fatalf("err = %#v", err)
	}
	other := apperr.New(apperr.KindInvalid, "x")
	if got := s.Duplicate(t.Context(), other, "", "SELECT 1"); got != other {
		t.Errorf("other errors must pass through: %v", got)
	}
}

func TestDeleteAndInserted(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	err := s.Write(t.Context(), "delete", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var name string
		return nil, store.Delete(ctx, tx, "thing", uuid.New(), "DELETE FROM things WHERE id = $1 RETURNING name", &name)
	})
	if !apperr.Is(err, apperr.KindNotFound) {
		t.Fatalf("deleting nothing: %v", err)
	}
	// Concurrent inserts of one key: exactly one inserts, all get the row.
	var mu sync.Mutex
	inserted, ids := 0, map[uuid.UUID]bool{}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			var th thing
			var created bool
			err := s.Write(t.Context(), "insert", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
				var err error
				th, created, err = store.Inserted(ctx, tx, "insert thing",
					`INSERT INTO things (id, name) VALUES ($1, 'same') ON CONFLICT DO NOTHING RETURNING id, name, size, updated_by`,
					[]any{store.NewID()}, func() (thing, error) {
						return store.One[thing](ctx, tx, "get", "thing", uuid.Nil, "SELECT id, name, size, updated_by FROM things WHERE name = 'same'")
					})
				return nil, err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			ids[th.ID] = true
			if created {
				inserted++
			}
		})
	}
	wg.Wait()
	if inserted != 1 || len(ids) != 1 {
		t.Errorf("inserted %d times, %d distinct rows", inserted, len(ids))
	}
}

func TestNewIDsSortByCreation(t *testing.T) {
	t.Parallel()
	a, b := store.NewID(), store.NewID()
	if a.Version() != 7 || a.String() >= b.String() {
		t.Errorf("ids %s, %s", a, b)
	}
}
