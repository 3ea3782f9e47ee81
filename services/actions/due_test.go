package actions

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/compliance/projection"
	"github.com/assetregistry/registry/services/actions/compliance/roller"
	"github.com/assetregistry/registry/services/actions/due"
	"github.com/assetregistry/registry/tools/testkit"
)

// dueWorld is a compliance world whose asset type the assets stand-in
// knows, with a helper for one row and one finalized action.
type dueWorld struct{ complianceWorld }

func newDueWorld(t *testing.T) dueWorld {
	w := dueWorld{newComplianceWorld(t)}
	w.StandIn("assets").Add("asset_type", w.assetType, nil)
	return w
}

func (w dueWorld) day(days int) string {
	return model.DateOf(time.Now().UTC().AddDate(0, 0, days)).String()
}

// row is the asset's row of actionType in /compliance?query.
func (w dueWorld) row(t *testing.T, asset, actionType, query string) map[string]any {
	t.Helper()
	rows := w.rows(t, "asset_id="+asset+"&action_type="+actionType+query, 0)
	if len(rows) != 1 {
		t.Fatalf("%s %s%s: %d rows", asset, actionType, query, len(rows))
	}
	return rows[0]
}

// performed records a finalized action of actionType done days ago
// (negative), without a date of its own: the plan says when it is due.
func (w dueWorld) performed(t *testing.T, asset, actionType string, days int) string {
	t.Helper()
	return w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": asset, "action_type": actionType,
		"performed_at": w.day(days), "status_ok": true, "status_finalized": true}).JSON()["id"].(string)
}

// A plan may name one asset: for that asset it wins over its type's plan
// of the same action type, the other assets of the type keep the type's.
// It names an asset that exists, of the asset type it also names.
func TestHTTPPlansPerAsset(t *testing.T) {
	w := newDueWorld(t)
	own, other := w.asset(t), w.asset(t)
	w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "expert_control",
		"asset_type_id": w.assetType.String(), "interval": "P12M", "first_due_after": "P0D"})
	body := map[string]any{"action_type": "expert_control", "asset_id": own, "asset_type_id": w.assetType.String(),
		"interval": "P6M", "first_due_after": "P0D"}
	plan := w.Call(201, "POST", "/inspection_plans", w.Admin, body).JSON()
	if plan["asset_id"] != own {
		t.Fatalf("created: %v", plan)
	}
	if dup := w.Call(409, "POST", "/inspection_plans", w.Admin, body).JSON(); dup["existing_id"] != plan["id"] {
		t.Errorf("a second plan of the asset: %v", dup)
	}
	// Its own plan only: the asset's own wins over the plan for every
	// asset type too.
	w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "maintenance", "asset_id": other,
		"interval": "P1M", "first_due_after": "P0D"})
	w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "maintenance", "interval": "P1Y", "first_due_after": "P0D"})

	for _, a := range []string{own, other} {
		w.performed(t, a, "expert_control", -240)
		w.performed(t, a, "maintenance", -60)
	}
	for _, c := range []struct{ asset, actionType, state string }{
		{own, "expert_control", "overdue"}, {other, "expert_control", "valid"},
		{own, "maintenance", "valid"}, {other, "maintenance", "overdue"},
	} {
		if got := w.row(t, c.asset, c.actionType, ""); got["state"] != c.state {
			t.Errorf("%s %s: %v, want %s", c.asset, c.actionType, got, c.state)
		}
	}
	if got := w.Call(200, "GET", "/inspection_plans?asset_id="+own, w.RO, nil).List(); len(got) != 1 || got[0]["id"] != plan["id"] {
		t.Errorf("plans of the asset: %v", got)
	}

	// Bad input: an asset that does not exist, a malformed id, an asset
	// type that is not the asset's.
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"action_type": "repair", "interval": "P1Y", "first_due_after": "P0D", "asset_id": uuid.NewString()}, "asset_id"},
		{map[string]any{"action_type": "repair", "interval": "P1Y", "first_due_after": "P0D", "asset_id": "crane"}, "asset_id"},
		{map[string]any{"action_type": "repair", "interval": "P1Y", "first_due_after": "P0D", "asset_id": own,
			"asset_type_id": w.otherType(t)}, "asset_type_id"},
	} {
		problem := w.Call(422, "POST", "/inspection_plans", w.Admin, bad.body).JSON()
		if !strings.Contains(must(problem["errors"]), `"`+bad.field+`"`) {
			t.Errorf("%v: %v, want a problem naming %s", bad.body, problem, bad.field)
		}
	}
	if n := len(w.Call(200, "GET", "/inspection_plans?action_type=repair", w.RO, nil).List()); n != 0 {
		t.Errorf("refused plans were written: %d", n)
	}
	// A patch that takes the asset away makes it the type's plan again:
	// that key is taken.
	w.Call(409, "PATCH", "/inspection_plans/"+plan["id"].(string), w.Admin, map[string]any{"asset_id": nil})
}

