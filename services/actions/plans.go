package actions

// Inspection plans: for an action type and an asset type (or every asset
// type), when the action falls due. The model and its rules come first,
// then the presets, then the store's SQL; GET /compliance reads the plans
// as a planBook (compliance.go).

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/due"
)

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

// DefaultDueSoon is a plan's due-soon window when its writer gives none:
// the window GET /compliance uses for rows without a plan.
const DefaultDueSoon = "P30D"

// descriptionLen bounds a plan's description.
const descriptionLen = 1000

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
	requiredType(&v, in.ActionType)
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
	if err := v.Err(); err != nil {
		return in, err
	}
	return in.Normalize()
}

func planInputOf(p Plan) PlanInput {
	return PlanInput{ActionType: p.ActionType, AssetTypeID: model.OptionalID(p.AssetTypeID), AssetID: model.OptionalID(p.AssetID), Interval: p.Interval,
		FirstDueAfter: p.FirstDueAfter, DueSoon: ptrTo(p.DueSoon), Description: p.Description, Usage: p.Usage}
}

// planReferences are the asset type and the asset a plan names, each
// asked again only when a patch changes it.
func planReferences(in PlanInput, old *Plan) []refs.Target {
	var was Plan
	if old != nil {
		was = *old
	}
	var targets []refs.Target
	for _, r := range []struct {
		field, kind string
		id, old     *uuid.UUID
	}{{"asset_type_id", "asset_type", in.AssetTypeID.Ptr(), was.AssetTypeID}, {"asset_id", "asset", in.AssetID.Ptr(), was.AssetID}} {
		if r.id != nil && (r.old == nil || *r.old != *r.id) {
			targets = append(targets, refs.Target{Field: r.field, Kind: r.kind, ID: *r.id})
		}
	}
	return targets
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

// schedule is a plan's periods, parsed.
type schedule struct {
	PlanID                      uuid.UUID
	Interval, FirstDue, DueSoon model.Period
}

// scheduleOf parses a stored plan; its periods were checked when written.
func scheduleOf(p Plan) (schedule, error) {
	var s schedule
	var err error
	s.PlanID = p.ID
	for _, f := range []struct {
		dst  *model.Period
		text string
	}{{&s.Interval, p.Interval}, {&s.FirstDue, p.FirstDueAfter}, {&s.DueSoon, p.DueSoon}} {
		if *f.dst, err = model.ParsePeriod(f.text); err != nil {
			return s, fmt.Errorf("plan %s: stored period %q: %w", p.ID, f.text, err)
		}
	}
	return s, nil
}

// planBook is every plan, by the rows it applies to: an asset type's own
// plan for an action type, else the action type's plan for every asset
// type, else none.
type planBook struct {
	own   map[string]map[uuid.UUID]schedule
	every map[string]schedule
}

// newPlanBook indexes plans.
func newPlanBook(plans []Plan) (planBook, error) {
	b := planBook{own: map[string]map[uuid.UUID]schedule{}, every: map[string]schedule{}}
	for _, p := range plans {
		if p.AssetID != nil {
			continue // one asset's own: GET /compliance's query finds it
		}
		s, err := scheduleOf(p)
		if err != nil {
			return b, err
		}
		if p.AssetTypeID == nil {
			b.every[p.ActionType] = s
			continue
		}
		if b.own[p.ActionType] == nil {
			b.own[p.ActionType] = map[uuid.UUID]schedule{}
		}
		b.own[p.ActionType][*p.AssetTypeID] = s
	}
	return b, nil
}

// For is the schedule of an asset type's rows of an action type, nil when
// no plan applies.
func (b planBook) For(actionType string, assetType uuid.UUID) *schedule {
	if s, ok := b.own[actionType][assetType]; ok {
		return &s
	}
	if s, ok := b.every[actionType]; ok {
		return &s
	}
	return nil
}

// Covers reports whether any plan is for actionType.
func (b planBook) Covers(actionType string) bool {
	_, every := b.every[actionType]
	return every || len(b.own[actionType]) > 0
}

// The store's side.

const planColumns = `p.id, p.action_type, p.asset_type_id, p.asset_id, p.interval_period, p.first_due_after, p.due_soon, p.description,
	p.created_at, p.created_by, p.updated_at, p.updated_by, ` + due.UsageColumn

// planKeyLookup is the id of the plan holding an (action type, asset type)
// key, $2 NULL every asset type's, or with an asset $3 its (action type,
// asset) key.
const planKeyLookup = `SELECT id FROM inspection_plans WHERE action_type = $1 AND CASE WHEN $3::uuid IS NULL
	THEN asset_id IS NULL AND asset_type_id IS NOT DISTINCT FROM $2 ELSE asset_id = $3 END`

func planDuplicate(in PlanInput) string {
	if id := in.AssetID.Ptr(); id != nil {
		return fmt.Sprintf("asset %s has a plan of its own for %s already", *id, in.ActionType)
	}
	if id := in.AssetTypeID.Ptr(); id != nil {
		return fmt.Sprintf("asset type %s has a plan for %s already", *id, in.ActionType)
	}
	return fmt.Sprintf("a plan for %s of every asset type exists already", in.ActionType)
}

// CreatePlan inserts a plan once its asset type is confirmed with checked
// (the service's check, confirmed under the target's lock inside the
// transaction); the key must be free (409 naming the plan that holds it).
func (s *Store) CreatePlan(ctx context.Context, by model.Caller, in PlanInput, checked *refs.Checked) (Plan, error) {
	var p Plan
	err := s.Write(ctx, "create inspection plan", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if _, err := checked.Confirm(ctx, tx); err != nil {
			return nil, err
		}
		var err error
		p, err = store.One[Plan](ctx, tx, "insert inspection plan", "inspection plan", uuid.Nil,
			`INSERT INTO inspection_plans AS p (id, action_type, asset_type_id, interval_period, first_due_after, due_soon,
				description, created_by, updated_by, asset_id, usage_meter, usage_every)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10, $11) RETURNING `+planColumns,
			store.NewID(), in.ActionType, in.AssetTypeID.Ptr(), in.Interval, in.FirstDueAfter, *in.DueSoon, in.Description, by.Subject,
			in.AssetID.Ptr(), due.MeterOf(in.Usage), due.EveryOf(in.Usage))
		if err != nil {
			return nil, err
		}
		p = utcAudit(p)
		return nil, s.Record(ctx, tx, by, outbox.Created(outbox.KindInspectionPlan, p.ID.String(), p))
	})
	return p, s.Duplicate(ctx, err, planDuplicate(in), planKeyLookup, in.ActionType, in.AssetTypeID.Ptr(), in.AssetID.Ptr())
}

