package plans

import (
	"context"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/services/actions/actiontypes"
	"github.com/assetregistry/registry/services/actions/due"
)

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

// Service is what the plans component does: every reader reads plans, an
// admin writes them (the routes say so). Errors are *apperr.Error.
type Service interface {
	CreatePlan(ctx context.Context, by model.Caller, in PlanInput) (Plan, error)
	GetPlan(ctx context.Context, id uuid.UUID) (Plan, error)
	ListPlans(ctx context.Context, f PlanFilter, page model.Page) (model.Paged[Plan], error)
	UpdatePlan(ctx context.Context, g model.Guard, id uuid.UUID, p PlanPatch) (Plan, error)
	DeletePlan(ctx context.Context, g model.Guard, id uuid.UUID) error
	// PlanPresets are the plans an operator can load as a starting point.
	PlanPresets(ctx context.Context) ([]Preset, error)
}

// service holds the rules: what a plan holds is checked by the plan's own
// rules (model.go), the action types by the catalog, the asset type and
// the asset by their owner (refs).
type service struct {
	store *Store
	refs  *refs.Registry
	types *actiontypes.Catalog
	due   *due.Store // the asset types the compliance projection knows
}

// NewService returns the service over store, asking the peers of
// registry about the targets of a plan.
func NewService(store *Store, registry *refs.Registry) Service {
	return &service{store: store, refs: registry, types: actiontypes.NewCatalog(actiontypes.NewStore(store.Store)),
		due: due.NewStore(store.Store)}
}

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
	return notTheType(*asset, *known)
}

func (s *service) PlanPresets(context.Context) ([]Preset, error) { return Presets, nil }