// otherType is an asset type the assets stand-in knows besides the world's.
func (w dueWorld) otherType(t *testing.T) string {
	id := uuid.Must(uuid.NewV7())
	w.StandIn("assets").Add("asset_type", id, nil)
	return id.String()
}

// /compliance?as_of=D computes with the plans as they were at the end of
// D: a plan edited or deleted since does not change the answer given for
// D, and a plan created since is not in it.
func TestComplianceAsOfUsesPlansAsTheyWere(t *testing.T) {
	w := newDueWorld(t)
	asset := w.registeredAt(t, time.Now().AddDate(-1, 0, 0))
	plan := w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "expert_control",
		"asset_type_id": w.assetType.String(), "interval": "P12M", "first_due_after": "P0D"}).JSON()["id"].(string)
	w.writtenAt(t, "inspection_plans", plan, time.Now().AddDate(0, 0, -5))
	action := w.performed(t, asset, "expert_control", -240)
	w.writtenAt(t, "actions", action, time.Now().AddDate(0, 0, -4))

	asOf := "&as_of=" + w.day(-2)
	before := w.row(t, asset, "expert_control", asOf)
	if before["state"] != "valid" || before["due_date"] != w.dayAfter(-240, 12) {
		t.Fatalf("as of day -2: %v", before)
	}
	w.Call(200, "PATCH", "/inspection_plans/"+plan, w.Admin, map[string]any{"interval": "P6M"})
	if got := w.row(t, asset, "expert_control", ""); got["state"] != "overdue" {
		t.Errorf("today, under the edited plan: %v", got)
	}
	if got := w.row(t, asset, "expert_control", asOf); got["state"] != before["state"] || got["due_date"] != before["due_date"] {
		t.Errorf("as of day -2 after the edit: %v, was %v", got, before)
	}
	w.Call(204, "DELETE", "/inspection_plans/"+plan, w.Admin, nil)
	if got := w.row(t, asset, "expert_control", asOf); got["state"] != before["state"] || got["due_date"] != before["due_date"] {
		t.Errorf("as of day -2 after the delete: %v, was %v", got, before)
	}
	// A plan for the asset made today is not in the answer for day -2.
	w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "expert_control", "asset_id": asset,
		"interval": "P1M", "first_due_after": "P0D"})
	if got := w.row(t, asset, "expert_control", asOf); got["state"] != before["state"] || got["due_date"] != before["due_date"] {
		t.Errorf("as of day -2 after the asset's own plan: %v, was %v", got, before)
	}
	if got := w.row(t, asset, "expert_control", ""); got["state"] != "overdue" {
		t.Errorf("today, under the asset's plan: %v", got)
	}
}

// dayAfter is the date days from today plus months, as a plan adds them.
func (w dueWorld) dayAfter(days, months int) string {
	return model.DateOf(time.Now().UTC().AddDate(0, 0, days)).Time().AddDate(0, months, 0).Format(time.DateOnly)
}

