package actions

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/refs"
)

// `actions rebuild-compliance` makes the whole read model again from its
// sources, parent links and meter readings included: after a rebuild of a
// read model that lost them (made anew, or events missed), /compliance
// with include=components (rolled_up_state) and with a usage plan (state,
// due_reason, usage) answers as it did before.
func TestRebuildRelearnsPartsAndReadings(t *testing.T) {
	w := newDueWorld(t)
	w.StandIn("assets").Remove("asset", uuid.MustParse(w.world.asset)) // the world's, known without a type
	plan := w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "expert_control",
		"asset_type_id": w.assetType.String(), "interval": "P12M", "first_due_after": "P0D",
		"usage": map[string]any{"meter": "operating_hours", "every": 250}}).JSON()
	w.writtenAt(t, "inspection_plans", plan["id"].(string), time.Now().AddDate(0, 0, -40))
	crane := w.registeredAt(t, time.Now().AddDate(0, 0, -60))
	hook := w.component(t, crane)
	sling := w.component(t, hook)
	loose := w.component(t, crane)
	w.moveTo(t, uuid.MustParse(loose), "", "updated", time.Now().AddDate(0, 0, -2)) // taken out again
	// The assets service lists each asset with its type and parent now.
	for id, parent := range map[string]string{crane: "", hook: crane, sling: hook, loose: ""} {
		attrs := refs.Attrs{"asset_type_id": w.assetType.String()}
		if parent != "" {
			attrs["parent_asset_id"] = parent
		}
		w.StandIn("assets").Add("asset", uuid.MustParse(id), attrs)
	}
	for _, a := range []string{crane, hook, sling, loose} {
		w.writtenAt(t, "actions", w.performed(t, a, "expert_control", -30), time.Now().AddDate(0, 0, -29))
	}
	dated := w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": sling, "action_type": "maintenance",
		"performed_at": w.day(-100), "status_ok": true, "status_finalized": true, "status_valid_through": w.day(-3)})
	w.writtenAt(t, "actions", dated.JSON()["id"].(string), time.Now().AddDate(0, 0, -5))
	// Readings, as their events told the read model and as the assets
	// service lists them: the crane's meter has run past its 250 hours.
	for _, r := range []struct {
		asset string
		value float64
		days  int
		reset bool
	}{{crane, 1000, -31, false}, {crane, 1260.5, -1, false}, {hook, 40, -31, false}, {hook, 5, -2, true}} {
		w.readListed(t, r.asset, "operating_hours", r.value, r.days, r.reset)
	}

	answer := func() string {
		t.Helper()
		rows := w.rows(t, "include=components&action_type=expert_control&action_type=maintenance", 0)
		b, err := json.Marshal(rows)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := answer()
	if got := w.row(t, crane, "maintenance", "&include=components"); got["rolled_up_state"] != "overdue" {
		t.Fatalf("crane's maintenance before: %v, want the sling's overdue rolled up", got)
	}
	if got := w.row(t, crane, "expert_control", ""); got["state"] != "overdue" || got["due_reason"] != "usage" {
		t.Fatalf("crane's expert control before: %v, want overdue by usage", got)
	}

	// The read model loses its links and readings; its answer is wrong.
	ctx := context.Background()
	if _, err := w.Built.Store.Pool.Exec(ctx, `DELETE FROM known_parents; DELETE FROM known_readings`); err != nil {
		t.Fatal(err)
	}
	if answer() == before {
		t.Fatal("the answer did not depend on the links and readings")
	}
	registry := refs.New("actions", w.Built.Store, w.Built.Deps.Peers)
	report, err := rebuild(ctx, w.Built.Store, registry, access.New(w.Built.Store, w.Built.Deps.Peers.Get("assets")))
	if err != nil {
		t.Fatal(err)
	}
	if report.Assets != 4 || report.Readings != 4 {
		t.Errorf("report: %+v, want 4 assets and 4 readings", report)
	}
	if after := answer(); after != before {
		t.Errorf("after the rebuild:\n%s\nbefore:\n%s", after, before)
	}

	// A rebuild again changes nothing, and keeps the links' history: the
	// loose part was in the crane until two days ago.
	if report, err := rebuild(ctx, w.Built.Store, registry, access.New(w.Built.Store, w.Built.Deps.Peers.Get("assets"))); err != nil || report.Readings != 4 {
		t.Fatalf("second rebuild: %+v %v", report, err)
	}
	if after := answer(); after != before {
		t.Errorf("after a second rebuild:\n%s\nbefore:\n%s", after, before)
	}
	var links int
	if err := w.Built.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM known_parents WHERE until_event IS NULL`).Scan(&links); err != nil || links != 2 {
		t.Errorf("current links: %d (%v), want the hook's and the sling's", links, err)
	}
}

// readListed applies a meter reading's event, as readings do, and has the
// assets stand-in list it as the assets service would.
func (w dueWorld) readListed(t *testing.T, asset, meter string, value float64, days int, reset bool) {
	t.Helper()
	before := w.knownReadings(t)
	w.read(t, asset, meter, value, days, reset)
	var id uuid.UUID
	var readAt, recorded time.Time
	if err := w.Built.Store.Pool.QueryRow(context.Background(), `SELECT id, read_at, recorded_at FROM known_readings
		WHERE NOT (id = ANY($1)) LIMIT 1`, before).Scan(&id, &readAt, &recorded); err != nil {
		t.Fatal(err)
	}
	w.StandIn("assets").Add("meter_reading", id, refs.Attrs{"asset_id": asset, "meter": meter,
		"value": strconv.FormatFloat(value, 'g', -1, 64), "read_at": readAt.UTC().Format(time.RFC3339Nano),
		"reset": strconv.FormatBool(reset), "created_at": recorded.UTC().Format(time.RFC3339Nano)})
}

func (w dueWorld) knownReadings(t *testing.T) []uuid.UUID {
	t.Helper()
	rows, err := w.Built.Store.Pool.Query(context.Background(), `SELECT id FROM known_readings`)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if ids == nil {
		ids = []uuid.UUID{}
	}
	return ids
}

// A component moved from one parent straight to another (one asset
// event) leaves the first and rolls up into the second; the projection
// applies the event instead of failing on it again and again.
func TestComponentMovesBetweenParents(t *testing.T) {
	w := newDueWorld(t)
	first, second := w.registeredAt(t, time.Now().AddDate(0, 0, -30)), w.registeredAt(t, time.Now().AddDate(0, 0, -30))
	part := w.component(t, first)
	w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": part, "action_type": "repair",
		"performed_at": w.day(-10), "status_ok": false, "status_finalized": true})
	w.moveTo(t, uuid.MustParse(part), second, "updated", time.Now())
	if got := w.row(t, second, "repair", "&include=components"); got["rolled_up_state"] != "failed" {
		t.Errorf("the new parent: %v, want the part's failed repair rolled up", got)
	}
	if got := w.row(t, first, "repair", "&include=components"); got["rolled_up_state"] != "never" {
		t.Errorf("the old parent: %v, want only its own row", got)
	}
}
