package registry

import (
	"net/url"
	"testing"
)

// A compliance query repeats action_type and state as the API wants, and
// leaves out what is not given.
func TestComplianceQueryValues(t *testing.T) {
	for _, tc := range []struct {
		q    ComplianceQuery
		want string
	}{
		{ComplianceQuery{}, ""},
		{ComplianceQuery{AssetID: "a", States: []string{"due", "overdue"}}, "asset_id=a&state=due&state=overdue"},
		{ComplianceQuery{ActionTypes: []string{"repair", "maintenance"}, DueBefore: "2026-01-01", Limit: 5},
			"action_type=repair&action_type=maintenance&due_before=2026-01-01&limit=5"},
		{ComplianceQuery{AssetTypeID: "t", Limit: -1}, "asset_type_id=t"},
		{ComplianceQuery{AssetID: "a", AsOf: "2025-03-14"}, "as_of=2025-03-14&asset_id=a"},
		{ComplianceQuery{AssetID: "a", Components: true}, "asset_id=a&include=components"},
	} {
		got, err := url.QueryUnescape(tc.q.values().Encode())
		if err != nil || got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.q, got, tc.want)
		}
	}
}

// A preset becomes the create body of a plan for an asset type, or for
// every asset type.
func TestPresetInput(t *testing.T) {
	p := InspectionPlanPreset{Name: "n", Description: "d", ActionType: "expert_control", Interval: "P6M", FirstDueAfter: "P0D", DueSoon: "P30D"}
	in := p.Input("t")
	if in.AssetTypeID != "t" || in.Interval != "P6M" || in.FirstDueAfter != "P0D" || in.DueSoon != "P30D" || in.Description != "d" {
		t.Errorf("input for a type: %+v", in)
	}
	if in := p.Input(""); in.AssetTypeID != "" {
		t.Errorf("input for every type: %+v", in)
	}
}