// component makes a new asset known as a component of parent, as its
// asset.created event would (its parent_asset_id in the data).
func (w dueWorld) component(t *testing.T, parent string) string {
	t.Helper()
	id := compliance.UUIDAt(time.Now().AddDate(0, 0, -10)) // registered then
	if _, err := rand.Read(id[9:]); err != nil {
		t.Fatal(err)
	}
	w.StandIn("assets").Add("asset", id, nil)
	w.moveTo(t, id, parent, "created", time.Now().AddDate(0, 0, -10))
	return id.String()
}

// moveTo applies an asset event of the instant at saying id's parent is
// parent ("" none).
func (w dueWorld) moveTo(t *testing.T, id uuid.UUID, parent, op string, at time.Time) {
	t.Helper()
	eventID := compliance.UUIDAt(at)
	if _, err := rand.Read(eventID[9:]); err != nil {
		t.Fatal(err)
	}
	ev := projection.AssetEvent{ID: eventID, AssetID: id, AssetTypeID: w.assetType, Op: op}
	if parent != "" {
		p := uuid.MustParse(parent)
		ev.Parent = &p
	}
	if err := projection.New(projection.NewStore(w.Built.Store)).ApplyAsset(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

// include=components rolls a parent's row up with its components' rows
// of the same action type: a crane in date whose hook block (or the hook
// block's sling) is overdue is overdue rolled up; a component taken out
// no longer counts, and as_of rolls up with the links of that day.
func TestHTTPComplianceRollsUpComponents(t *testing.T) {
	w := newDueWorld(t)
	crane := w.registeredAt(t, time.Now().AddDate(0, 0, -30))
	hook := w.component(t, crane)
	sling := w.component(t, hook)
	dated := func(asset string, validThrough int) {
		id := w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": asset, "action_type": "expert_control",
			"performed_at": w.day(-100), "status_ok": true, "status_finalized": true, "status_valid_through": w.day(validThrough)})
		w.writtenAt(t, "actions", id.JSON()["id"].(string), time.Now().AddDate(0, 0, -5))
	}
	dated(crane, 200)
	dated(hook, 200)
	dated(sling, -3) // the sling is overdue

	rolled := func(asset, query string) map[string]any {
		t.Helper()
		return w.row(t, asset, "expert_control", "&include=components"+query)
	}
	got := rolled(crane, "")
	if got["state"] != "valid" || got["rolled_up_state"] != "overdue" {
		t.Errorf("crane: %v, want valid, overdue rolled up", got)
	}
	if got := rolled(hook, ""); got["rolled_up_state"] != "overdue" {
		t.Errorf("hook block: %v", got)
	}
	if got := rolled(sling, ""); got["rolled_up_state"] != "overdue" || got["state"] != "overdue" {
		t.Errorf("sling: %v", got)
	}
	// Another type's rows roll up its own: the crane has no repair, nor
	// have its components.
	if got := w.row(t, crane, "repair", "&include=components"); got["rolled_up_state"] != "never" {
		t.Errorf("crane's repair: %v", got)
	}
	if got := w.row(t, crane, "expert_control", ""); got["rolled_up_state"] != nil {
		t.Errorf("without include: %v", got)
	}
	w.Call(422, "GET", "/compliance?include=parts", w.RO, nil)

	// The hook block taken out of the crane today: the crane rolls up
	// alone now, but as of yesterday the hook block was in it.
	w.moveTo(t, uuid.MustParse(hook), "", "updated", time.Now())
	if got := rolled(crane, ""); got["rolled_up_state"] != "valid" {
		t.Errorf("crane after the hook block's removal: %v", got)
	}
	if got := rolled(crane, "&as_of="+w.day(0)); got["rolled_up_state"] != "valid" {
		t.Errorf("crane as of today: %v", got)
	}
	if got := rolled(crane, "&as_of="+w.day(-1)); got["state"] != "valid" || got["rolled_up_state"] != "overdue" {
		t.Errorf("crane as of yesterday, the hook block in it: %v", got)
	}
	if got := rolled(crane, "&as_of="+w.day(-4)); got["rolled_up_state"] != "due" {
		t.Errorf("crane as of day -4, the sling due soon then: %v", got)
	}
	if got := rolled(hook, ""); got["rolled_up_state"] != "overdue" {
		t.Errorf("hook block still holds the sling: %v", got)
	}
}

