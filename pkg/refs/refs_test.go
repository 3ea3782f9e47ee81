package refs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestMain(m *testing.M) {
	// The world's catalog, for the whole run: its tests run at once, and
	// a swap and restore per test would change it under the others. The
	// real catalog's other referrers of person are not part of the world.
	catalog.Services = worldCatalog
	os.Exit(testkit.Main(m))
}

// worldCatalog is the owner service ("parties", owning person) and the
// referrer ("things", whose things point at a person).
var worldCatalog = []catalog.Service{
	{Deployable: catalog.Deployable{Name: "parties", Port: 8101, MetricsPort: 9101}, Kinds: []string{"organization", "person"}},
	{Deployable: catalog.Deployable{Name: "things", Port: 8199, MetricsPort: 9199},
		References: []catalog.Reference{{Service: "parties", Kind: "person"}}},
}

// world is an owner service ("parties", owning person) and a referrer
// ("things", whose things point at a person), each with its own schema,
// calling each other over HTTP.
type world struct {
	owner, referrer           *refs.Registry
	ownerStore, referrerStore *store.Store
	stopReferrer              func()
	// ownerCalled, when set, is told of every call the owner's HTTP
	// server receives, before it is answered.
	ownerCalled func(*http.Request)
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{
		ownerStore:    open(t, `CREATE TABLE people (id uuid PRIMARY KEY); CREATE TABLE organizations (id uuid PRIMARY KEY)`),
		referrerStore: open(t, `CREATE TABLE things (id uuid PRIMARY KEY, person_id uuid NOT NULL)`),
	}
	// The servers start first (the registries need their URLs) and serve
	// the registries once they exist.
	var ownerAPI, referrerAPI http.Handler
	ownerSrv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w.ownerCalled != nil {
			w.ownerCalled(r)
		}
		ownerAPI.ServeHTTP(rw, r)
	}))
	t.Cleanup(ownerSrv.Close)
	referrerSrv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { referrerAPI.ServeHTTP(rw, r) }))
	t.Cleanup(referrerSrv.Close)
	w.stopReferrer = referrerSrv.Close
	w.owner = refs.New("parties", w.ownerStore, clients(t, "things", referrerSrv.URL))
	w.referrer = refs.New("things", w.referrerStore, clients(t, "parties", ownerSrv.URL))
	w.owner.Owns("person", func(ctx context.Context, q store.Querier, ids []uuid.UUID) (map[uuid.UUID]refs.Attrs, error) {
		rows, err := q.Query(ctx, `SELECT id FROM people WHERE id = ANY($1)`, ids)
		if err != nil {
			return nil, err
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		out := map[uuid.UUID]refs.Attrs{}
		for _, id := range found {
			out[id] = refs.Attrs{"kind": "person"}
		}
		return out, err
	})
	w.referrer.PointsAt("person", func(ctx context.Context, q store.Querier, id uuid.UUID) ([]refs.Ref, error) {
		rows, err := q.Query(ctx, `SELECT id FROM things WHERE person_id = $1 ORDER BY id`, id)
		if err != nil {
			return nil, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		var out []refs.Ref
		for _, id := range ids {
			out = append(out, refs.Ref{Kind: "thing", ID: id, Label: "a thing"})
		}
		return out, err
	})
	w.owner.Owns("organization", refs.ExistsIn("organizations"))
	ownerAPI, referrerAPI = router(w.owner), router(w.referrer)
	return w
}

func open(t *testing.T, ddl string) *store.Store {
	t.Helper()
	service := fstest.MapFS{"001_init.sql": {Data: []byte(ddl)}}
	pool, err := store.OpenAndMigrateSets(t.Context(), store.Config{URL: testkit.PostgresURL(t),
		Schema: testkit.NewDatabaseSchema(t), MaxConns: 30, StartupWait: time.Second}, nil, store.Migrations(service)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.New(pool, nil)
}

func router(s refs.Service) *httpx.Router {
	r := httpx.NewRouter()
	refs.MakeServerEndpoints(s).Mount(r)
	return r
}

func clients(t *testing.T, name, url string) *peer.Clients {
	t.Helper()
	cs, err := peer.NewClients(peer.Config{URLs: map[string]*string{name: &url}, Timeout: 2 * time.Second,
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "test"})}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (w *world) person(t *testing.T) uuid.UUID {
	t.Helper()
	id := store.NewID()
	if _, err := w.ownerStore.Pool.Exec(t.Context(), `INSERT INTO people (id) VALUES ($1)`, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// createThing is the referrer's write as the services make theirs
// (refs.Registry.Checking): the store's transaction confirms the check it
// is given, first trusting only what the referrer remembers, and the owner
// is asked before a second transaction when that is not enough.
func (w *world) createThing(ctx context.Context, person uuid.UUID) (uuid.UUID, error) {
	id := store.NewID()
	return id, w.referrer.Checking(ctx, func(checked *refs.Checked) error {
		return w.insertThing(ctx, id, person, checked)
	})
}

// insertThing is the store's side of a thing's create: confirm, then
// insert, in one transaction.
func (w *world) insertThing(ctx context.Context, id, person uuid.UUID, checked *refs.Checked) error {
	return w.referrerStore.Write(ctx, "create thing", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if _, err := checked.Of(refs.Target{Field: "person_id", Kind: "person", ID: person}).Confirm(ctx, tx); err != nil {
			return nil, err
		}
		_, err := tx.Exec(ctx, `INSERT INTO things (id, person_id) VALUES ($1, $2)`, id, person)
		return nil, err
	})
}

func (w *world) deletePerson(ctx context.Context, id uuid.UUID) error {
	return w.owner.Delete(ctx, "person", id, func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		_, err := tx.Exec(ctx, `DELETE FROM people WHERE id = $1`, id)
		return nil, err
	})
}

// markDeleting leaves the owner's mark of a delete of person p in
// progress, its lease running out after until (an interval), as a delete
// that has asked its referrers and not yet finished leaves it.
func (w *world) markDeleting(t *testing.T, p uuid.UUID, until string) {
	t.Helper()
	if _, err := w.ownerStore.Pool.Exec(t.Context(), `INSERT INTO pending_deletions (kind, id, token, until)
		VALUES ('person', $1, gen_random_uuid(), now() + $2::interval)
		ON CONFLICT (kind, id) DO UPDATE SET until = EXCLUDED.until`, p, until); err != nil {
		t.Fatal(err)
	}
}

// unmarkDeleting takes away the owner's marks of deletes in progress.
func (w *world) unmarkDeleting(t *testing.T) {
	t.Helper()
	if _, err := w.ownerStore.Pool.Exec(t.Context(), `DELETE FROM pending_deletions`); err != nil {
		t.Fatal(err)
	}
}

// dangling counts the deleted people that things still point at.
func (w *world) dangling(t *testing.T) (n int) {
	t.Helper()
	rows, err := w.referrerStore.Pool.Query(t.Context(), `SELECT DISTINCT person_id FROM things`)
	if err != nil {
		t.Fatal(err)
	}
	pointed, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pointed {
		var exists bool
		if err := w.ownerStore.Pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM people WHERE id = $1)`, p).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if !exists {
			n++
		}
	}
	return n
}

// deleteOutcomes counts how the deletes of a race ended: through, or
// refused because something still points at the target; any other end
// fails the test.
type deleteOutcomes struct{ deleted, refused int }

func (o *deleteOutcomes) add(t *testing.T, err error) {
	t.Helper()
	switch kindOf(err) {
	case -1:
		o.deleted++
	case apperr.KindConflict:
		o.refused++
	default:
		t.Fatalf("delete: %v", err)
	}
}

func kindOf(err error) apperr.Kind {
	if err == nil {
		return -1
	}
	return apperr.KindOf(err)
}

func TestCheckAndDelete(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	p := w.person(t)
	thing, err := w.createThing(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.createThing(ctx, uuid.New())
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.KindInvalid || e.Fields[0].Field != "person_id" {
		t.Fatalf("a thing for nobody: %v", err)
	}
	err = w.deletePerson(ctx, p)
	if !errors.As(err, &e) || e.Code != "still-referenced" || e.Extensions["referenced_by"] == nil {
		t.Fatalf("deleting a referenced person: %v", err)
	}
	// The refused delete left no mark: the person can still be referenced.
	if _, err := w.createThing(ctx, p); err != nil {
		t.Fatalf("after a refused delete: %v", err)
	}
	if _, err := w.referrerStore.Pool.Exec(ctx, `DELETE FROM things WHERE person_id = $1`, p); err != nil {
		t.Fatal(err)
	}
	if err := w.deletePerson(ctx, p); err != nil {
		t.Fatalf("deleting an unreferenced person: %v", err)
	}
	if err := w.deletePerson(ctx, p); kindOf(err) != apperr.KindNotFound {
		t.Errorf("deleting it again: %v", err)
	}
	if _, err := w.createThing(ctx, p); kindOf(err) != apperr.KindInvalid {
		t.Errorf("referencing a deleted person: %v", err)
	}
	_ = thing
}

// One id checked as two kinds exists only as the kind its owner has it
// as: a person's id is no organization, though the same check finds the
// person.
func TestCheckKeepsKindsApart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.person(t)
	err := w.referrer.Checking(t.Context(), func(checked *refs.Checked) error {
		return w.referrerStore.Write(t.Context(), "check", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			found, err := checked.Of(refs.Target{Field: "person_id", Kind: "person", ID: p},
				refs.Target{Field: "organization_id", Kind: "organization", ID: p}).Confirm(ctx, tx)
			if !errors.Is(err, refs.ErrAskFirst) && found[p] == nil {
				t.Errorf("the person's attributes are missing: %v", found)
			}
			return nil, err
		})
	})
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.KindInvalid || len(e.Fields) != 1 || e.Fields[0].Field != "organization_id" {
		t.Fatalf("a person's id as an organization: %v", err)
	}
}

// A delete that died after marking its target blocks new references only
// until its lease runs out.
func TestAbandonedDeleteExpires(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.person(t)
	w.markDeleting(t, p, "1 minute")
	if _, err := w.createThing(t.Context(), p); kindOf(err) != apperr.KindInvalid {
		t.Errorf("a target being deleted was referenced: %v", err)
	}
	if err := w.deletePerson(t.Context(), p); kindOf(err) != apperr.KindConflict {
		t.Errorf("a second delete during the first: %v", err)
	}
	w.markDeleting(t, p, "-1 second")
	if _, err := w.createThing(t.Context(), p); err != nil {
		t.Errorf("after the lease: %v", err)
	}
}

// A referrer that cannot answer makes the delete a 503 and leaves the
// target referable.
func TestUnreachableReferrer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.person(t)
	w.stopReferrer()
	if err := w.deletePerson(t.Context(), p); kindOf(err) != apperr.KindUnavailable {
		t.Fatalf("delete with the referrer down: %v", err)
	}
	found, err := w.owner.Exists(t.Context(), "person", []uuid.UUID{p})
	if err != nil || found[p] == nil {
		t.Errorf("the failed delete left its mark: %v, %v", found, err)
	}
}

// Deletes and creates racing for the same targets, many rounds: whatever
// the interleaving, no thing ever points at a deleted person.
func TestDeleteAndCreateRace(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	const rounds, creators = 40, 4
	var deletes deleteOutcomes
	for range rounds {
		p := w.person(t)
		var wg sync.WaitGroup
		var delErr error
		wg.Go(func() { delErr = w.deletePerson(ctx, p) })
		for range creators {
			wg.Go(func() {
				if _, err := w.createThing(ctx, p); err != nil && kindOf(err) != apperr.KindInvalid {
					t.Errorf("create: %v", err)
				}
			})
		}
		wg.Wait()
		deletes.add(t, delErr)
	}
	if dangling := w.dangling(t); dangling > 0 {
		t.Errorf("%d deleted people are still referenced", dangling)
	}
	t.Logf("%d rounds: %d deletes went through, %d were refused", rounds, deletes.deleted, deletes.refused)
}

// A referrer pages through an owner's kind, in id order, with the
// attributes the owner lists; a kind it does not list is a 422.
func TestListOwned(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if _, err := w.ownerStore.Pool.Exec(t.Context(), `ALTER TABLE people ADD COLUMN nickname text`); err != nil {
		t.Fatal(err)
	}
	w.owner.Lists("person", refs.ListIn("people", "nickname"))
	var want []uuid.UUID
	for i := range 5 {
		id := uuid.Must(uuid.NewV7())
		want = append(want, id)
		var nickname *string
		if i%2 == 0 {
			n := fmt.Sprintf("p%d", i)
			nickname = &n
		}
		if _, err := w.ownerStore.Pool.Exec(t.Context(), `INSERT INTO people (id, nickname) VALUES ($1, $2)`, id, nickname); err != nil {
			t.Fatal(err)
		}
	}
	var got []uuid.UUID
	for after := uuid.Nil; ; {
		page, err := w.referrer.ListOwned(t.Context(), "person", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, f := range page {
			i := len(got)
			if nick, ok := f.Attrs["nickname"]; ok != (i%2 == 0) || (ok && nick != fmt.Sprintf("p%d", i)) {
				t.Errorf("person %d: attrs %v", i, f.Attrs)
			}
			got = append(got, f.ID)
		}
		after = page[len(page)-1].ID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	if _, err := w.referrer.ListOwned(t.Context(), "organization", uuid.Nil, 10); kindOf(err) != apperr.KindInvalid {
		t.Errorf("a kind the owner does not list: %v", err)
	}
}

// createThingAskedFirst is the referrer's write as a batch makes it: the
// owner asked before the transaction (Prepare), the answer confirmed under
// the target's lock (Confirm), and asked again, outside the transaction,
// when the target's row changed in between (CheckingFrom).
func (w *world) createThingAskedFirst(ctx context.Context, person uuid.UUID) (uuid.UUID, error) {
	checked, err := w.referrer.Prepare(ctx, refs.Target{Field: "person_id", Kind: "person", ID: person})
	if err != nil {
		return uuid.Nil, err
	}
	id := store.NewID()
	return id, w.referrer.CheckingFrom(ctx, checked, func(checked *refs.Checked) error {
		return w.insertThing(ctx, id, person, checked)
	})
}

// The owner is asked once: the referrer remembers a target that exists,
// and forgets it when a delete asks what points at it.
func TestRememberedTargets(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	p := w.person(t)
	alive := func() bool {
		var alive bool
		err := w.referrerStore.Pool.QueryRow(ctx, `SELECT alive FROM ref_targets WHERE kind = 'person' AND id = $1`, p).Scan(&alive)
		if errors.Is(err, pgx.ErrNoRows) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return alive
	}
	if _, err := w.createThingAskedFirst(ctx, uuid.New()); kindOf(err) != apperr.KindInvalid {
		t.Fatalf("a thing for nobody: %v", err)
	}
	if _, err := w.createThingAskedFirst(ctx, p); err != nil {
		t.Fatal(err)
	}
	if !alive() {
		t.Fatal("an existing person was not remembered")
	}
	// Remembered: the owner is not asked (its mark of a delete in
	// progress would have made it say no).
	w.markDeleting(t, p, "1 minute")
	if _, err := w.createThingAskedFirst(ctx, p); err != nil {
		t.Fatalf("a remembered person: %v", err)
	}
	w.unmarkDeleting(t)
	// A delete's question forgets it, refused or not.
	if err := w.deletePerson(ctx, p); kindOf(err) != apperr.KindConflict {
		t.Fatalf("deleting a referenced person: %v", err)
	}
	if alive() {
		t.Fatal("a delete's question left the person remembered")
	}
	if _, err := w.referrerStore.Pool.Exec(ctx, `DELETE FROM things`); err != nil {
		t.Fatal(err)
	}
	if err := w.deletePerson(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, create := range []func(context.Context, uuid.UUID) (uuid.UUID, error){w.createThing, w.createThingAskedFirst} {
		if _, err := create(ctx, p); kindOf(err) != apperr.KindInvalid {
			t.Errorf("a deleted person: %v", err)
		}
	}
	// A failed write remembers nothing.
	q := w.person(t)
	err := w.referrer.Checking(ctx, func(checked *refs.Checked) error {
		return w.referrerStore.Write(ctx, "create thing", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			if _, err := checked.Of(refs.Target{Field: "person_id", Kind: "person", ID: q}).Confirm(ctx, tx); err != nil {
				return nil, err
			}
			return nil, errors.New("the insert failed")
		})
	})
	if err == nil {
		t.Fatal("the failing write succeeded")
	}
	var n int
	if err := w.referrerStore.Pool.QueryRow(ctx, `SELECT count(*) FROM ref_targets WHERE id = $1`, q).Scan(&n); err != nil || n != 0 {
		t.Errorf("a failed write left %d rows (%v)", n, err)
	}
}

// Checking runs the write once when the referrer remembers its targets,
// and twice when it does not: the first transaction answers ErrAskFirst,
// the owner is asked with nothing held, and the second confirms the
// answer; a target that does not exist is the 422 of the second.
func TestCheckingAsksOnlyWhatIsNotRemembered(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	p := w.person(t)
	for _, c := range []struct {
		name      string
		person    uuid.UUID
		wantRuns  int
		wantKind  apperr.Kind // -1: no error
		wantTotal int         // things naming the person afterwards
	}{
		{"not remembered", p, 2, -1, 1},
		{"remembered", p, 1, -1, 2},
		{"nobody", uuid.New(), 2, apperr.KindInvalid, 0},
	} {
		runs := 0
		var firstErr error
		err := w.referrer.Checking(ctx, func(checked *refs.Checked) error {
			runs++
			return w.referrerStore.Write(ctx, "create thing", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
				_, err := checked.Of(refs.Target{Field: "person_id", Kind: "person", ID: c.person}).Confirm(ctx, tx)
				if runs == 1 {
					firstErr = err
				}
				if err != nil {
					return nil, err
				}
				_, err = tx.Exec(ctx, `INSERT INTO things (id, person_id) VALUES ($1, $2)`, store.NewID(), c.person)
				return nil, err
			})
		})
		if runs != c.wantRuns || kindOf(err) != c.wantKind {
			t.Errorf("%s: %d runs, error %v; want %d runs, kind %v", c.name, runs, err, c.wantRuns, c.wantKind)
		}
		if c.wantRuns == 2 && !errors.Is(firstErr, refs.ErrAskFirst) {
			t.Errorf("%s: the first run's check answered %v, want ErrAskFirst", c.name, firstErr)
		}
		var n int
		if err := w.referrerStore.Pool.QueryRow(ctx, `SELECT count(*) FROM things WHERE person_id = $1`, c.person).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.wantTotal {
			t.Errorf("%s: %d things name the person, want %d", c.name, n, c.wantTotal)
		}
	}
}

// Sixteen writers, asking before their transactions, against a delete of
// their target, many rounds; half the rounds start with the target
// remembered alive (so the writers ask nobody): whatever the interleaving,
// no thing points at a deleted person.
func TestDeleteAndSixteenWritersRace(t *testing.T) {
	t.Parallel()
	const rounds, writers = 30, 16
	w := newWorld(t)
	ctx := t.Context()
	var deletes deleteOutcomes
	created := 0
	var mu sync.Mutex
	for round := range rounds {
		p := w.person(t)
		if round%2 == 0 { // remembered: one thing made and removed again
			if _, err := w.createThingAskedFirst(ctx, p); err != nil {
				t.Fatal(err)
			}
			if _, err := w.referrerStore.Pool.Exec(ctx, `DELETE FROM things WHERE person_id = $1`, p); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		var delErr error
		wg.Go(func() { delErr = w.deletePerson(ctx, p) })
		for i := range writers {
			wg.Go(func() {
				// Spread over the delete's few milliseconds, so that some
				// writers come before its question and some after.
				time.Sleep(time.Duration(i*(round%5+1)) * 200 * time.Microsecond)
				create := w.createThingAskedFirst
				if i%2 == 1 {
					create = w.createThing
				}
				_, err := create(ctx, p)
				switch kindOf(err) {
				case -1:
					mu.Lock()
					created++
					mu.Unlock()
				case apperr.KindInvalid:
				default:
					t.Errorf("create: %v", err)
				}
			})
		}
		wg.Wait()
		deletes.add(t, delErr)
	}
	if dangling := w.dangling(t); dangling > 0 {
		t.Errorf("%d deleted people are still referenced", dangling)
	}
	if deletes.deleted == 0 || deletes.refused == 0 {
		t.Errorf("the race never went both ways: %d deleted, %d refused", deletes.deleted, deletes.refused)
	}
	t.Logf("%d rounds: %d deletes went through, %d were refused; %d things created", rounds, deletes.deleted, deletes.refused, created)
}

// Batches that learn the same new targets, each naming them in its own
// order, wait for each other at most: they never deadlock (each would
// otherwise wait on the other's uncommitted ref_targets row).
func TestBatchesLearningTheSameTargetsDoNotDeadlock(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	const writers = 16
	for round := range 3 {
		// Enough targets that the writers' inserts overlap.
		rows, err := w.ownerStore.Pool.Query(ctx, `INSERT INTO people (id) SELECT gen_random_uuid() FROM generate_series(1, 2000) RETURNING id`)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			t.Fatal(err)
		}
		targets := make([]refs.Target, len(ids))
		for i, id := range ids {
			targets[i] = refs.Target{Field: "person_id", Kind: "person", ID: id}
		}
		// The owner is asked writer after writer, before any confirms:
		// what may deadlock is the confirmations, and sixteen asks of
		// 2,000 targets at once outlasted the peers' timeout on a busy
		// machine, failing the test on what it is not about.
		start := make(chan struct{})
		errs := make(chan error, writers)
		for writer := range writers {
			mine := slices.Clone(targets)
			rand.New(rand.NewPCG(uint64(round), uint64(writer))).Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
			checked, err := w.referrer.Ask(ctx, mine...)
			if err != nil {
				t.Fatalf("round %d, writer %d: ask the owner: %v", round, writer, err)
			}
			go func() {
				<-start // every writer confirms at once
				errs <- w.referrerStore.Write(ctx, "learn", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
					known, err := w.referrer.ConfirmAll(ctx, tx, checked)
					if err == nil {
						err = known.Missing(mine...)
					}
					return nil, err
				})
			}()
		}
		close(start)
		for range writers {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}

	}
}

// The read of remembered targets probes the primary key whatever the
// table's size and statistics: the generic plan a connection caches while
// the table is small must not scan it whole once it has grown.
func TestRememberedRowsAreReadByKey(t *testing.T) {
	t.Parallel()
	s := open(t, `SELECT 1`)
	ctx := t.Context()
	if _, err := s.Pool.Exec(ctx, `INSERT INTO ref_targets (kind, id, alive) SELECT 'person', gen_random_uuid(), true FROM generate_series(1, 30)`); err != nil {
		t.Fatal(err)
	}
	conn, err := s.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `RESET plan_cache_mode`) //nolint:errcheck // the connection's own setting
	if _, err := conn.Exec(ctx, `PREPARE remembered(jsonb) AS `+refs.RowsSQL); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `DEALLOCATE remembered`) //nolint:errcheck // the connection's own statement
	plan := testkit.Explain(t, conn, `EXECUTE remembered('[{"kind": "person", "id": "00000000-0000-0000-0000-000000000000"}]')`)
	if strings.Contains(plan, "Seq Scan on ref_targets") || !strings.Contains(plan, "ref_targets_pkey") {
		t.Errorf("the generic plan does not probe the primary key:\n%s", plan)
	}
}

// A connection keeps the read's generic plan after its first calls, as
// PostgreSQL does for a statement whose custom plans look no cheaper:
// planned again on every call, it cost more to plan than to run.
func TestRememberedRowsAreNotPlannedOnEveryCall(t *testing.T) {
	t.Parallel()
	s := open(t, `SELECT 1`)
	ctx := t.Context()
	conn, err := s.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `PREPARE remembered(jsonb) AS `+refs.RowsSQL); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `DEALLOCATE remembered`) //nolint:errcheck // the connection's own statement
	for range 10 {
		if _, err := conn.Exec(ctx, `EXECUTE remembered('[{"kind": "person", "id": "00000000-0000-0000-0000-000000000000"}]')`); err != nil {
			t.Fatal(err)
		}
	}
	var generic, custom int
	if err := conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'remembered'`).
		Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	if generic == 0 || custom > 5 {
		t.Errorf("10 calls: %d generic plans, %d custom ones; want the generic plan kept after at most 5", generic, custom)
	}
}

// A target learnt from its owner's created event is trusted without an
// ask, and an event that comes after a delete's question changes nothing:
// the deleted target is never remembered alive again.
func TestLearntTargets(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	p := w.person(t)
	if err := w.referrer.Learn(ctx, []refs.Key{{Kind: "person", ID: p}, {Kind: "person", ID: p}}); err != nil {
		t.Fatal(err)
	}
	// The owner would say no now (a delete in progress): the write asks
	// nobody, so it succeeds.
	w.markDeleting(t, p, "1 minute")
	if _, err := w.createThingAskedFirst(ctx, p); err != nil {
		t.Fatalf("a learnt person was asked about: %v", err)
	}
	w.unmarkDeleting(t)

	// The created event of a person deleted since arrives late.
	q := w.person(t)
	if err := w.deletePerson(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := w.referrer.Learn(ctx, []refs.Key{{Kind: "person", ID: q}}); err != nil {
		t.Fatal(err)
	}
	for _, create := range []func(context.Context, uuid.UUID) (uuid.UUID, error){w.createThing, w.createThingAskedFirst} {
		if _, err := create(ctx, q); kindOf(err) != apperr.KindInvalid {
			t.Errorf("a deleted person learnt late: %v, want 422", err)
		}
	}
}

func TestCreatedTarget(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0190b2a4-7c3e-7000-8000-000000000001")
	now := time.Now().UTC().Format(time.RFC3339Nano)
	longAgo := time.Now().Add(-refs.LearnHorizon - time.Minute).UTC().Format(time.RFC3339Nano)
	for _, tc := range []struct {
		name, event string
		want        refs.Key
		ok, err     bool
	}{
		{"created", `{"type":"person.created","time":"` + now + `","subject":{"kind":"person","id":"` + id.String() + `"},"data":{}}`, refs.Key{Kind: "person", ID: id}, true, false},
		// Past the horizon the mark of a delete it must find may be forgotten.
		{"created long ago", `{"type":"person.created","time":"` + longAgo + `","subject":{"kind":"person","id":"` + id.String() + `"},"data":{}}`, refs.Key{}, false, false},
		{"created, no time", `{"type":"person.created","subject":{"kind":"person","id":"` + id.String() + `"},"data":{}}`, refs.Key{}, false, false},
		{"updated", `{"type":"person.updated","subject":{"kind":"person","id":"` + id.String() + `"}}`, refs.Key{}, false, false},
		{"deleted", `{"type":"person.deleted","subject":{"kind":"person","id":"` + id.String() + `"}}`, refs.Key{}, false, false},
		{"no subject", `{"type":".created"}`, refs.Key{}, false, false},
		{"a link's id", `{"type":"person_organization.created","time":"` + now + `","subject":{"kind":"person_organization","id":"a:b:c"}}`, refs.Key{}, false, true},
		{"not JSON", `{"type":`, refs.Key{}, false, true},
	} {
		got, ok, err := refs.CreatedTarget([]byte(tc.event))
		if got != tc.want || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("%s: %v, %v, %v; want %v, %v, error %v", tc.name, got, ok, err, tc.want, tc.ok, tc.err)
		}
	}
}

// The forgetting removes the rows of targets marked not alive longer ago
// than its horizon, in batches, and nothing else: not a target remembered
// alive however old, nor a mark younger than the horizon, which a write
// between its two reads may still be comparing against.
func TestForgetRemovesOnlyOldMarks(t *testing.T) {
	t.Parallel()
	s := open(t, `SELECT 1`)
	ctx := t.Context()
	after := refs.ForgetAfter(time.Minute)
	old := fmt.Sprintf("%d seconds", int(after.Seconds())+60)
	if _, err := s.Pool.Exec(ctx, `INSERT INTO ref_targets (kind, id, alive, changed_at)
		SELECT 'person', gen_random_uuid(), false, now() - $1::interval FROM generate_series(1, 2500)`, old); err != nil {
		t.Fatal(err)
	}
	kept := map[string]uuid.UUID{"alive and old": uuid.New(), "marked recently": uuid.New(), "alive": uuid.New()}
	for name, row := range map[string]struct {
		alive bool
		age   string
	}{"alive and old": {true, old}, "marked recently": {false, fmt.Sprintf("%d seconds", int(after.Seconds())-60)}, "alive": {true, "0 seconds"}} {
		if _, err := s.Pool.Exec(ctx, `INSERT INTO ref_targets (kind, id, alive, changed_at) VALUES ('person', $1, $2, now() - $3::interval)`,
			kept[name], row.alive, row.age); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := s.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	n, err := refs.ForgetTask(after).Drain(ctx, conn.Conn())
	if err != nil || n != 2500 {
		t.Fatalf("forgot %d rows (%v), want the 2,500 old marks", n, err)
	}
	var left []uuid.UUID
	rows, err := s.Pool.Query(ctx, `SELECT id FROM ref_targets`)
	if err != nil {
		t.Fatal(err)
	}
	if left, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
		t.Fatal(err)
	}
	if len(left) != len(kept) {
		t.Errorf("%d rows left, want %d", len(left), len(kept))
	}
	for name, id := range kept {
		if !slices.Contains(left, id) {
			t.Errorf("the row %s was forgotten", name)
		}
	}
	if after <= refs.LearnHorizon {
		t.Errorf("ForgetAfter %s is within the learning horizon %s: a late created event could bring a forgotten target back", after, refs.LearnHorizon)
	}
}
