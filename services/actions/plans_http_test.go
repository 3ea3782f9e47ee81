package actions

import (
	"crypto/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/plans"
)

// Plans are an admin's to write and everyone's to read; a plan's periods
// are ISO 8601 durations; one plan per action type and asset type (and one
// for every asset type).
func TestHTTPInspectionPlans(t *testing.T) {
	w := newComplianceWorld(t)
	w.StandIn("assets").Add("asset_type", w.assetType, nil)
	body := map[string]any{"action_type": "expert_control", "asset_type_id": w.assetType.String(), "interval": "P12M",
		"first_due_after": "P30D"}

	w.Call(403, "POST", "/inspection_plans", w.RW, body)
	created := w.Call(201, "POST", "/inspection_plans", w.Admin, body)
	plan := created.JSON()
	path := "/inspection_plans/" + plan["id"].(string)
	if created.Header.Get("Location") != path || plan["due_soon"] != plans.DefaultDueSoon || plan["interval"] != "P12M" ||
		plan["first_due_after"] != "P30D" || plan["created_by"] != "admin-client" {
		t.Fatalf("created: %s (Location %q)", created.Raw, created.Header.Get("Location"))
	}
	if got := w.Call(200, "GET", path, w.RO, nil); string(got.Raw) != string(created.Raw) {
		t.Errorf("read %s, created %s", got.Raw, created.Raw)
	}
	dup := w.Call(409, "POST", "/inspection_plans", w.Admin, body).JSON()
	if dup["existing_id"] != plan["id"] {
		t.Errorf("duplicate plan: %v", dup)
	}
	every := w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "expert_control",
		"interval": "P1Y", "first_due_after": "P0D", "due_soon": "P60D"}).JSON()
	if every["asset_type_id"] != nil {
		t.Errorf("a plan for every asset type: %v", every)
	}
	w.Call(409, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "expert_control", "interval": "P6M",
		"first_due_after": "P0D"})

	// Lists: every reader, filters by action type and asset type.
	if n := len(w.Call(200, "GET", "/inspection_plans", w.RO, nil).List()); n != 2 {
		t.Errorf("%d plans, want 2", n)
	}
	if got := w.Call(200, "GET", "/inspection_plans?asset_type_id="+w.assetType.String(), w.RO, nil).List(); len(got) != 1 || got[0]["id"] != plan["id"] {
		t.Errorf("plans of the asset type: %v", got)
	}
	if n := len(w.Call(200, "GET", "/inspection_plans?action_type=repair", w.RO, nil).List()); n != 0 {
		t.Errorf("%d repair plans, want none", n)
	}
	presets := w.Call(200, "GET", "/inspection_plans/presets", w.RO, nil).List()
	if len(presets) != len(plans.Presets) || presets[0]["interval"] == nil {
		t.Errorf("presets: %v", presets)
	}

	// Patches: an admin's; due_soon null is its default again.
	w.Call(403, "PATCH", path, w.RW, map[string]any{"interval": "P6M"})
	patched := w.Call(200, "PATCH", path, w.Admin, map[string]any{"interval": "P6M", "due_soon": "P14D"}).JSON()
	if patched["interval"] != "P6M" || patched["due_soon"] != "P14D" || patched["first_due_after"] != "P30D" {
		t.Errorf("patched: %v", patched)
	}
	if got := w.Call(200, "PATCH", path, w.Admin, map[string]any{"due_soon": nil}).JSON(); got["due_soon"] != plans.DefaultDueSoon {
		t.Errorf("due_soon reset: %v", got)
	}
	w.Call(409, "PATCH", path, w.Admin, map[string]any{"asset_type_id": nil})

	// Bad input changes nothing.
	before := w.Call(200, "GET", path, w.RO, nil).Raw
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"action_type": "expert_control", "interval": "12 months", "first_due_after": "P0D"}, "interval"},
		{map[string]any{"action_type": "expert_control", "interval": "P0D", "first_due_after": "P0D"}, "interval"},
		{map[string]any{"action_type": "expert_control", "interval": "PT12H", "first_due_after": "P0D"}, "interval"},
		{map[string]any{"action_type": "expert_control", "interval": "P1Y"}, "first_due_after"},
		{map[string]any{"action_type": "audit", "interval": "P1Y", "first_due_after": "P0D"}, "action_type"},
		{map[string]any{"action_type": "repair", "interval": "P1Y", "first_due_after": "P0D", "due_soon": "-P1D"}, "due_soon"},
		{map[string]any{"action_type": "repair", "interval": "P1Y", "first_due_after": "P0D", "asset_type_id": uuid.NewString()}, "asset_type_id"},
	} {
		problem := w.Call(422, "POST", "/inspection_plans", w.Admin, bad.body).JSON()
		if !strings.Contains(string(must(problem["errors"])), `"`+bad.field+`"`) {
			t.Errorf("%v: %v, want a problem naming %s", bad.body, problem, bad.field)
		}
	}
	w.Call(422, "PATCH", path, w.Admin, map[string]any{"interval": "P1.5Y"})
	if after := w.Call(200, "GET", path, w.RO, nil).Raw; string(after) != string(before) {
		t.Errorf("a refused patch changed the plan: %s", after)
	}

	w.Call(403, "DELETE", path, w.RW, nil)
	w.Call(204, "DELETE", path, w.Admin, nil)
	w.Call(404, "GET", path, w.RO, nil)
}

