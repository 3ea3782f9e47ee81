package actiontypes

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
)

// Store is the PostgreSQL persistence of action types, in the actions
// schema. Types are never deleted nor renamed.
type Store struct{ *store.Store }

// NewStore returns the action types' store over the kit's store.
func NewStore(s *store.Store) *Store { return &Store{s} }

const typeColumns = `t.id, t.name, t.description, t.created_at, t.created_by`

// CreateActionType adds a type: errTaken when the name exists, errFull
// past MaxTypes. Concurrent creates of one name add it once (the primary
// key arbitrates); creates take turns on the count.
func (s *Store) CreateActionType(ctx context.Context, by model.Caller, in ActionTypeInput) (ActionType, error) {
	var out ActionType
	err := s.Write(ctx, "create action type", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('action_types', 0))`); err != nil {
			return nil, store.Classify(err, "lock action types")
		}
		var count int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM action_types`).Scan(&count); err != nil {
			return nil, store.Classify(err, "count action types")
		}
		rows, err := tx.Query(ctx, `INSERT INTO action_types AS t (id, name, description, created_by) VALUES ($1, $2, $3, $4)
			ON CONFLICT (name) DO NOTHING RETURNING `+typeColumns, store.NewID(), in.Name, in.Description, by.Subject)
		if err != nil {
			return nil, store.Classify(err, "insert action type")
		}
		created, err := pgx.CollectRows(rows, pgx.RowToStructByName[ActionType])
		switch {
		case err != nil:
			return nil, store.Classify(err, "insert action type")
		case len(created) == 0:
			return nil, errTaken
		case count >= MaxTypes:
			return nil, errFull
		}
		out = created[0]
		return nil, s.Record(ctx, tx, by, outbox.Created(outbox.KindActionType, out.Name, out))
	})
	return out, err
}

// ListActionTypes reads one page, in the order the types were added (the
// four first).
func (s *Store) ListActionTypes(ctx context.Context, _ ActionTypeFilter, page model.Page) (model.Paged[ActionType], error) {
	return store.List(ctx, s.DB(ctx), "list action types", `SELECT `+typeColumns+` FROM action_types t`, store.Filter{}, page,
		ActionType.key)
}

// Names are every type's name.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	rows, err := s.DB(ctx).Query(ctx, `SELECT name FROM action_types ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, store.Classify(err, "action type names")
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, store.Classify(err, "action type names")
}

// Covered is the condition, for GET /compliance's branch of an added type
// (literal, a name the catalog knows), on the rows of known_assets k with
// its plan p and latest action l: the asset has a row of the type only
// where a plan covers it or an action of the type exists (for a day in
// the past, asOf: a finalized one known then).
func Covered(literal string, asOf bool) string {
	if asOf {
		return " AND (p.every IS NOT NULL OR l.asset_id IS NOT NULL)"
	}
	return " AND (p.every IS NOT NULL OR l.asset_id IS NOT NULL OR EXISTS (SELECT 1 FROM actions a WHERE a.asset_id = k.asset_id AND a.action_type = " +
		literal + "))"
}
