package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/testkit"
)

// TestComplianceDueThroughGateway: one crane's own plan wins over its
// type's; its hook block, a component, runs under the type's plan of "12
// months or 250 hours, whichever first" and is overdue by its hours meter
// (due_reason usage); the crane's row rolls the hook block's state up
// (include=components), as the read model learns the parent link and the
// readings from the assets service's events.
func TestComplianceDueThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro, adm := readWrite(t), readOnly(t), admin(t)
	gw := gateway()
	now := time.Now().UTC()
	day := func(days int) string { return now.AddDate(0, 0, days).Format(time.DateOnly) }
	typ := testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": unique("Due"), "model": "D1"}), 201).JSON()["id"].(string)
	crane := testkit.Expect(t, gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": unique("CRANE"), "asset_type_id": typ}), 201).JSON()["id"].(string)
	hook := testkit.Expect(t, gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": unique("HOOK"), "asset_type_id": typ,
		"parent_asset_id": crane}), 201).JSON()["id"].(string)

	var plans []string
	plan := func(body map[string]any) {
		t.Helper()
		plans = append(plans, testkit.Expect(t, gw.Do(t, "POST", "/inspection_plans", adm, body), 201).JSON()["id"].(string))
	}
	plan(map[string]any{"action_type": "expert_control", "asset_type_id": typ, "interval": "P12M", "first_due_after": "P0D",
		"usage": map[string]any{"meter": "operating_hours", "every": 250}})
	plan(map[string]any{"action_type": "expert_control", "asset_id": crane, "asset_type_id": typ, "interval": "P1M", "first_due_after": "P0D"})
	defer func() {
		for _, id := range plans {
			testkit.Expect(t, gw.Do(t, "DELETE", "/inspection_plans/"+id, adm, nil), 204)
		}
	}()
	if f := testkit.Expect(t, gw.Do(t, "POST", "/inspection_plans", adm, map[string]any{"action_type": "repair", "interval": "P1Y",
		"first_due_after": "P0D", "usage": map[string]any{"meter": "hours", "every": -1}}), 422).Fields(); !slices.Contains(f, "usage.every") {
		t.Errorf("a usage interval of -1 hours: %v, want a 422 naming usage.every", f)
	}

	for _, asset := range []string{crane, hook} {
		testkit.Expect(t, gw.Do(t, "POST", "/actions", rw, map[string]any{"asset_id": asset, "action_type": "expert_control",
			"performed_at": day(-10), "status_ok": true, "status_finalized": true}), 201)
	}
	for _, r := range []struct {
		value float64
		at    time.Time
	}{{100, now.AddDate(0, 0, -11)}, {400, now.Add(-time.Hour)}} {
		testkit.Expect(t, gw.Do(t, "POST", "/assets/"+hook+"/meter_readings", rw, map[string]any{"meter": "operating_hours",
			"value": r.value, "read_at": r.at.Format(time.RFC3339)}), 201)
	}

	row := func(asset string) map[string]any {
		rows := testkit.Expect(t, gw.Do(t, "GET", "/compliance?include=components&action_type=expert_control&asset_id="+asset, ro, nil), 200).List()
		if len(rows) != 1 {
			return nil
		}
		return rows[0]
	}
	eventually(t, "the hook block overdue by its hours, rolled up into the crane", func() string {
		h, c := row(hook), row(crane)
		u, _ := h["usage"].(map[string]any)
		switch {
		case h["state"] != "overdue" || h["due_reason"] != "usage" || u["used"] != 300.0 || u["every"] != 250.0:
			return fmt.Sprintf("hook block %v", h)
		case c["state"] != "due" || c["due_date"] != now.AddDate(0, 0, -10).AddDate(0, 1, 0).Format(time.DateOnly) ||
			c["rolled_up_state"] != "overdue" || c["due_reason"] != "date":
			return fmt.Sprintf("crane %v", c)
		}
		return ""
	})
	// The hook block taken off: the crane rolls up alone.
	testkit.Expect(t, gw.Do(t, "PATCH", "/assets/"+hook, rw, map[string]any{"parent_asset_id": nil}), 200)
	eventually(t, "the crane without its hook block", func() string {
		if c := row(crane); c["rolled_up_state"] != "due" {
			return fmt.Sprintf("crane %v", c)
		}
		return ""
	})
}
