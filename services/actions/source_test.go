package actions

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// The sync key: (source_system, source_reference), when both are given,
// names one action; a second create is a 409 naming the first.
func TestHTTPActionSourceKey(t *testing.T) {
	w := newWorld(t)
	sourced := func(ref string, extra map[string]any) map[string]any {
		body := w.action(map[string]any{"source_system": "inspection-app", "source_reference": ref})
		for k, v := range extra {
			body[k] = v
		}
		return body
	}
	first := w.Call(201, "POST", "/actions", w.RW, sourced("k-1", nil)).JSON()["id"].(string)

	dup := w.Call(409, "POST", "/actions", w.Other, sourced(" k-1 ", map[string]any{"performed_at": "2025-04-01"})).JSON()
	if dup["type"] != httpx.ProblemTypePrefix+"duplicate" || dup["existing_id"] != first {
		t.Errorf("a second create of the pair: %v", dup)
	}
	// One part alone is no key; the same reference in another system is
	// another key.
	w.Call(201, "POST", "/actions", w.RW, w.action(map[string]any{"source_system": "inspection-app", "source_reference": nil}))
	w.Call(201, "POST", "/actions", w.RW, w.action(map[string]any{"source_system": nil, "source_reference": "k-1"}))
	w.Call(201, "POST", "/actions", w.RW, sourced("k-1", map[string]any{"source_system": "other-app"}))

	// A patch onto a held pair is the same 409, and changes nothing.
	second := w.Call(201, "POST", "/actions", w.RW, sourced("k-2", nil)).JSON()["id"].(string)
	dup = w.Call(409, "PATCH", "/actions/"+second, w.RW, map[string]any{"source_reference": "k-1"}).JSON()
	if dup["existing_id"] != first {
		t.Errorf("a patch onto a held pair: %v", dup)
	}
	if got := w.Call(200, "GET", "/actions/"+second, w.RO, nil).JSON()["source_reference"]; got != "k-2" {
		t.Errorf("after the refused patch source_reference = %v", got)
	}
	// Deleting the holder frees the pair.
	w.Call(204, "DELETE", "/actions/"+second, w.RW, nil)
	w.Call(201, "POST", "/actions", w.RW, sourced("k-2", nil))
}

func TestHTTPFindAction(t *testing.T) {
	w := newWorld(t)
	body := w.action(map[string]any{"source_system": "erp", "source_reference": "wo-7"})

	// A find without create is a read: the read-only client may ask it.
	w.Call(404, "POST", "/actions/find", w.RO, map[string]any{"source_system": "erp", "source_reference": "wo-7"})
	w.Call(403, "POST", "/actions/find?create=true", w.RO, body)
	problem := w.Call(422, "POST", "/actions/find", w.RO, map[string]any{"source_system": " "})
	if got := strings.Join(problem.Fields(), ","); got != "source_system,source_reference" {
		t.Errorf("a find without its pair names %s", got)
	}
	w.Call(422, "POST", "/actions/find?create=true", w.RW, map[string]any{"source_system": "erp", "source_reference": "wo-7"})

	created := w.Call(201, "POST", "/actions/find?create=true", w.RW, body)
	id := created.JSON()["id"].(string)
	if created.Header.Get("Location") != "/actions/"+id {
		t.Errorf("Location %q", created.Header.Get("Location"))
	}
	// Again, a month later, with other members: the same action, 200.
	body["performed_at"] = "2025-05-01"
	again := w.Call(200, "POST", "/actions/find?create=true", w.Other, body).JSON()
	if again["id"] != id || again["performed_at"] != "2025-03-14" {
		t.Errorf("find-or-create of a recorded pair: %v", again)
	}
	if found := w.Call(200, "POST", "/actions/find", w.RO, map[string]any{"source_system": "erp", "source_reference": " wo-7 "}).JSON(); found["id"] != id {
		t.Errorf("find: %v", found)
	}

	// Fifty concurrent find-or-creates of a new pair record one action.
	registry := refs.New("actions", w.Built.Store, w.Built.Deps.Peers)
	svc := NewService(NewStore(w.Built.Store, registry), registry, Tenancy{Seen: access.New(w.Built.Store, nil)})
	ctx, by := t.Context(), servicetest.Caller("rw-client")
	race := ActionInput{AssetID: model.ID(uuid.MustParse(w.asset)), ActionType: "repair", PerformedAt: date("2025-03-14"),
		SourceSystem: new("erp"), SourceReference: new("wo-8")}
	servicetest.CreatesOnce(t, 50, func(int) (uuid.UUID, bool, error) {
		a, created, err := svc.FindAction(ctx, by, race, true)
		return a.ID, created, err
	})
	if n := len(w.Call(200, "GET", "/actions?source_system=erp&source_reference=wo-8", w.RO, nil).List()); n != 1 {
		t.Errorf("%d actions hold the raced pair", n)
	}
}