// must is v as JSON text, for looking into a problem's errors.
func must(v any) string {
	var b strings.Builder
	for _, e := range asList(v) {
		if m, ok := e.(map[string]any); ok {
			b.WriteString(`"` + m["field"].(string) + `" `)
		}
	}
	return b.String()
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// registeredAgo is a new asset whose id (UUIDv7) says it was registered
// days ago, known to the projection as the world's asset type.
func (w complianceWorld) registeredAgo(t *testing.T, days int) string {
	t.Helper()
	id := compliance.UUIDAt(time.Now().AddDate(0, 0, -days))
	if _, err := rand.Read(id[9:]); err != nil {
		t.Fatal(err)
	}
	w.StandIn("assets").Add("asset", id, nil)
	w.applyAsset(t, id, w.assetType, "created")
	return id.String()
}

// With a plan, a row's due date and state come from the plan where the
// action gives no date; a never-inspected asset is due its first action at
// registration + the plan's delay; a plan's change is in the next answer;
// a type without a plan answers as it always did.
func TestHTTPComplianceWithPlans(t *testing.T) {
	w := newComplianceWorld(t)
	w.StandIn("assets").Add("asset_type", w.assetType, nil)
	today := model.Today()
	day := func(days int) string { return model.DateOf(today.Time().AddDate(0, 0, days)).String() }
	names := map[string]string{}
	// Asset order is registration order: old (registered 400 days ago),
	// recent (10 days ago), fresh (today).
	old, recent, fresh := w.registeredAgo(t, 400), w.registeredAgo(t, 10), w.asset(t)
	names[old], names[recent], names[fresh] = "old", "recent", "fresh"
	act := func(name, asset string, extra map[string]any) {
		body := map[string]any{"asset_id": asset, "action_type": "expert_control", "performed_at": day(-100), "status_ok": true,
			"status_finalized": true}
		for k, v := range extra {
			body[k] = v
		}
		names[w.Call(201, "POST", "/actions", w.RW, body).JSON()["id"].(string)] = name
	}
	act("open", old, map[string]any{"performed_at": day(-300)})                                    // no date of its own
	act("dated", recent, map[string]any{"performed_at": day(-5), "status_valid_through": day(10)}) // its own date wins

	rows := func(query string) []string {
		var out []string
		for _, limit := range []int{0, 1} {
			got := w.rows(t, "action_type=expert_control&"+query, limit)
			s := summary(got, names)
			for i, r := range got {
				due, _ := r["due_date"].(string)
				s[i] += "@" + due
			}
			if limit == 0 {
				out = s
			} else if !slices.Equal(s, out) {
				t.Errorf("%s: pages of 1 %v, one page %v", query, s, out)
			}
		}
		return out
	}
	check := func(when, query string, want ...string) {
		t.Helper()
		if got := rows(query); !slices.Equal(got, want) {
			t.Errorf("%s, %s:\n%v\nwant\n%v", when, query, got, want)
		}
	}
	// No plan: as always; due_date is valid_through.
	check("without a plan", "", "old#expert_control=open_ended(open)@", "recent#expert_control=due(dated)@"+day(10),
		"fresh#expert_control=never(-)@")

	// A plan for every asset type: every 12 months, the first 30 days
	// after registration.
	plan := w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "expert_control",
		"interval": "P12M", "first_due_after": "P30D"}).JSON()
	dueOpen := mustPeriod(t, "P12M").AddTo(date(day(-300))).String()
	check("every 12 months", "", "old#expert_control=valid(open)@"+dueOpen, "recent#expert_control=due(dated)@"+day(10),
		"fresh#expert_control=never(-)@"+mustPeriod(t, "P30D").AddTo(today).String())
	check("every 12 months", "state=valid", "old#expert_control=valid(open)@"+dueOpen)
	check("every 12 months", "state=never&state=overdue", "fresh#expert_control=never(-)@"+mustPeriod(t, "P30D").AddTo(today).String())

	// Every 6 months: the open-ended inspection is overdue, and so is a
	// never-inspected asset past its first due date.
	w.Call(200, "PATCH", "/inspection_plans/"+plan["id"].(string), w.Admin, map[string]any{"interval": "P6M", "first_due_after": "P0D"})
	check("every 6 months", "state=overdue", "old#expert_control=overdue(open)@"+mustPeriod(t, "P6M").AddTo(date(day(-300))).String())
	three := w.registeredAgo(t, 3)
	names[three] = "three"
	if got := rows("state=overdue"); len(got) != 2 || !strings.Contains(got[1], "=overdue(-)@"+day(-3)) {
		t.Errorf("a never-inspected asset registered 3 days ago under P0D: %v", got)
	}
	check("every 6 months", "state=never", "fresh#expert_control=never(-)@"+day(0))

	// The asset type's own plan wins over the plan for every asset type,
	// and its due-soon window is the default due_before.
	w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "expert_control", "asset_type_id": w.assetType.String(),
		"interval": "P18M", "first_due_after": "P1Y", "due_soon": "P1Y"})
	dueOpen = mustPeriod(t, "P18M").AddTo(date(day(-300))).String()
	check("the type's own plan", "", "old#expert_control=due(open)@"+dueOpen, "recent#expert_control=due(dated)@"+day(10),
		"three#expert_control=never(-)@"+mustPeriod(t, "P1Y").AddTo(date(day(-3))).String(), "fresh#expert_control=never(-)@"+mustPeriod(t, "P1Y").AddTo(today).String())
	check("the type's own plan, due_before given", "due_before="+day(5)+"&state=valid", "old#expert_control=valid(open)@"+dueOpen,
		"recent#expert_control=valid(dated)@"+day(10))

	// A failed action stays failed; other types stay as they were.
	act("failed", recent, map[string]any{"performed_at": day(-1), "status_ok": false})
	check("failed", "asset_id="+recent, "recent#expert_control=failed(failed)@"+mustPeriod(t, "P18M").AddTo(date(day(-1))).String())
	if got := summary(w.rows(t, "action_type=repair&asset_id="+old, 0), names); !slices.Equal(got, []string{"old#repair=never(-)"}) {
		t.Errorf("a type without a plan: %v", got)
	}
}

func mustPeriod(t *testing.T, s string) model.Period {
	t.Helper()
	p, err := model.ParsePeriod(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func date(s string) model.Date {
	d, err := model.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}
