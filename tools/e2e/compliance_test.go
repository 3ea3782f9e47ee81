package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/testkit"
)

// eventually polls check until it returns "" (its complaint otherwise),
// for at most 5 s: the contract's bound on the compliance read model
// following a write.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		complaint := check()
		if complaint == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s: %s", what, complaint)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestComplianceThroughGateway: the read model follows the registry's
// writes through the gateway, the assets' by their change events.
func TestComplianceThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	today := time.Now().UTC()
	day := func(days int) string { return today.AddDate(0, 0, days).Format(time.DateOnly) }
	typ := testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": unique("Compliance"), "model": "C1"}), 201).JSON()["id"].(string)
	asset := func() string {
		return testkit.Expect(t, gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": unique("SN"), "asset_type_id": typ}), 201).JSON()["id"].(string)
	}
	act := func(asset, actionType string, extra map[string]any) string {
		body := map[string]any{"asset_id": asset, "action_type": actionType, "performed_at": day(-30), "status_ok": true,
			"status_finalized": true, "status_valid_through": day(300)}
		for k, v := range extra {
			body[k] = v
		}
		return testkit.Expect(t, gw.Do(t, "POST", "/actions", rw, body), 201).JSON()["id"].(string)
	}
	// states reads an asset's rows as "type=state(last action)".
	states := func(asset string) string {
		var out []string
		for _, r := range testkit.Expect(t, gw.Do(t, "GET", "/compliance?asset_type_id="+typ+"&asset_id="+asset, ro, nil), 200).List() {
			out = append(out, fmt.Sprintf("%s=%s(%v)", r["action_type"], r["state"], r["last_action_id"]))
		}
		return strings.Join(out, " ")
	}
	want := func(asset, rows string) func() string {
		return func() string {
			if got := states(asset); got != rows {
				return fmt.Sprintf("rows %q, want %q", got, rows)
			}
			return ""
		}
	}

	untouched, inspected := asset(), asset()
	eventually(t, "a new asset appears as never", want(untouched,
		"expert_control=never(<nil>) maintenance=never(<nil>) pre_use_inspection=never(<nil>) repair=never(<nil>)"))

	old := act(inspected, "expert_control", map[string]any{"performed_at": day(-400), "status_valid_through": day(-35)})
	current := act(inspected, "expert_control", map[string]any{"performed_at": day(-5), "status_valid_through": day(10)})
	failed := act(inspected, "maintenance", map[string]any{"status_ok": false})
	act(inspected, "repair", map[string]any{"status_finalized": false})
	eventually(t, "a superseded, a failed and an unfinalized action", want(inspected, fmt.Sprintf(
		"expert_control=due(%s) maintenance=failed(%s) pre_use_inspection=never(<nil>) repair=never(<nil>)", current, failed)))

	testkit.Expect(t, gw.Do(t, "DELETE", "/actions/"+current, rw, nil), 204)
	eventually(t, "deleting the latest brings back the one before it", want(inspected, fmt.Sprintf(
		"expert_control=overdue(%s) maintenance=failed(%s) pre_use_inspection=never(<nil>) repair=never(<nil>)", old, failed)))
	overdue := testkit.Expect(t, gw.Do(t, "GET", "/compliance?asset_type_id="+typ+"&state=overdue&action_type=expert_control", ro, nil), 200).List()
	if len(overdue) != 1 || overdue[0]["asset_id"] != inspected || overdue[0]["asset_type_id"] != typ {
		t.Errorf("overdue expert controls of the type: %v", overdue)
	}

	testkit.Expect(t, gw.Do(t, "DELETE", "/assets/"+untouched, rw, nil), 204)
	eventually(t, "a deleted asset disappears", want(untouched, ""))

	// At a date: yesterday neither asset was registered; at the end of
	// today the registry knows what it knows now.
	if rows := testkit.Expect(t, gw.Do(t, "GET", "/compliance?asset_type_id="+typ+"&as_of="+day(-1), ro, nil), 200).List(); len(rows) != 0 {
		t.Errorf("as_of yesterday, assets registered today: %v", rows)
	}
	asOfToday := testkit.Expect(t, gw.Do(t, "GET", "/compliance?asset_type_id="+typ+"&as_of="+day(0), ro, nil), 200).List()
	if now := testkit.Expect(t, gw.Do(t, "GET", "/compliance?asset_type_id="+typ, ro, nil), 200).List(); fmt.Sprint(asOfToday) != fmt.Sprint(now) {
		t.Errorf("as_of today:\n%v\nwithout as_of:\n%v", asOfToday, now)
	}

	// Bad input, through the gateway.
	for _, q := range []struct{ query, field string }{
		{"state=unknown", "state"}, {"action_type=unknown", "action_type"}, {"due_before=2026-02-30", "due_before"},
		{"as_of=2026-02-30", "as_of"},
	} {
		p := testkit.Expect(t, gw.Do(t, "GET", "/compliance?"+q.query, ro, nil), 422).JSON()
		if errs, _ := p["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["field"] != q.field {
			t.Errorf("%s: %v", q.query, p)
		}
	}
}
