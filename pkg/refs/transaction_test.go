package refs_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
)

// The rule of check.go, held at run time: nothing a store calls inside its
// transaction asks another service. The owner here is a real HTTP server
// that counts the calls it gets while the referrer's transaction is open.

func personTarget(id uuid.UUID) refs.Target {
	return refs.Target{Field: "person_id", Kind: "person", ID: id}
}

// markChanged does what a delete's question does to the referrer's row of
// a target (forget), committed on its own: not alive, with a new version.
func (w *world) markChanged(t *testing.T, id uuid.UUID) {
	t.Helper()
	if _, err := w.referrerStore.Pool.Exec(t.Context(), `INSERT INTO ref_targets (kind, id, alive) VALUES ('person', $1, false)
		ON CONFLICT (kind, id) DO UPDATE SET alive = false, attrs = NULL, version = nextval('ref_targets_version')`, id); err != nil {
		t.Fatal(err)
	}
}

// things counts the things naming person.
func (w *world) things(t *testing.T, person uuid.UUID) (n int) {
	t.Helper()
	if err := w.referrerStore.Pool.QueryRow(t.Context(), `SELECT count(*) FROM things WHERE person_id = $1`, person).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The three ways a store confirms a check in its transaction.
var confirmations = map[string]func(ctx context.Context, tx pgx.Tx, c *refs.Checked) error{
	"Confirm": func(ctx context.Context, tx pgx.Tx, c *refs.Checked) error {
		_, err := c.Confirm(ctx, tx)
		return err
	},
	"ConfirmAll": func(ctx context.Context, tx pgx.Tx, c *refs.Checked) error {
		_, err := c.ConfirmAll(ctx, tx)
		return err
	},
	"Queue and Finish": func(ctx context.Context, tx pgx.Tx, c *refs.Checked) error {
		batch := &pgx.Batch{}
		cf, err := c.Queue(batch)
		if err != nil {
			return err
		}
		results := tx.SendBatch(ctx, batch)
		err = cf.Read(results)
		if cerr := results.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		_, err = cf.Finish(ctx, tx)
		return err
	},
}

// Whatever a check knows, confirming it inside a transaction asks nobody:
// a target neither remembered nor answered with its row unchanged is
// ErrAskFirst, and the owner is asked by Checking, after the transaction.
func TestNoOwnerIsAskedInsideATransaction(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	var inTx atomic.Bool
	var calls, callsInTx atomic.Int64
	w.ownerCalled = func(*http.Request) {
		calls.Add(1)
		if inTx.Load() {
			callsInTx.Add(1)
		}
	}
	inTransaction := func(fn func(ctx context.Context, tx pgx.Tx) error) error {
		return w.referrerStore.Write(ctx, "confirm", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			inTx.Store(true)
			defer inTx.Store(false)
			return nil, fn(ctx, tx)
		})
	}
	p, q := w.person(t), w.person(t)
	asked, err := w.referrer.Ask(ctx, personTarget(p))
	if err != nil || calls.Load() != 1 {
		t.Fatalf("ask before the transaction: %v, %d calls", err, calls.Load())
	}
	changed, err := w.referrer.Ask(ctx, personTarget(p))
	if err != nil {
		t.Fatal(err)
	}
	w.markChanged(t, p)
	for _, c := range []struct {
		name    string
		checked *refs.Checked
	}{
		{"not remembered", w.referrer.Remembered(personTarget(p))},
		{"asked, then its row changed", changed},
		{"asked about another target", asked.Of(personTarget(q))},
	} {
		for how, confirm := range confirmations {
			err := inTransaction(func(ctx context.Context, tx pgx.Tx) error { return confirm(ctx, tx, c.checked) })
			var first *refs.AskFirst
			if !errors.As(err, &first) || len(first.Targets) != 1 {
				t.Errorf("%s, %s: %v, want ErrAskFirst naming the check's target", c.name, how, err)
			}
		}
	}
	err = inTransaction(func(ctx context.Context, _ pgx.Tx) error {
		_, err := w.referrer.Ask(ctx, personTarget(q))
		return err
	})
	if !errors.Is(err, refs.ErrAskInTransaction) {
		t.Errorf("an ask inside a transaction: %v, want ErrAskInTransaction", err)
	}
	if n := callsInTx.Load(); n > 0 {
		t.Fatalf("the owner was asked %d times inside the referrer's transaction", n)
	}
	// Checking asks, outside: once for each target the write names.
	before := calls.Load()
	for _, person := range []uuid.UUID{p, q} {
		if _, err := w.createThing(ctx, person); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load() - before; n != 2 || callsInTx.Load() > 0 {
		t.Errorf("Checking asked %d times (%d inside the transaction), want twice, outside", n, callsInTx.Load())
	}
}

// A write whose targets keep changing between Checking's ask and its
// transaction is asked about at most MaxAsks times, then answered a 503
// with Retry-After, with nothing written; a target that changes a time or
// two goes through.
func TestCheckingGivesUpOnTargetsThatKeepChanging(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	var asks atomic.Int64
	w.ownerCalled = func(*http.Request) { asks.Add(1) }
	people := make([]uuid.UUID, refs.MaxAsks+1)
	for i := range people {
		people[i] = w.person(t)
	}
	for _, c := range []struct {
		name    string
		changes int // runs that see their target changed
		target  func(run int) uuid.UUID
		ok      bool
	}{
		// A delete's question marks the row every time.
		{"row marked every time", refs.MaxAsks + 1, func(int) uuid.UUID { return people[0] }, false},
		// A patch that reads a row another patch changes every time.
		{"another target every time", 0, func(run int) uuid.UUID { return people[run-1] }, false},
		{"row marked twice", 2, func(int) uuid.UUID { return people[1] }, true},
	} {
		asks.Store(0)
		runs := 0
		var named []uuid.UUID
		err := w.referrer.Checking(ctx, func(checked *refs.Checked) error {
			runs++
			person := c.target(runs)
			if !slices.Contains(named, person) {
				named = append(named, person)
			}
			if runs <= c.changes {
				w.markChanged(t, person)
			}
			return w.insertThing(ctx, store.NewID(), person, checked)
		})
		written := 0
		for _, p := range named {
			written += w.things(t, p)
		}
		if c.ok {
			if err != nil || runs != c.changes+1 || asks.Load() != int64(c.changes) || written != 1 {
				t.Errorf("%s: %v after %d runs, %d asks, %d written; want success after %d runs", c.name, err, runs, asks.Load(), written, c.changes+1)
			}
			continue
		}
		var e *apperr.Error
		if !errors.As(err, &e) || e.Kind != apperr.KindUnavailable || e.Headers["Retry-After"] == "" {
			t.Errorf("%s: %v, want a 503 with Retry-After", c.name, err)
		}
		if runs != refs.MaxAsks+1 || asks.Load() != refs.MaxAsks || written != 0 {
			t.Errorf("%s: %d runs, %d asks, %d things written; want %d runs, %d asks, none written",
				c.name, runs, asks.Load(), written, refs.MaxAsks+1, refs.MaxAsks)
		}
	}
}

// Inside a request's unit of work (an Idempotency-Key), a first run that
// must ask leaves the unit's transaction holding nothing: Checking ends it
// before the owner is asked. Once a write of the unit has lasted, the
// owner is not asked across it: the write is a 503, for the request to be
// tried again whole.
func TestCheckingInAUnitOfWork(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx, unit := w.referrerStore.BeginUnit(t.Context())
	defer unit.Rollback(ctx)
	var calls, held atomic.Int64
	w.ownerCalled = func(*http.Request) {
		calls.Add(1)
		if store.Holding(ctx) {
			held.Add(1)
		}
	}
	p, q := w.person(t), w.person(t)
	if _, err := w.createThing(ctx, p); err != nil {
		t.Fatalf("the unit's first write: %v", err)
	}
	if calls.Load() != 1 || held.Load() != 0 {
		t.Errorf("the owner was asked %d times, %d of them with the unit's transaction open; want once, with none", calls.Load(), held.Load())
	}
	_, err := w.createThing(ctx, q)
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.KindUnavailable || e.Headers["Retry-After"] == "" {
		t.Errorf("a second write that must ask, after a lasting one: %v, want a 503 with Retry-After", err)
	}
	if calls.Load() != 1 || held.Load() != 0 {
		t.Errorf("the owner was asked across the unit's transaction (%d calls, %d held)", calls.Load(), held.Load())
	}
	if err := unit.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if w.things(t, p) != 1 || w.things(t, q) != 0 {
		t.Errorf("after the commit: %d things of the first person, %d of the second; want 1 and 0", w.things(t, p), w.things(t, q))
	}
}
