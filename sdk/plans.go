package registry

import (
	"context"
	"iter"
	"net/url"
	"strconv"
)

// InspectionPlan says how often an action type falls due for one asset
// (AssetID), an asset type, or every asset type without a plan of its own
// (both nil). Periods
// are ISO 8601 durations of the calendar: P12M, P1Y, P6M, P30D.
type InspectionPlan struct {
	Version
	ID          string  `json:"id"`
	ActionType  string  `json:"action_type"`
	AssetTypeID *string `json:"asset_type_id"`
	// AssetID: one asset's own plan, which wins over its type's.
	AssetID       *string `json:"asset_id"`
	Interval      string  `json:"interval"`
	FirstDueAfter string  `json:"first_due_after"`
	DueSoon       string  `json:"due_soon"`
	Description   *string `json:"description"`
	// Usage: the action also falls due once a meter has counted this much
	// since the last action, whichever comes first (nil: the calendar's).
	Usage *PlanUsage `json:"usage"`
	Audit
}

// PlanUsage is a plan's usage interval: every Every of Meter (as the
// asset's meter readings name it), "every 250 operating_hours".
type PlanUsage struct {
	Meter string  `json:"meter"`
	Every float64 `json:"every"`
}

// ComplianceUsage is a row's usage figures under a usage interval.
type ComplianceUsage struct {
	Meter        string   `json:"meter"`
	AtLastAction *float64 `json:"at_last_action"`
	Now          *float64 `json:"now"`
	Used         float64  `json:"used"`
	Every        float64  `json:"every"`
}

// InspectionPlanInput is a plan's create body; DueSoon empty is P30D.
type InspectionPlanInput struct {
	ActionType    string     `json:"action_type"`
	AssetTypeID   string     `json:"asset_type_id,omitempty"`
	AssetID       string     `json:"asset_id,omitempty"`
	Interval      string     `json:"interval"`
	FirstDueAfter string     `json:"first_due_after"`
	DueSoon       string     `json:"due_soon,omitempty"`
	Description   string     `json:"description,omitempty"`
	Usage         *PlanUsage `json:"usage,omitempty"`
}

// InspectionPlanPreset is a plan for a common regime, an example to start
// from (not law).
type InspectionPlanPreset struct {
	Name          string `json:"name"`
	Description   string `json:"description"`
	ActionType    string `json:"action_type"`
	Interval      string `json:"interval"`
	FirstDueAfter string `json:"first_due_after"`
	DueSoon       string `json:"due_soon"`
}

// Input is the preset as a plan's create body, for assetTypeID ("" for
// every asset type).
func (p InspectionPlanPreset) Input(assetTypeID string) InspectionPlanInput {
	return InspectionPlanInput{ActionType: p.ActionType, AssetTypeID: assetTypeID, Interval: p.Interval,
		FirstDueAfter: p.FirstDueAfter, DueSoon: p.DueSoon, Description: p.Description}
}

// Inspection plans: everyone reads them; writing one needs registry:admin.

func (c *Client) ListInspectionPlans(ctx context.Context, f Filter) iter.Seq2[InspectionPlan, error] {
	return list[InspectionPlan](ctx, c, "/inspection_plans", f)
}
func (c *Client) GetInspectionPlan(ctx context.Context, id string) (*InspectionPlan, error) {
	return get[InspectionPlan](ctx, c, "/inspection_plans/"+url.PathEscape(id))
}
func (c *Client) CreateInspectionPlan(ctx context.Context, in InspectionPlanInput, opts ...CallOption) (*InspectionPlan, error) {
	return create[InspectionPlan](ctx, c, "/inspection_plans", in, opts)
}
func (c *Client) UpdateInspectionPlan(ctx context.Context, id string, p Patch, opts ...CallOption) (*InspectionPlan, error) {
	return update[InspectionPlan](ctx, c, "/inspection_plans/"+url.PathEscape(id), p, opts)
}
func (c *Client) DeleteInspectionPlan(ctx context.Context, id string, opts ...CallOption) error {
	return c.delete(ctx, "/inspection_plans/"+url.PathEscape(id), nil, opts)
}

// InspectionPlanPresets lists the presets an operator can load.
func (c *Client) InspectionPlanPresets(ctx context.Context) ([]InspectionPlanPreset, error) {
	p, err := get[[]InspectionPlanPreset](ctx, c, "/inspection_plans/presets")
	if err != nil {
		return nil, err
	}
	return *p, nil
}

// ComplianceRow is one asset and action type of GET /compliance. DueDate
// is when the next action falls due (the action's own date, else its
// plan's), nil when nothing says.
type ComplianceRow struct {
	AssetID         string  `json:"asset_id"`
	AssetTypeID     string  `json:"asset_type_id"`
	ActionType      string  `json:"action_type"`
	State           string  `json:"state"`
	DueDate         *string `json:"due_date"`
	ValidThrough    *string `json:"valid_through"`
	LastActionID    *string `json:"last_action_id"`
	LastPerformedAt *string `json:"last_performed_at"`
	StatusOK        *bool   `json:"status_ok"`
	StatusUseOK     *bool   `json:"status_use_ok"`
	// DueReason is "date", or "usage" when only the plan's usage interval
	// has passed; Usage the meter's figures under a usage interval.
	DueReason *string          `json:"due_reason"`
	Usage     *ComplianceUsage `json:"usage"`
	// RolledUpState (ComplianceQuery.Components): the worst of State and
	// the asset's components' states of the action type.
	RolledUpState *string `json:"rolled_up_state"`
}

// ComplianceQuery narrows GET /compliance; empty fields mean all. States
// and ActionTypes match any of their values; DueBefore is YYYY-MM-DD.
// AsOf (YYYY-MM-DD) asks for the rows as the registry knew them at the end
// of that day (UTC), their states on that day.
type ComplianceQuery struct {
	AssetID, AssetTypeID string
	ActionTypes, States  []string
	DueBefore            string
	AsOf                 string
	// Components asks for each row's rolled_up_state (include=components).
	Components bool
	Limit      int // rows per page (0: the server's default)
}

func (q ComplianceQuery) values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("asset_id", q.AssetID)
	set("asset_type_id", q.AssetTypeID)
	set("due_before", q.DueBefore)
	set("as_of", q.AsOf)
	if q.Components {
		v.Set("include", "components")
	}
	for _, t := range q.ActionTypes {
		v.Add("action_type", t)
	}
	for _, s := range q.States {
		v.Add("state", s)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// Compliance pages through what is due, in asset creation order, then
// action type.
func (c *Client) Compliance(ctx context.Context, q ComplianceQuery) iter.Seq2[ComplianceRow, error] {
	return listQuery[ComplianceRow](ctx, c, "/compliance", q.values())
}