// GetPlan reads a plan.
func (s *Store) GetPlan(ctx context.Context, id uuid.UUID) (Plan, error) {
	p, err := store.One[Plan](ctx, s.DB(ctx), "get inspection plan", "inspection plan", id,
		`SELECT `+planColumns+` FROM inspection_plans p WHERE p.id = $1`, id)
	return utcAudit(p), err
}

// ListPlans reads one page.
func (s *Store) ListPlans(ctx context.Context, f PlanFilter, page model.Page) (model.Paged[Plan], error) {
	var where store.Filter
	store.Equal(&where, "action_type", f.ActionType)
	store.Equal(&where, "asset_type_id", f.AssetTypeID)
	store.Equal(&where, "asset_id", f.AssetID)
	paged, err := store.List(ctx, s.DB(ctx), "list inspection plans", `SELECT `+planColumns+` FROM inspection_plans p`,
		where, page, func(p Plan) uuid.UUID { return p.ID })
	for i := range paged.Items {
		paged.Items[i] = utcAudit(paged.Items[i])
	}
	return paged, err
}

// Plans reads every plan: a few per action type, read whole by each
// compliance page.
func (s *Store) Plans(ctx context.Context) (planBook, error) {
	plans, err := store.Many[Plan](ctx, s.DB(ctx), "read inspection plans", `SELECT `+planColumns+` FROM inspection_plans p`)
	if err != nil {
		return planBook{}, err
	}
	return newPlanBook(plans)
}

// PlannedActionTypes are the action types some plan is for.
func (s *Store) PlannedActionTypes(ctx context.Context) ([]string, error) {
	rows, err := s.DB(ctx).Query(ctx, `SELECT DISTINCT action_type FROM inspection_plans`)
	if err != nil {
		return nil, store.Classify(err, "planned action types")
	}
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return types, store.Classify(err, "planned action types")
}

// UpdatePlan applies apply to the locked plan; a new asset type must exist
// (confirmed with checked) and the new key be free.
func (s *Store) UpdatePlan(ctx context.Context, g model.Guard, id uuid.UUID, apply func(Plan) (PlanInput, error),
	targets func(old Plan, in PlanInput) []refs.Target, checked *refs.Checked) error {
	updater := store.Updater[Plan, PlanInput]{
		Resource: "inspection plan",
		Select:   `SELECT ` + planColumns + ` FROM inspection_plans p WHERE p.id = $1`,
		Input:    planInputOf,
		Save: func(ctx context.Context, tx pgx.Tx, old Plan, in PlanInput, actor string) ([]string, error) {
			if _, err := checked.Of(targets(old, in)...).Confirm(ctx, tx); err != nil {
				return nil, err
			}
			_, err := tx.Exec(ctx, `UPDATE inspection_plans SET action_type = $2, asset_type_id = $3, interval_period = $4,
				first_due_after = $5, due_soon = $6, description = $7, updated_at = now(), updated_by = $8, asset_id = $9,
				usage_meter = $10, usage_every = $11 WHERE id = $1`,
				old.ID, in.ActionType, in.AssetTypeID.Ptr(), in.Interval, in.FirstDueAfter, *in.DueSoon, in.Description, actor, in.AssetID.Ptr(),
				due.MeterOf(in.Usage), due.EveryOf(in.Usage))
			return nil, store.Classify(err, "update inspection plan")
		},
		Representation: func(ctx context.Context, p Plan) (any, error) { return s.GetPlan(ctx, p.ID) },
		Kind:           outbox.KindInspectionPlan,
		ID:             func(p Plan) uuid.UUID { return p.ID },
	}
	in, err := updater.Update(ctx, s.Store, g, id, apply)
	return s.Duplicate(ctx, err, planDuplicate(in), planKeyLookup, in.ActionType, in.AssetTypeID.Ptr(), in.AssetID.Ptr())
}