// A batch's items: without find, a held pair is the item's 409; with it,
// the holder's id (200), whether it was recorded before or by an earlier
// item of the same batch.
func TestHTTPBatchFindBySource(t *testing.T) {
	w := newWorld(t)
	held := w.Call(201, "POST", "/actions", w.RW, w.action(map[string]any{"source_system": "erp", "source_reference": "held"})).JSON()["id"].(string)
	item := func(ref string) map[string]any {
		if ref == "" {
			return w.action(map[string]any{"source_system": nil, "source_reference": nil})
		}
		return w.action(map[string]any{"source_system": "erp", "source_reference": ref})
	}
	results := func(r []map[string]any) string {
		var out []string
		for _, res := range r {
			out = append(out, fmt.Sprint(res["status"]))
		}
		return strings.Join(out, ",")
	}
	batch := map[string]any{"items": []any{item("held"), item("new"), item("new"), item(""), item("held")}}

	plain := w.Call(200, "POST", "/actions/batch", w.RW, batch).List()
	if got := results(plain); got != "409,201,409,201,409" {
		t.Fatalf("without find: %s (%v)", got, plain)
	}
	newID := plain[1]["id"]
	for i, want := range map[int]any{0: held, 2: newID, 4: held} {
		if got := plain[i]["problem"].(map[string]any)["existing_id"]; got != want {
			t.Errorf("item %d names %v, want %v", i, got, want)
		}
	}

	batch = map[string]any{"items": []any{item("held"), item("newer"), item("newer"), item(""), item("new"),
		w.action(map[string]any{"source_system": "erp", "source_reference": "bad", "performed_at": "2025-02-30"}), item("bad")}}
	found := w.Call(200, "POST", "/actions/batch?find=true", w.RW, batch).List()
	if got := results(found); got != "200,201,200,201,200,422,201" {
		t.Fatalf("with find: %s (%v)", got, found)
	}
	if found[0]["id"] != held || found[2]["id"] != found[1]["id"] || found[4]["id"] != newID {
		t.Errorf("with find: %v", found)
	}
	w.Call(400, "POST", "/actions/batch?find=yes", w.RW, batch)
}

// A database from before the key may hold several actions of one pair:
// the migration keeps them all, the oldest holding the key.
func TestMigrationKeepsDuplicateSources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ids := []uuid.UUID{store.NewID(), store.NewID(), store.NewID(), store.NewID()}
	pool := migrateAcross(t, "003", func(old *store.Pool) {
		for i, ref := range []string{"dup", "dup", "dup", "single"} {
			if _, err := old.Exec(ctx, `INSERT INTO actions (id, asset_id, action_type, performed_at, source_system, source_reference,
			created_by, updated_by) VALUES ($1, $2, 'repair', '2024-01-01', 'legacy', $3, 'x', 'x')`, ids[i], uuid.New(), ref); err != nil {
				t.Fatal(err)
			}
		}
	})
	marked := map[uuid.UUID]bool{}
	rows, err := pool.Query(ctx, `SELECT id, source_duplicate FROM actions`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		var dup bool
		if err := rows.Scan(&id, &dup); err != nil {
			t.Fatal(err)
		}
		marked[id] = dup
	}
	if len(marked) != 4 || marked[ids[0]] || !marked[ids[1]] || !marked[ids[2]] || marked[ids[3]] {
		t.Fatalf("after the migration: %v (want all four kept, the two later dup marked)", marked)
	}
	st := &Store{Store: store.New(pool, nil)}
	holder, err := st.ActionBySource(ctx, SourceKey{"legacy", "dup"})
	if err != nil || holder.ID != ids[0] {
		t.Errorf("find by the duplicated pair: %v, %v; want the oldest", holder.ID, err)
	}
}

// A writer that inserts actions without claiming their pairs (an
// operator's SQL, a bulk copy) has them claimed by the statement's
// trigger; a statement holding one new pair twice fails whole; an update
// that moves a pair moves its claim; a delete frees it.
func TestPairsOfWritersThatDoNotClaimAreClaimed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := migrateAcross(t, "016", func(*store.Pool) {})
	claimOf := func(ref string) (holder uuid.UUID, n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT COALESCE(min(action_id::text), '00000000-0000-0000-0000-000000000000')::uuid, count(*)
			FROM action_source_keys WHERE source_system = 'ops' AND source_reference = $1`, ref).Scan(&holder, &n); err != nil {
			t.Fatal(err)
		}
		return holder, n
	}
	insert := `INSERT INTO actions (id, asset_id, action_type, performed_at, source_system, source_reference, created_by, updated_by)
		SELECT id, gen_random_uuid(), 'repair', date '2025-01-01', CASE WHEN ref IS NOT NULL THEN 'ops' END, ref, 'x', 'x'
		FROM unnest($1::uuid[], $2::text[]) AS t(id, ref)`
	ids := []uuid.UUID{store.NewID(), store.NewID(), store.NewID()}
	if _, err := pool.Exec(ctx, insert, ids, []*string{new("a"), new("b"), nil}); err != nil {
		t.Fatal(err)
	}
	for i, ref := range []string{"a", "b"} {
		if holder, n := claimOf(ref); n != 1 || holder != ids[i] {
			t.Errorf("pair %s: %d claims, held by %v; want one, by %v", ref, n, holder, ids[i])
		}
	}
	twice := []uuid.UUID{store.NewID(), store.NewID()}
	if _, err := pool.Exec(ctx, insert, twice, []*string{new("c"), new("c")}); err == nil {
		t.Error("one statement inserting a pair twice succeeded")
	}
	if _, n := claimOf("c"); n != 0 {
		t.Errorf("the failed statement left %d claims of its pair", n)
	}
	if _, err := pool.Exec(ctx, `UPDATE actions SET reference = 'r' WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE actions SET source_reference = 'd' WHERE id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	if holder, n := claimOf("a"); n != 1 || holder != ids[0] {
		t.Errorf("after an update of another column, pair a: %d claims by %v", n, holder)
	}
	if _, n := claimOf("b"); n != 0 {
		t.Errorf("after its pair moved, pair b: %d claims", n)
	}
	if holder, n := claimOf("d"); n != 1 || holder != ids[1] {
		t.Errorf("the moved pair d: %d claims by %v, want one by %v", n, holder, ids[1])
	}
	if _, err := pool.Exec(ctx, `DELETE FROM actions WHERE id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, n := claimOf("d"); n != 0 {
		t.Errorf("after its action's delete, pair d: %d claims", n)
	}
}
