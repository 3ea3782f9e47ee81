package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

// deferrer is what a write transaction offers the outbox.
type deferrer interface {
	Defer(sql string, args ...any)
}

// countedStore is a store over one connection through a proxy that counts
// its round trips.
func countedStore(t *testing.T) (*store.Store, *cuttingProxy) {
	t.Helper()
	target := strings.Split(strings.Split(testkit.PostgresURL(t), "@")[1], "/")[0]
	proxy := newCuttingProxy(t, target)
	cfg := open(t)
	cfg.URL = strings.Replace(testkit.PostgresURL(t), target, proxy.addr, 1)
	cfg.MaxConns = 1
	pool := migrated(t, cfg, migrations)
	if _, err := pool.Exec(t.Context(), `CREATE TABLE events (id uuid PRIMARY KEY, item uuid NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return store.New(pool, nil), proxy
}

func insertItem(ctx context.Context, tx pgx.Tx, name string) (uuid.UUID, error) {
	var id uuid.UUID
	err := tx.QueryRow(ctx, `INSERT INTO items (id, kind, name) VALUES ($1, 'thing', $2) RETURNING id`, store.NewID(), name).Scan(&id)
	return id, err
}

func recordEvent(tx pgx.Tx, item uuid.UUID) {
	tx.(deferrer).Defer(`INSERT INTO events (id, item) VALUES ($1, $2)`, store.NewID(), item)
}

func count(t *testing.T, s *store.Store, sql string) int {
	t.Helper()
	var n int
	if err := s.Pool.QueryRow(t.Context(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A write's BEGIN travels with its first statement and its recorded event
// with its COMMIT; a savepoint and its release travel too; a write that
// sent nothing costs nothing.
func TestWriteRoundTrips(t *testing.T) {
	t.Parallel()
	s, proxy := countedStore(t)
	createWithEvent := func(ctx context.Context, name string) error {
		return s.Write(ctx, "create", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			id, err := insertItem(ctx, tx, name)
			if err == nil {
				recordEvent(tx, id)
			}
			return nil, err
		})
	}
	cases := []struct {
		name  string
		write func(ctx context.Context, i int) error
		want  int64
	}{
		{"a create with its event", func(ctx context.Context, i int) error {
			return createWithEvent(ctx, "plain"+string(rune('a'+i)))
		}, 2},
		{"two creates in a unit of work, each in a savepoint", func(ctx context.Context, i int) error {
			ctx, unit := s.BeginUnit(ctx)
			defer unit.Rollback(ctx)
			for _, n := range []string{"one", "two"} {
				if err := createWithEvent(ctx, n+string(rune('a'+i))); err != nil {
					return err
				}
			}
			return unit.Commit(ctx)
		}, 3},
		{"six hundred creates in a unit, each in a savepoint", func(ctx context.Context, i int) error {
			ctx, unit := s.BeginUnit(ctx)
			defer unit.Rollback(ctx)
			for n := range 600 {
				if err := createWithEvent(ctx, fmt.Sprintf("many%d-%d", i, n)); err != nil {
					return err
				}
			}
			return unit.Commit(ctx)
		}, 601},
		{"a write that sends nothing", func(ctx context.Context, _ int) error {
			return s.Write(ctx, "nothing", func(context.Context, pgx.Tx) ([]string, error) { return nil, nil })
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The first run prepares the statements on the connection.
			if err := c.write(t.Context(), 0); err != nil {
				t.Fatal(err)
			}
			before := proxy.roundTrips.Load()
			if err := c.write(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			if got := proxy.roundTrips.Load() - before; got != c.want {
				t.Errorf("%d round trips, want %d", got, c.want)
			}
		})
	}
	if items, events := count(t, s, `SELECT count(*) FROM items`), count(t, s, `SELECT count(*) FROM events`); items != 1206 || events != 1206 {
		t.Errorf("%d items and %d events, want 1,206 of each", items, events)
	}
}

// What is queued is part of the write: when it fails, the write fails at
// its commit and leaves nothing.
func TestDeferredStatementFailureFailsTheWrite(t *testing.T) {
	t.Parallel()
	s, _ := countedStore(t)
	err := s.Write(t.Context(), "create", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if _, err := insertItem(ctx, tx, "doomed"); err != nil {
			return nil, err
		}
		tx.(deferrer).Defer(`INSERT INTO events (id, item) VALUES ($1, NULL)`, store.NewID())
		return nil, nil
	})
	if err == nil {
		t.Fatal("a write whose deferred statement failed committed")
	}
	if n := count(t, s, `SELECT count(*) FROM items`); n != 0 {
		t.Errorf("%d items left by the failed write", n)
	}
	// The connection is usable again.
	if err := s.Write(t.Context(), "after", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		_, err := insertItem(ctx, tx, "after")
		return nil, err
	}); err != nil {
		t.Fatal(err)
	}
}

// A failed write inside a unit of work undoes only itself, whether what it
// did was still queued or had reached the server; the unit's other writes
// commit.
func TestFailedWriteInAUnitUndoesOnlyItself(t *testing.T) {
	t.Parallel()
	s, _ := countedStore(t)
	errItem := errors.New("refused")
	ctx, unit := s.BeginUnit(t.Context())
	defer unit.Rollback(ctx)
	writes := []struct {
		name string
		fn   func(ctx context.Context, tx pgx.Tx) ([]string, error)
	}{
		{"kept", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			id, err := insertItem(ctx, tx, "kept")
			recordEvent(tx, id)
			return nil, err
		}},
		{"failed while queued", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			recordEvent(tx, uuid.New())
			return nil, errItem
		}},
		{"failed after it was sent", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			id, err := insertItem(ctx, tx, "undone")
			if err != nil {
				return nil, err
			}
			recordEvent(tx, id)
			return nil, errItem
		}},
		{"failed in the database", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			_, err := insertItem(ctx, tx, "kept") // a duplicate name
			return nil, err
		}},
		{"kept too", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			_, err := insertItem(ctx, tx, "kept too")
			return nil, err
		}},
	}
	for _, w := range writes {
		err := s.Write(ctx, w.name, w.fn)
		if strings.HasPrefix(w.name, "kept") != (err == nil) {
			t.Fatalf("%s: err = %v", w.name, err)
		}
	}
	if err := unit.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	rows, err := s.Pool.Query(t.Context(), `SELECT name FROM items ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "kept,kept too" {
		t.Errorf("items %v, want kept and kept too", names)
	}
	if n := count(t, s, `SELECT count(*) FROM events`); n != 1 {
		t.Errorf("%d events, want the kept item's one", n)
	}
}

// A write of a unit that fails before its statements reach the server (its
// caller gone, its context done) cannot be undone alone: what waited to go
// with it belonged to the writes before it, which reported success. The
// unit then fails whole; it never commits with an earlier write undone.
func TestAWriteCutOffBreaksTheUnit(t *testing.T) {
	t.Parallel()
	s, _ := countedStore(t)
	ctx, unit := s.BeginUnit(t.Context())
	defer unit.Rollback(ctx)
	err := s.Write(ctx, "a", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		id, err := insertItem(ctx, tx, "a")
		recordEvent(tx, id)
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Write(gone, "b", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		_, err := insertItem(ctx, tx, "b")
		return nil, err
	}); err == nil {
		t.Fatal("a write with its context done succeeded")
	}
	commitErr := unit.Commit(ctx)
	items := count(t, s, `SELECT count(*) FROM items WHERE name = 'a'`)
	if commitErr == nil && items != 1 {
		t.Errorf("the unit committed without the write that reported success")
	}
	if commitErr == nil {
		t.Errorf("the unit committed after a write was cut off")
	}
}