// DeletePlan is the write that removes a plan (its rows fall back to the
// plan for every asset type, or to none), for the service to run through
// the reference protocol (refs.DeleteRow).
func (s *Store) DeletePlan(id uuid.UUID) func(ctx context.Context, tx pgx.Tx) ([]string, error) {
	return func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		return nil, store.Delete(ctx, tx, "inspection plan", id, `DELETE FROM inspection_plans WHERE id = $1 RETURNING id`, new(uuid.UUID))
	}
}

// plansNaming is the reference protocol's question for an asset type: the
// plans made for it.
func plansNaming(ctx context.Context, q store.Querier, id uuid.UUID) ([]refs.Ref, error) {
	plans, err := store.Many[Plan](ctx, q, "inspection plans of asset type",
		`SELECT `+planColumns+` FROM inspection_plans p WHERE p.asset_type_id = $1 ORDER BY p.id`, id)
	if err != nil {
		return nil, err
	}
	found := make([]refs.Ref, len(plans))
	for i, p := range plans {
		found[i] = refs.Ref{Kind: outbox.KindInspectionPlan, ID: p.ID, Label: fmt.Sprintf("%s every %s", p.ActionType, p.Interval)}
	}
	return found, nil
}

// utcAudit gives a plan's times in UTC, as every answer shows them.
func utcAudit(p Plan) Plan {
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p
}

// The service's plan operations: what a plan holds is checked by the
// plan's own rules above, the action types by the catalog.

func (s *service) CreatePlan(ctx context.Context, by model.Caller, in PlanInput) (Plan, error) {
	in, err := in.Normalize()
	if err == nil {
		err = s.types.Check(ctx, "action_type", in.ActionType)
	}
	if err == nil {
		err = s.assetOfType(ctx, in)
	}
	if err != nil {
		return Plan{}, err
	}
	return refs.CheckingFor(ctx, s.refs, func(checked *refs.Checked) (Plan, error) {
		return s.store.CreatePlan(ctx, by, in, checked.Of(planReferences(in, nil)...))
	})
}

func (s *service) GetPlan(ctx context.Context, id uuid.UUID) (Plan, error) {
	return s.store.GetPlan(ctx, id)
}

func (s *service) ListPlans(ctx context.Context, f PlanFilter, page model.Page) (model.Paged[Plan], error) {
	if err := s.types.CheckFilter(ctx, "action_type", f.ActionType); err != nil {
		return model.Paged[Plan]{}, err
	}
	return s.store.ListPlans(ctx, f, page)
}

func (s *service) UpdatePlan(ctx context.Context, g model.Guard, id uuid.UUID, p PlanPatch) (Plan, error) {
	changed := func(old Plan, in PlanInput) []refs.Target { return planReferences(in, &old) }
	apply := func(old Plan) (PlanInput, error) {
		in, err := p.Apply(old)
		if err == nil && in.ActionType != old.ActionType {
			err = s.types.Check(ctx, "action_type", in.ActionType)
		}
		if err == nil {
			err = s.assetOfType(ctx, in)
		}
		return in, err
	}
	if err := s.refs.Checking(ctx, func(checked *refs.Checked) error {
		return s.store.UpdatePlan(ctx, g, id, apply, changed, checked)
	}); err != nil {
		return Plan{}, err
	}
	return s.store.GetPlan(ctx, id)
}

func (s *service) DeletePlan(ctx context.Context, g model.Guard, id uuid.UUID) error {
	current := func(ctx context.Context) (any, error) { return s.store.GetPlan(ctx, id) }
	return s.refs.DeleteRow(ctx, g, "inspection_plan", "inspection_plans", id, current, s.store.DeletePlan(id))
}

// assetOfType refuses a plan that names an asset and an asset type that
// is not the asset's (as the compliance projection knows it): a 422 on
// asset_type_id.
func (s *service) assetOfType(ctx context.Context, in PlanInput) error {
	asset, assetType := in.AssetID.Ptr(), in.AssetTypeID.Ptr()
	if asset == nil || assetType == nil {
		return nil
	}
	known, err := s.due.AssetTypeOf(ctx, *asset)
	if err != nil || known == nil || *known == *assetType {
		return err
	}
	return apperr.Invalid(apperr.FieldError{Field: "asset_type_id",
		Message: fmt.Sprintf("is not the type of asset %s, which is of type %s", *asset, *known)})
}

func (s *service) PlanPresets(context.Context) ([]Preset, error) { return Presets, nil }
