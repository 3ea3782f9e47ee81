package actions

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assetregistry/registry/services/actions/compliance/roller"
)

// The four action types are always listed; an admin adds others (a name
// of the right shape, once), and an action or a plan may name one from the
// next call on; a name nobody added is a 422 on action_type.
func TestHTTPActionTypes(t *testing.T) {
	w := newComplianceWorld(t)
	names := func() []string {
		var out []string
		for _, item := range w.Call(200, "GET", "/action_types", w.RO, nil).List() {
			out = append(out, item["name"].(string))
		}
		return out
	}
	if got := names(); !slices.Equal(got, ActionTypes) {
		t.Fatalf("listed %v, want the four %v", got, ActionTypes)
	}
	w.Call(422, "POST", "/actions", w.RW, w.action(map[string]any{"action_type": "load_test"}))

	body := map[string]any{"name": "load_test", "description": "A proof load test."}
	w.Call(403, "POST", "/action_types", w.RW, body)
	created := w.Call(201, "POST", "/action_types", w.Admin, body)
	if got := created.JSON(); got["name"] != "load_test" || got["description"] != "A proof load test." || got["created_by"] != "admin-client" ||
		created.Header.Get("Location") != "/action_types" {
		t.Fatalf("created %s (Location %q)", created.Raw, created.Header.Get("Location"))
	}
	w.Call(409, "POST", "/action_types", w.Admin, map[string]any{"name": "load_test"})
	for _, bad := range []string{"x", "Load_test", "1st", "load-test", strings.Repeat("a", 65), ""} {
		r := w.Call(422, "POST", "/action_types", w.Admin, map[string]any{"name": bad})
		if !slices.Contains(r.Fields(), "name") {
			t.Errorf("name %q: fields %v", bad, r.Fields())
		}
	}
	if got := names(); !slices.Equal(got, append(slices.Clone(ActionTypes), "load_test")) {
		t.Errorf("listed %v after the add", got)
	}
	page := w.Call(200, "GET", "/action_types?limit=2", w.RO, nil)
	if len(page.List()) != 2 || page.Header.Get("Link") == "" {
		t.Errorf("a page of 2: %s, Link %q", page.Raw, page.Header.Get("Link"))
	}

	action := w.Call(201, "POST", "/actions", w.RW, w.action(map[string]any{"action_type": "load_test"})).JSON()
	if action["action_type"] != "load_test" {
		t.Errorf("action of the added type: %v", action)
	}
	r := w.Call(422, "POST", "/actions", w.RW, w.action(map[string]any{"action_type": "nobody_added_this"}))
	if !slices.Contains(r.Fields(), "action_type") {
		t.Errorf("unknown type: fields %v", r.Fields())
	}
	w.Call(422, "PATCH", "/actions/"+action["id"].(string), w.RW, map[string]any{"action_type": "nobody_added_this"})
	w.Call(200, "PATCH", "/actions/"+action["id"].(string), w.RW, map[string]any{"action_type": "repair"})
	if list := w.Call(200, "GET", "/actions?action_type=repair", w.RO, nil).List(); len(list) != 1 {
		t.Errorf("by type: %v", list)
	}
	w.Call(422, "GET", "/actions?action_type=nobody_added_this", w.RO, nil)
	w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "load_test", "interval": "P1Y", "first_due_after": "P0D"})
	w.Call(422, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "nobody_added_this", "interval": "P1Y", "first_due_after": "P0D"})
}

// Concurrent adds of one name add it once.
func TestHTTPActionTypeAddedOnce(t *testing.T) {
	w := newWorld(t)
	statuses := make([]int, 10)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = w.Do("POST", "/action_types", w.Admin, map[string]any{"name": "ndt"}).Status
		}()
	}
	wg.Wait()
	slices.Sort(statuses)
	if statuses[0] != 201 || statuses[1] != 409 || statuses[9] != 409 {
		t.Errorf("statuses %v, want one 201 and the rest 409", statuses)
	}
}

// /compliance keeps the four rows of every asset and has a row of an added
// type only where a plan of it covers the asset or an action of it exists.
func TestHTTPComplianceOfAddedTypes(t *testing.T) {
	w := newComplianceWorld(t)
	a1, a2, a3 := w.asset(t), w.asset(t), w.asset(t)
	names := map[string]string{a1: "a1", a2: "a2", a3: "a3"}
	for _, name := range []string{"load_test", "ndt", "calibration"} {
		w.Call(201, "POST", "/action_types", w.Admin, map[string]any{"name": name})
	}
	// a2 has a finalized load test, a3 a draft ndt; a plan of calibration
	// covers a1's asset type (every asset's here, as all share one type).
	w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": a2, "action_type": "load_test", "performed_at": "2025-01-01",
		"status_ok": true, "status_finalized": true})
	w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": a3, "action_type": "ndt", "performed_at": "2025-01-01",
		"status_finalized": false})
	w.StandIn("assets").Add("asset_type", w.assetType, nil)
	w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "calibration", "asset_type_id": w.assetType.String(),
		"interval": "P1Y", "first_due_after": "P10Y"})

	var got []string
	for _, r := range w.rows(t, "", 3) {
		got = append(got, names[r["asset_id"].(string)]+"#"+r["action_type"].(string)+"="+r["state"].(string))
	}
	want := []string{
		"a1#calibration=never", "a1#expert_control=never", "a1#maintenance=never", "a1#pre_use_inspection=never", "a1#repair=never",
		"a2#calibration=never", "a2#expert_control=never", "a2#load_test=open_ended", "a2#maintenance=never", "a2#pre_use_inspection=never", "a2#repair=never",
		"a3#calibration=never", "a3#expert_control=never", "a3#maintenance=never", "a3#ndt=never", "a3#pre_use_inspection=never", "a3#repair=never",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows in pages of 3:\n%v\nwant\n%v", got, want)
	}
	only := w.rows(t, "action_type=load_test", 0)
	if len(only) != 1 || only[0]["asset_id"] != a2 {
		t.Errorf("load_test rows: %v", only)
	}
	w.Call(422, "GET", "/compliance?action_type=nobody_added_this", w.RO, nil)
}

// The roller announces an added type's rows as it does the four's: a
// finalized action of it is a transition of that type's row.
func TestTransitionsOfAddedTypes(t *testing.T) {
	w := newComplianceWorld(t)
	roller := roller.New(roller.NewStore(w.Built.Store), time.UTC)
	a := w.asset(t)
	w.Call(201, "POST", "/action_types", w.Admin, map[string]any{"name": "load_test"})
	if err := roller.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	w.Events(t)
	w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": a, "action_type": "load_test", "performed_at": "2025-01-01",
		"status_ok": false, "status_finalized": true})
	if err := roller.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := w.transitions(t); len(got) != 1 || got[0] != "load_test:never>failed" {
		t.Fatalf("transitions %v, want load_test:never>failed", got)
	}
}
