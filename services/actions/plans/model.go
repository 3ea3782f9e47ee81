// Package plans is the actions service's component for inspection
// plans: for an action type and an asset type (or every asset type, or
// one asset), when the action falls due. Its layers are the service's
// own: the model and its rules with the presets (model.go), Service
// (service.go), endpoints (endpoint.go), HTTP transport (transport.go)
// and PostgreSQL store (store.go), composed in the service's spec.go. GET
// /compliance reads the plans in its page query (the due component's
// SQL), and the action types some plan is for (PlannedActionTypes).
package plans

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions/actiontypes"
	"github.com/assetregistry/registry/services/actions/due"
)

// DefaultDueSoon is a plan's due-soon window when its writer gives none:
// the window GET /compliance uses for rows without a plan.
const DefaultDueSoon = "P30D"

// descriptionLen bounds a plan's description.
const descriptionLen = 1000

// Plan is an inspection plan as every answer shows it.
type Plan struct {
	ID         uuid.UUID `json:"id" db:"id"`
	ActionType string    `json:"action_type" db:"action_type"`
	// AssetTypeID nil: every asset type without a plan of its own for the
	// action type.
	AssetTypeID *uuid.UUID `json:"asset_type_id" db:"asset_type_id"`
	// AssetID: this asset's own plan, which wins over its type's (and the
	// plan for every asset type) of the same action type.
	AssetID       *uuid.UUID `json:"asset_id" db:"asset_id"`
	Interval      string     `json:"interval" db:"interval_period"`
	FirstDueAfter string     `json:"first_due_after" db:"first_due_after"`
	DueSoon       string     `json:"due_soon" db:"due_soon"`
	Description   *string    `json:"description" db:"description"`
	// Usage: the action also falls due once a meter has counted this much
	// since the last action, whichever comes first (null: the calendar's).
	Usage *due.Usage `json:"usage" db:"usage"`
	model.Audit
}

// PlanInput is the body of a plan's create, and a patch's result.
type PlanInput struct {
	ActionType    string      `json:"action_type"`
	AssetTypeID   *model.UUID `json:"asset_type_id"`
	AssetID       *model.UUID `json:"asset_id"`
	Interval      string      `json:"interval"`
	FirstDueAfter string      `json:"first_due_after"`
	DueSoon       *string     `json:"due_soon"`
	Description   *string     `json:"description"`
	Usage         *due.Usage  `json:"usage"`
}

// Normalize checks every field and fills in due_soon.
func (in PlanInput) Normalize() (PlanInput, error) {
	var v apperr.Validation
	actiontypes.RequireName(&v, in.ActionType)
	if in.AssetTypeID != nil {
		model.RequiredID(&v, "asset_type_id", *in.AssetTypeID)
	}
	if in.AssetID != nil {
		model.RequiredID(&v, "asset_id", *in.AssetID)
	}
	if p, ok := period(&v, "interval", in.Interval); ok && p.IsZero() {
		v.Add("interval", "must be longer than no time at all")
	}
	period(&v, "first_due_after", in.FirstDueAfter)
	if in.DueSoon == nil {
		in.DueSoon = ptrTo(DefaultDueSoon)
	}
	period(&v, "due_soon", *in.DueSoon)
	in.Description = model.Optional(&v, "description", in.Description, descriptionLen)
	in.Usage.Check(&v, "usage")
	return in, v.Err()
}

// period checks a required ISO 8601 period.
func period(v *apperr.Validation, field, s string) (model.Period, bool) {
	if s == "" {
		v.Add(field, "is required: an ISO 8601 duration such as P12M")
		return model.Period{}, false
	}
	p, err := model.ParsePeriod(s)
	if err != nil {
		v.Add(field, "%v", err)
		return model.Period{}, false
	}
	return p, true
}

func ptrTo[T any](v T) *T { return &v }

// PlanPatch is a JSON merge patch of a plan.
type PlanPatch struct {
	ActionType    model.PatchField[string]     `json:"action_type"`
	AssetTypeID   model.PatchField[model.UUID] `json:"asset_type_id"`
	AssetID       model.PatchField[model.UUID] `json:"asset_id"`
	Interval      model.PatchField[string]     `json:"interval"`
	FirstDueAfter model.PatchField[string]     `json:"first_due_after"`
	DueSoon       model.PatchField[string]     `json:"due_soon"`
	Description   model.PatchField[string]     `json:"description"`
	Usage         model.PatchField[due.Usage]  `json:"usage"`
}

