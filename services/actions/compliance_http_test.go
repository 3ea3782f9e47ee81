package actions

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/compliance/projection"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// complianceWorld is the service with assets known to its projection.
type complianceWorld struct {
	world
	assetType uuid.UUID
}

func newComplianceWorld(t *testing.T) complianceWorld {
	return complianceWorld{world: newWorld(t), assetType: uuid.Must(uuid.NewV7())}
}

// asset makes a new asset exist at the assets stand-in and in the
// projection, as its asset.created event would.
func (w complianceWorld) asset(t *testing.T) string {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	w.StandIn("assets").Add("asset", id, nil)
	w.applyAsset(t, id, w.assetType, "created")
	return id.String()
}

// applyAsset applies an asset event to the projection as its consumer does.
func (w complianceWorld) applyAsset(t *testing.T, id, assetType uuid.UUID, op string) {
	t.Helper()
	p := projection.New(projection.NewStore(w.Built.Store))
	ev := projection.AssetEvent{ID: uuid.Must(uuid.NewV7()), AssetID: id, AssetTypeID: assetType, Op: op}
	if err := p.ApplyAsset(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

// rows reads every page of /compliance?query, following Link, with pages
// of limit.
func (w complianceWorld) rows(t *testing.T, query string, limit int) []map[string]any {
	t.Helper()
	path := "/compliance?" + query
	if limit > 0 {
		path += fmt.Sprintf("&limit=%d", limit)
	}
	var out []map[string]any
	for range 1000 {
		r := w.Call(200, "GET", path, w.RO, nil)
		for _, item := range r.List() {
			out = append(out, item)
		}
		next := r.Header.Get("Link")
		if next == "" {
			return out
		}
		path = strings.TrimSuffix(strings.TrimPrefix(strings.Split(next, ";")[0], "<"), ">")
	}
	t.Fatal("no last page")
	return nil
}

// summary is rows as "asset#type=state(last action)" with assets named by
// names, for comparing with a table.
func summary(rows []map[string]any, names map[string]string) []string {
	var out []string
	for _, r := range rows {
		last := "-"
		if id, ok := r["last_action_id"].(string); ok {
			last = names[id]
		}
		out = append(out, fmt.Sprintf("%s#%s=%s(%s)", names[r["asset_id"].(string)], r["action_type"], r["state"], last))
	}
	return out
}

func TestHTTPCompliance(t *testing.T) {
	w := newComplianceWorld(t)
	today := model.Today()
	day := func(days int) string { return model.DateOf(today.Time().AddDate(0, 0, days)).String() }
	names := map[string]string{}
	a1, a2, a3 := w.asset(t), w.asset(t), w.asset(t)
	names[a1], names[a2], names[a3] = "a1", "a2", "a3"
	act := func(name, asset, actionType string, extra map[string]any) string {
		body := map[string]any{"asset_id": asset, "action_type": actionType, "performed_at": day(-100), "status_ok": true,
			"status_finalized": true, "status_valid_through": day(200)}
		for k, v := range extra {
			body[k] = v
		}
		id := w.Call(201, "POST", "/actions", w.RW, body).JSON()["id"].(string)
		names[id] = name
		return id
	}
	// a1: nothing at all. a2: an overdue expert control superseded by a due
	// one; a failed maintenance; an open-ended pre-use inspection; a repair
	// not finalized. a3: two expert controls on the same day (the later
	// created wins), valid.
	act("old", a2, "expert_control", map[string]any{"performed_at": day(-400), "status_valid_through": day(-35)})
	due := act("due", a2, "expert_control", map[string]any{"performed_at": day(-5), "status_valid_through": day(10)})
	act("failed", a2, "maintenance", map[string]any{"status_ok": false})
	act("open", a2, "pre_use_inspection", map[string]any{"status_valid_through": nil})
	act("draft", a2, "repair", map[string]any{"status_finalized": false})
	act("first", a3, "expert_control", map[string]any{"performed_at": day(-1)})
	act("second", a3, "expert_control", map[string]any{"performed_at": day(-1), "status_valid_through": day(300)})

	want := []string{
		"a1#expert_control=never(-)", "a1#maintenance=never(-)", "a1#pre_use_inspection=never(-)", "a1#repair=never(-)",
		"a2#expert_control=due(due)", "a2#maintenance=failed(failed)", "a2#pre_use_inspection=open_ended(open)", "a2#repair=never(-)",
		"a3#expert_control=valid(second)", "a3#maintenance=never(-)", "a3#pre_use_inspection=never(-)", "a3#repair=never(-)",
	}
	all := w.rows(t, "", 0)
	if got := summary(all, names); !slices.Equal(got, want) {
		t.Fatalf("rows:\n%v\nwant\n%v", got, want)
	}
	row := all[4]
	if row["asset_type_id"] != w.assetType.String() || row["valid_through"] != day(10) || row["last_performed_at"] != day(-5) ||
		row["status_ok"] != true || row["status_use_ok"] != true {
		t.Errorf("a due row: %v", row)
	}
	if all[0]["valid_through"] != nil || all[0]["last_performed_at"] != nil || all[0]["status_ok"] != nil {
		t.Errorf("a never row: %v", all[0])
	}

	// Every page size gives the same rows, in the same order.
	for _, limit := range []int{1, 3, 4, 5} {
		if got := summary(w.rows(t, "", limit), names); !slices.Equal(got, want) {
			t.Errorf("pages of %d:\n%v", limit, got)
		}
	}

	// Each state filter keeps exactly the rows in that state, alone, with
	// others and with every type chosen.
	for _, state := range compliance.States {
		var wanted []string
		for _, s := range want {
			if strings.Contains(s, "="+state+"(") {
				wanted = append(wanted, s)
			}
		}
		for _, limit := range []int{0, 1} {
			if got := summary(w.rows(t, "state="+state, limit), names); !slices.Equal(got, wanted) {
				t.Errorf("state=%s (limit %d): %v, want %v", state, limit, got, wanted)
			}
		}
	}
	filters := []struct{ query, want string }{
		{"state=never&state=valid&action_type=expert_control", "a1#expert_control=never(-) a3#expert_control=valid(second)"},
		{"state=failed&state=due&state=open_ended", "a2#expert_control=due(due) a2#maintenance=failed(failed) a2#pre_use_inspection=open_ended(open)"},
		{"action_type=repair&action_type=maintenance&asset_id=" + a2, "a2#maintenance=failed(failed) a2#repair=never(-)"},
		{"asset_type_id=" + uuid.NewString(), ""},
		{"asset_type_id=" + w.assetType.String() + "&action_type=expert_control&state=due", "a2#expert_control=due(due)"},
		// due_before moves what is due; overdue stays against today.
		{"action_type=expert_control&state=due&due_before=" + day(400), "a2#expert_control=due(due) a3#expert_control=due(second)"},
		{"action_type=expert_control&due_before=" + day(-1000), "a1#expert_control=never(-) a2#expert_control=valid(due) a3#expert_control=valid(second)"},
		{"state=due&due_before=" + day(-1000), ""},
	}
	for _, f := range filters {
		for _, limit := range []int{0, 1} {
			if got := strings.Join(summary(w.rows(t, f.query, limit), names), " "); got != f.want {
				t.Errorf("%s (limit %d): %s, want %s", f.query, limit, got, f.want)
			}
		}
	}

	// Deleting the latest brings back the one before it; unfinalizing it
	// leaves none; a deleted asset disappears.
	w.Call(204, "DELETE", "/actions/"+due, w.RW, nil)
	overdue := "a2#expert_control=overdue(old)"
	if got := summary(w.rows(t, "asset_id="+a2+"&action_type=expert_control", 0), names); !slices.Equal(got, []string{overdue}) {
		t.Errorf("after deleting the latest: %v", got)
	}
	if got := summary(w.rows(t, "state=overdue&action_type=expert_control", 0), names); !slices.Equal(got, []string{overdue}) {
		t.Errorf("overdue: %v", got)
	}
	old := w.rows(t, "asset_id="+a2+"&action_type=expert_control", 0)[0]["last_action_id"].(string)
	w.Call(200, "PATCH", "/actions/"+old, w.RW, map[string]any{"status_finalized": false})
	if got := summary(w.rows(t, "asset_id="+a2+"&action_type=expert_control", 0), names); !slices.Equal(got, []string{"a2#expert_control=never(-)"}) {
		t.Errorf("after unfinalizing: %v", got)
	}
	// Moving an action to another asset changes both.
	w.Call(200, "PATCH", "/actions/"+old, w.RW, map[string]any{"status_finalized": true, "asset_id": a1})
	if got := summary(w.rows(t, "action_type=expert_control", 0), names); !slices.Equal(got,
		[]string{"a1#expert_control=overdue(old)", "a2#expert_control=never(-)", "a3#expert_control=valid(second)"}) {
		t.Errorf("after moving: %v", got)
	}
	w.applyAsset(t, uuid.MustParse(a3), w.assetType, "deleted")
	if got := w.rows(t, "asset_id="+a3, 0); len(got) != 0 {
		t.Errorf("a deleted asset's rows: %v", got)
	}

	w.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "unknown state", Method: "GET", Path: "/compliance?state=unknown", ReadOnly: true, Status: 422, Fields: []string{"state"}},
		{Name: "one unknown state among known ones", Method: "GET", Path: "/compliance?state=due&state=late", ReadOnly: true, Status: 422, Fields: []string{"state"}},
		{Name: "unknown action type", Method: "GET", Path: "/compliance?action_type=unknown", ReadOnly: true, Status: 422, Fields: []string{"action_type"}},
		{Name: "due_before not a calendar date", Method: "GET", Path: "/compliance?due_before=2026-02-30", ReadOnly: true, Status: 422, Fields: []string{"due_before"}},
		{Name: "due_before not a date", Method: "GET", Path: "/compliance?due_before=" + url.QueryEscape("next week"), ReadOnly: true, Status: 422, Fields: []string{"due_before"}},
		{Name: "due_before twice", Method: "GET", Path: "/compliance?due_before=2026-01-01&due_before=2026-01-02", ReadOnly: true, Status: 400},
		{Name: "asset_id not a UUID", Method: "GET", Path: "/compliance?asset_id=x", ReadOnly: true, Status: 400},
		{Name: "limit zero", Method: "GET", Path: "/compliance?limit=0", ReadOnly: true, Status: 400},
		{Name: "a cursor of other filters", Method: "GET", Path: "/compliance?state=never&cursor=" + model.EncodeCursor(uuid.New(), "state=due"), ReadOnly: true, Status: 400},
	})
}