// A page's walk down its assets' components reads the links below them,
// not every link of the registry: with twenty thousand links, a page of 50
// assets with their components, the walk's plan (as of now and as of a day) scans known_parents only by
// its parent index, and still finds a component's component.
func TestComponentWalkReadsOnlyTheLinksBelowThePage(t *testing.T) {
	w := newDueWorld(t)
	crane := w.registeredAt(t, time.Now().AddDate(0, 0, -30))
	hook := w.component(t, crane)
	sling := w.component(t, hook)
	ctx := context.Background()
	// Five thousand other assets with four components each; the page
	// holds the crane and 49 of them.
	other := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012x", i) }
	if _, err := w.Built.Store.Pool.Exec(ctx, `INSERT INTO known_parents (asset_id, parent_asset_id, from_event)
		SELECT gen_random_uuid(), ('00000000-0000-4000-8000-' || lpad(to_hex(i / 4), 12, '0'))::uuid, $1
		FROM generate_series(0, 19999) i`, compliance.UUIDAt(time.Now().AddDate(0, 0, -5))); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Built.Store.Pool.Exec(ctx, `ANALYZE known_parents`); err != nil {
		t.Fatal(err)
	}
	parents := []uuid.UUID{uuid.MustParse(crane)}
	for i := range 49 {
		parents = append(parents, uuid.MustParse(other(i)))
	}
	for _, asOf := range []bool{false, true} {
		args := []any{parents}
		if asOf {
			args = append(args, compliance.UUIDAt(time.Now()))
		}
		var plan strings.Builder
		rows, err := w.Built.Store.Pool.Query(ctx, "EXPLAIN "+due.ComponentsSQL(asOf), args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			plan.WriteString(l + "\n")
		}
		if strings.Contains(plan.String(), "Seq Scan on known_parents") {
			t.Errorf("as of a day %v: the walk scans every link:\n%s", asOf, plan.String())
		}
	}
	links, err := due.NewStore(w.Built.Store).Components(ctx, parents, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, l := range links {
		found[l.Component.String()] = l.Root.String()
	}
	if len(found) != 2+49*4 || found[hook] != crane || found[sling] != crane {
		t.Errorf("%d components, want the crane's hook block and its sling, and four of each other asset's: %v", len(found), found)
	}
}

// read applies a meter_reading.created event of asset's meter, read (and
// recorded) days ago, as the projection's consumer does.
func (w dueWorld) read(t *testing.T, asset, meter string, value float64, days int, reset bool) {
	t.Helper()
	at := time.Now().UTC().AddDate(0, 0, days)
	data, err := json.Marshal(map[string]any{"id": uuid.Must(uuid.NewV7()), "asset_id": asset, "meter": meter, "value": value,
		"read_at": at, "reset": reset, "created_at": at, "created_by": "rw-client"})
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := due.ReadingOf(outbox.Event{ID: uuid.NewString(), Type: "meter_reading.created", Time: at,
		Subject: outbox.EventSubject{Kind: "meter_reading", ID: asset}, Data: data})
	if !ok || err != nil {
		t.Fatalf("reading event: %v %v", ok, err)
	}
	if err := due.NewStore(w.Built.Store).ApplyReading(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// "Every 12 months or 250 hours, whichever comes first": a plan's usage
// interval makes a row overdue once the meter has counted 250 since the
// last action, before its date; the row says why (due_reason) and with
// which figures; a reset counts its whole value; a date passed first is
// the date's; as_of counts the readings known that day; the roller
// announces the crossing.
func TestHTTPComplianceUsagePlans(t *testing.T) {
	w := newDueWorld(t)
	plan := w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "expert_control",
		"asset_type_id": w.assetType.String(), "interval": "P12M", "first_due_after": "P0D",
		"usage": map[string]any{"meter": "operating_hours", "every": 250}}).JSON()
	if u, _ := plan["usage"].(map[string]any); u["meter"] != "operating_hours" || u["every"] != 250.0 {
		t.Fatalf("plan: %v", plan)
	}
	w.writtenAt(t, "inspection_plans", plan["id"].(string), time.Now().AddDate(0, 0, -40))
	hours, reset, old := w.registeredAt(t, time.Now().AddDate(0, 0, -60)), w.asset(t), w.asset(t)
	w.writtenAt(t, "actions", w.performed(t, hours, "expert_control", -30), time.Now().AddDate(0, 0, -29))
	w.performed(t, reset, "expert_control", -30)
	w.performed(t, old, "expert_control", -400)
	w.read(t, hours, "operating_hours", 1000, -31, false)
	w.read(t, hours, "operating_hours", 1100, -10, false)
	w.read(t, hours, "odometer", 9000, -9, false) // another meter counts for nothing
	w.read(t, reset, "operating_hours", 500, -31, false)
	w.read(t, reset, "operating_hours", 600, -20, false)
	w.read(t, reset, "operating_hours", 50, -10, true)
	w.read(t, old, "operating_hours", 10, -5, false)

	usage := func(r map[string]any) string {
		u, _ := r["usage"].(map[string]any)
		return fmt.Sprintf("%v/%v/%v/%v/%v", u["meter"], u["at_last_action"], u["now"], u["used"], u["every"])
	}
	check := func(asset, query, state, reason, figures string) {
		t.Helper()
		r := w.row(t, asset, "expert_control", query)
		if r["state"] != state || r["due_reason"] != reason || usage(r) != figures {
			t.Errorf("%s%s: %v, want %s by %s with %s", asset, query, r, state, reason, figures)
		}
	}
	check(hours, "", "valid", "date", "operating_hours/1000/1100/100/250")
	check(reset, "", "valid", "date", "operating_hours/500/50/150/250")
	check(old, "", "overdue", "date", "operating_hours/10/10/0/250")

	w.read(t, hours, "operating_hours", 1260, -1, false)
	check(hours, "", "overdue", "usage", "operating_hours/1000/1260/260/250")
	check(hours, "&as_of="+w.day(-5), "valid", "date", "operating_hours/1000/1100/100/250")
	if rows := w.rows(t, "state=overdue&action_type=expert_control", 0); len(rows) != 2 {
		t.Errorf("overdue rows: %v", rows)
	}

	// The roller announces the crossing as a compliance.updated event.
	// The service's own roller may have taken the queued asset first
	// (this tick then skips it, locked) and not committed yet: wait for
	// the announcement, whichever roller makes it.
	if err := roller.New(roller.NewStore(w.Built.Store), time.UTC).Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	var reason string
	testkit.Eventually(t, "the usage crossing announced", 30*time.Second, func() bool {
		err := w.Built.Store.Pool.QueryRow(context.Background(), `SELECT row->>'due_reason' FROM compliance_announced
			WHERE asset_id = $1 AND action_type = 'expert_control' AND state = 'overdue'`, hours).Scan(&reason)
		return err == nil
	})
	if reason != "usage" {
		t.Errorf("announced with due_reason %q, want usage", reason)
	}

	// A usage interval names a meter and how much of it.
	for field, u := range map[string]any{"usage.meter": map[string]any{"meter": "Hours", "every": 1},
		"usage.every": map[string]any{"meter": "hours", "every": 0}} {
		problem := w.Call(422, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "repair", "interval": "P1Y",
			"first_due_after": "P0D", "usage": u}).JSON()
		if !strings.Contains(must(problem["errors"]), `"`+field+`"`) {
			t.Errorf("%v: %v, want a problem naming %s", u, problem, field)
		}
	}
}