// Apply returns the input that results from patching p. asset_type_id
// null makes the plan every asset type's; due_soon null its default.
func (pp PlanPatch) Apply(p Plan) (PlanInput, error) {
	in := planInputOf(p)
	var v apperr.Validation
	model.Keep(&v, "action_type", pp.ActionType, &in.ActionType)
	model.Keep(&v, "interval", pp.Interval, &in.Interval)
	model.Keep(&v, "first_due_after", pp.FirstDueAfter, &in.FirstDueAfter)
	pp.AssetTypeID.ApplyOptional(&in.AssetTypeID)
	pp.AssetID.ApplyOptional(&in.AssetID)
	pp.DueSoon.ApplyOptional(&in.DueSoon)
	pp.Description.ApplyOptional(&in.Description)
	pp.Usage.ApplyOptional(&in.Usage)
	return model.Patched(&v, in)
}

func planInputOf(p Plan) PlanInput {
	return PlanInput{ActionType: p.ActionType, AssetTypeID: model.OptionalID(p.AssetTypeID), AssetID: model.OptionalID(p.AssetID), Interval: p.Interval,
		FirstDueAfter: p.FirstDueAfter, DueSoon: ptrTo(p.DueSoon), Description: p.Description, Usage: p.Usage}
}

// PlanFilter narrows a list of plans.
type PlanFilter struct {
	ActionType  *string
	AssetTypeID *uuid.UUID
	AssetID     *uuid.UUID
}

// Preset is a plan an operator can load for a common regime: a starting
// point written down once, not the law of any country. Whoever loads one
// checks it against the rules that apply to their equipment.
type Preset struct {
	Name          string `json:"name"`
	Description   string `json:"description"`
	ActionType    string `json:"action_type"`
	Interval      string `json:"interval"`
	FirstDueAfter string `json:"first_due_after"`
	DueSoon       string `json:"due_soon"`
}

// Presets are the plans GET /inspection_plans/presets offers (docs/compliance.md
// lists them with the same caveat).
var Presets = []Preset{
	{Name: "lifting-equipment-12m", ActionType: "expert_control", Interval: "P12M", FirstDueAfter: "P0D", DueSoon: "P30D",
		Description: "Lifting equipment (cranes, hoists, lifts, lifting tables): an expert control every 12 months, " +
			"the first before use. An example, not law."},
	{Name: "lifting-equipment-6m", ActionType: "expert_control", Interval: "P6M", FirstDueAfter: "P0D", DueSoon: "P30D",
		Description: "Lifting equipment in hard or frequent use, and lifting accessories (slings, chains, hooks): " +
			"an expert control every 6 months, the first before use. An example, not law."},
	{Name: "fall-protection-12m", ActionType: "expert_control", Interval: "P12M", FirstDueAfter: "P0D", DueSoon: "P30D",
		Description: "Fall-protection equipment (harnesses, lanyards, fall arresters, anchor devices): an expert " +
			"control every 12 months, the first before use. An example, not law."},
}

// planDuplicate is the 409 of a key another plan holds.
func planDuplicate(in PlanInput) string {
	if id := in.AssetID.Ptr(); id != nil {
		return fmt.Sprintf("asset %s has a plan of its own for %s already", *id, in.ActionType)
	}
	if id := in.AssetTypeID.Ptr(); id != nil {
		return fmt.Sprintf("asset type %s has a plan for %s already", *id, in.ActionType)
	}
	return fmt.Sprintf("a plan for %s of every asset type exists already", in.ActionType)
}

// utcAudit gives a plan's times in UTC, as every answer shows them.
func utcAudit(p Plan) Plan {
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p
}

// label is a few words naming the plan in a 409 of another service.
func (p Plan) label() string { return fmt.Sprintf("%s every %s", p.ActionType, p.Interval) }

// notTheType is the 422 of a plan naming an asset and an asset type that
// is not the asset's (known).
func notTheType(asset, known uuid.UUID) error {
	return apperr.Invalid(apperr.FieldError{Field: "asset_type_id",
		Message: fmt.Sprintf("is not the type of asset %s, which is of type %s", asset, known)})
}
