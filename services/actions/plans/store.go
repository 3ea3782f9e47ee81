package plans

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/due"
)

// Store is the PostgreSQL persistence of inspection plans, in the actions
// schema. The asset type and the asset a plan names are the assets
// service's (pkg/refs): a write confirms the check it is given under the
// targets' locks inside its transaction, and the assets service asks
// this store which plans name an asset type before deleting one.
type Store struct{ *store.Store }

// NewStore returns the plans' store over the kit's store and declares its
// side of the reference protocol.
func NewStore(s *store.Store, r refs.Kinds) *Store {
	r.Owns(outbox.KindInspectionPlan, refs.ExistsIn("inspection_plans"))
	r.PointsAt("asset_type", plansNaming)
	return &Store{s}
}

const planColumns = `p.id, p.action_type, p.asset_type_id, p.asset_id, p.interval_period, p.first_due_after, p.due_soon, p.description,
	p.created_at, p.created_by, p.updated_at, p.updated_by, ` + due.UsageColumn

// planKeyLookup is the id of the plan holding an (action type, asset type)
// key, $2 NULL every asset type's, or with an asset $3 its (action type,
// asset) key.
const planKeyLookup = `SELECT id FROM inspection_plans WHERE action_type = $1 AND CASE WHEN $3::uuid IS NULL
	THEN asset_id IS NULL AND asset_type_id IS NOT DISTINCT FROM $2 ELSE asset_id = $3 END`

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
		found[i] = refs.Ref{Kind: outbox.KindInspectionPlan, ID: p.ID, Label: p.label()}
	}
	return found, nil
}
