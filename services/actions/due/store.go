package due

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/store"
)

// planVersionColumns are the columns of a plan that a row's schedule
// reads, in inspection_plans and in plan_versions alike.
const planVersionColumns = `action_type, asset_type_id, asset_id, interval_period, first_due_after, due_soon, usage_meter, usage_every`

// UsageColumn is a plan p's usage interval as the API shows it (the
// Usage of a Plan, db "usage"): null without one.
const UsageColumn = `CASE WHEN p.usage_meter IS NULL THEN NULL
	ELSE jsonb_build_object('meter', p.usage_meter, 'every', p.usage_every) END AS usage`

// plansKnownAt is the relation of the plans a row reads: the plans of
// today when end is "", else those the registry knew at the instant end
// (an SQL expression): the present versions written before it, and the
// versions a later change replaced or removed that were known then.
func plansKnownAt(end string) string {
	if end == "" {
		return "inspection_plans"
	}
	return fmt.Sprintf(`(SELECT %[1]s FROM inspection_plans WHERE updated_at < %[2]s
		UNION ALL SELECT %[1]s FROM plan_versions WHERE known_from < %[2]s AND known_until >= %[2]s)`, planVersionColumns, end)
}

// PlanJoin finds the plan p of known_assets k's row of actionType (an SQL
// expression): the asset's own plan, else its asset type's, else the
// plan for every asset type; p's columns are NULL when none applies. end
// is as plansKnownAt's. p.every, p.first and p.soon are the plan's
// interval, first_due_after and due_soon as intervals, p.usage_meter and
// p.usage_every its usage interval.
func PlanJoin(actionType, end string) string {
	return fmt.Sprintf(`LEFT JOIN LATERAL (SELECT p.interval_period::interval AS every, p.first_due_after::interval AS first,
			p.due_soon::interval AS soon, p.usage_meter, p.usage_every
		FROM ((SELECT p.*, 0 AS rank FROM %[2]s p WHERE p.action_type = %[1]s AND p.asset_id = k.asset_id LIMIT 1)
			UNION ALL
			(SELECT p.*, 1 AS rank FROM %[2]s p WHERE p.action_type = %[1]s AND p.asset_id IS NULL
				AND (p.asset_type_id = k.asset_type_id OR p.asset_type_id IS NULL)
			ORDER BY p.asset_type_id IS NULL LIMIT 1)) p
		ORDER BY p.rank LIMIT 1) p ON true`, actionType, plansKnownAt(end))
}

// StateJoins finds the plan p of known_assets k's row of actionType
// (latest_actions l, or its equivalent as of a day: its latest action)
// and computes its due date, state, due reason and usage r on the day
// today with dueBefore (SQL expressions; dueBefore may use p.soon, the
// plan's due-soon window). end is as plansKnownAt's, and bounds the
// meter readings too. PostgreSQL's date + interval adds the months first,
// clamping to the month's end, then the days: model.Period.AddTo's rule.
//
// Under a usage interval the row is overdue once the meter has counted
// usage_every since the last action (the usage join), whichever of that
// and the date comes first; due_reason says which made it due: usage
// when only the usage has passed, else date when the row has a due date.
func StateJoins(actionType, today, dueBefore, end string) string {
	return PlanJoin(actionType, end) + usageJoin(end) + fmt.Sprintf(`
	CROSS JOIN LATERAL (SELECT CASE
			WHEN l.asset_id IS NULL THEN (registered_on(k.asset_id) + p.first)::date
			WHEN l.valid_through IS NOT NULL THEN l.valid_through
			ELSE (l.performed_at + p.every)::date END AS due_date,
			coalesce(u.used >= u.every, false) AS used_up) d
	CROSS JOIN LATERAL (SELECT d.due_date, s.state,
			CASE WHEN s.state = 'overdue' AND d.used_up AND NOT coalesce(d.due_date < %[1]s, false) THEN 'usage'
				WHEN d.due_date IS NOT NULL THEN 'date' END AS due_reason,
			CASE WHEN u.meter IS NOT NULL THEN jsonb_build_object('meter', u.meter, 'at_last_action', u.at_last,
				'now', u.now, 'used', u.used, 'every', u.every) END AS usage
		FROM (SELECT CASE
			WHEN l.asset_id IS NULL THEN CASE WHEN d.due_date < %[1]s OR d.used_up THEN 'overdue' ELSE 'never' END
			WHEN l.class = 'failed' THEN 'failed'
			WHEN d.used_up THEN 'overdue'
			WHEN d.due_date IS NULL THEN 'open_ended'
			WHEN d.due_date < %[1]s THEN 'overdue'
			WHEN d.due_date < %[2]s THEN 'due'
			ELSE 'valid' END AS state) s) r`, today, dueBefore)
}

// usageJoin is the usage u of known_assets k's row under its plan p's
// usage interval (u's columns NULL without one): the meter's reading at
// the last action l (the last one read by the end of its day; with none
// before, or no action, the first one), the latest reading, and the usage
// counted since the first: the steps between readings in read_at order, a
// reading marked reset counting its whole value. With end (as_of), only
// the readings recorded and read before it.
func usageJoin(end string) string {
	known := "true"
	if end != "" {
		known = "recorded_at < " + end + " AND read_at < " + end
	}
	cutoff := `coalesce(((l.performed_at + 1)::timestamp AT TIME ZONE 'UTC'), '-infinity'::timestamptz)`
	return fmt.Sprintf(`
	LEFT JOIN LATERAL (SELECT p.usage_meter AS meter, p.usage_every AS every, b.value AS at_last, n.value AS now,
			coalesce((SELECT sum(CASE WHEN x.reset OR x.prev IS NULL THEN x.value ELSE x.value - x.prev END)
				FROM (SELECT id, read_at, value, reset, lag(value) OVER (ORDER BY read_at, id) AS prev FROM known_readings
					WHERE asset_id = k.asset_id AND meter = p.usage_meter AND %[1]s) x
				WHERE (x.read_at, x.id) > (b.read_at, b.id)), 0) AS used
		FROM (SELECT) one
		LEFT JOIN LATERAL (SELECT id, read_at, value FROM known_readings
			WHERE asset_id = k.asset_id AND meter = p.usage_meter AND %[1]s
			ORDER BY read_at < %[2]s DESC, CASE WHEN read_at < %[2]s THEN read_at END DESC NULLS LAST,
				CASE WHEN read_at < %[2]s THEN id END DESC NULLS LAST, read_at, id LIMIT 1) b ON true
		LEFT JOIN LATERAL (SELECT value FROM known_readings WHERE asset_id = k.asset_id AND meter = p.usage_meter AND %[1]s
			ORDER BY read_at DESC, id DESC LIMIT 1) n ON true
		WHERE p.usage_meter IS NOT NULL) u ON true`, known, cutoff)
}

// Store is the component's PostgreSQL side, in the actions schema: the
// SQL the compliance page query is built from, and the rows this
// component keeps.
type Store struct{ *store.Store }

// NewStore returns the component's store over the kit's store.
func NewStore(s *store.Store) *Store { return &Store{s} }

// AssetTypeOf is an asset's type as the compliance projection knows it
// (nil: not known, or deleted).
func (s *Store) AssetTypeOf(ctx context.Context, id uuid.UUID) (*uuid.UUID, error) {
	var t *uuid.UUID
	err := s.DB(ctx).QueryRow(ctx, `SELECT asset_type_id FROM known_assets WHERE asset_id = $1 AND NOT deleted`, id).Scan(&t)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return t, store.Classify(err, "asset type of asset")
}

// ApplyParent records what the asset event eventID (a UUIDv7) says of
// asset's parent (nil: none, or the asset is deleted). An event older
// than one already applied to the asset changes nothing; a parent that
// did not change keeps its link; another ends the link and begins one.
// The link is ended by a statement of its own before the new one is
// written: in one statement the insert ran first and met the old link in
// known_parents_current, so a move from one parent straight to another
// failed (and held the projection's consumer back) every time.
func (s *Store) ApplyParent(ctx context.Context, eventID, asset uuid.UUID, parent *uuid.UUID) error {
	return s.Write(ctx, "apply parent link", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var newest bool
		if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM known_parents WHERE asset_id = $1 AND (from_event >= $2 OR until_event >= $2))`,
			asset, eventID).Scan(&newest); err != nil || !newest {
			return nil, store.Classify(err, "apply parent link")
		}
		if _, err := tx.Exec(ctx, `UPDATE known_parents SET until_event = $3 WHERE asset_id = $1 AND until_event IS NULL
			AND parent_asset_id IS DISTINCT FROM $2`, asset, parent, eventID); err != nil {
			return nil, store.Classify(err, "end parent link")
		}
		_, err := tx.Exec(ctx, `INSERT INTO known_parents (asset_id, parent_asset_id, from_event) SELECT $1, $2, $3
			WHERE $2::uuid IS NOT NULL AND NOT EXISTS (SELECT FROM known_parents WHERE asset_id = $1 AND until_event IS NULL)`,
			asset, parent, eventID)
		return nil, store.Classify(err, "apply parent link")
	})
}

// Link is a component and an asset it is part of (its parent, or a
// parent's parent).
type Link struct {
	Component uuid.UUID `db:"asset_id"`
	Root      uuid.UUID `db:"root"`
}

// maxDepth bounds the walk down a tree of components (the assets service
// refuses cycles; this bounds the walk all the same).
const maxDepth = 16

// Components are the components of parents, at every depth: the links
// holding now when bound is nil, else those that held at the event id
// *bound (the first UUIDv7 of an as_of day's end).
func (s *Store) Components(ctx context.Context, parents []uuid.UUID, bound *uuid.UUID) ([]Link, error) {
	args := []any{parents}
	if bound != nil {
		args = append(args, *bound)
	}
	return store.Many[Link](ctx, s.DB(ctx), "components", ComponentsSQL(bound != nil), args...)
}

// ComponentsSQL is the walk Components makes, over the links held now or,
// with asOf, at the event id $2. Each step looks up the components of the
// step before by known_parents_parent_idx. As a join of the step before
// with known_parents, the planner (which guesses a recursive step at ten
// times the first) hashed the whole table instead, every link of the
// registry read for a page's few dozen assets; OFFSET 0 keeps the lookup
// a subquery of its own, run for each asset of the step before.
func ComponentsSQL(asOf bool) string {
	held := "until_event IS NULL"
	if asOf {
		held = "from_event < $2 AND (until_event IS NULL OR until_event >= $2)"
	}
	return fmt.Sprintf(`WITH RECURSIVE c (asset_id, root, depth) AS (
			SELECT asset_id, parent_asset_id, 1 FROM known_parents WHERE parent_asset_id = ANY($1) AND %[1]s
			UNION
			SELECT p.asset_id, c.root, c.depth + 1 FROM c CROSS JOIN LATERAL (
				SELECT asset_id FROM known_parents WHERE parent_asset_id = c.asset_id AND %[1]s OFFSET 0) p
			WHERE c.depth < %[2]d)
		SELECT DISTINCT asset_id, root FROM c`, held, maxDepth)
}

const insertReadingSQL = `INSERT INTO known_readings (id, asset_id, meter, value, read_at, reset, recorded_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`

// ApplyReading keeps a meter reading (once: its id).
func (s *Store) ApplyReading(ctx context.Context, r Reading) error {
	_, err := s.Pool.Exec(ctx, insertReadingSQL, r.ID, r.AssetID, r.Meter, r.Value, r.ReadAt, r.Reset, r.RecordedAt)
	return store.Classify(err, "apply meter reading")
}

// RelearnParents records the parents the assets service lists now
// (parents[i] of ids[i]; nil: none), as an asset event with the id floor
// would (a rebuild's floor, older than the listing): a link that holds
// already is kept with its history; another is ended at floor and the
// listed one begins there; an asset an event newer than floor was applied
// to keeps what that event said. Two statements, so the ended link is out
// of the way (known_parents_current) before the new one is written.
func (s *Store) RelearnParents(ctx context.Context, floor uuid.UUID, ids []uuid.UUID, parents []*uuid.UUID) error {
	return s.Write(ctx, "relearn parent links", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		const listed = `unnest($1::uuid[], $2::uuid[]) AS l(asset_id, parent_asset_id)`
		// Newer than floor: a link begun after it, or ended after it by
		// an event (this rebuild ends links exactly at floor).
		const newer = `EXISTS (SELECT FROM known_parents n WHERE n.asset_id = l.asset_id AND (n.from_event >= $3 OR n.until_event > $3))`
		if _, err := tx.Exec(ctx, `UPDATE known_parents k SET until_event = $3 FROM `+listed+`
			WHERE k.asset_id = l.asset_id AND k.until_event IS NULL AND k.parent_asset_id IS DISTINCT FROM l.parent_asset_id
				AND NOT `+newer, ids, parents, floor); err != nil {
			return nil, store.Classify(err, "end parent links")
		}
		_, err := tx.Exec(ctx, `INSERT INTO known_parents (asset_id, parent_asset_id, from_event)
			SELECT l.asset_id, l.parent_asset_id, $3 FROM `+listed+`
			WHERE l.parent_asset_id IS NOT NULL AND NOT `+newer+`
				AND NOT EXISTS (SELECT FROM known_parents k WHERE k.asset_id = l.asset_id AND k.until_event IS NULL)`, ids, parents, floor)
		return nil, store.Classify(err, "relearn parent links")
	})
}

// EndUnlistedParents ends, at floor, the links of assets a rebuild did
// not list (deleted while their events were missed): their components no
// longer roll up into anything through them.
func (s *Store) EndUnlistedParents(ctx context.Context, floor uuid.UUID) error {
	_, err := s.Pool.Exec(ctx, `UPDATE known_parents k SET until_event = $1 WHERE k.until_event IS NULL AND k.from_event < $1
		AND NOT EXISTS (SELECT FROM known_assets a WHERE a.asset_id = k.asset_id AND NOT a.deleted)`, floor)
	return store.Classify(err, "end links of unlisted assets")
}

// ApplyReadings keeps meter readings, each once (its id), as ApplyReading
// does one, in one statement whatever their number.
func (s *Store) ApplyReadings(ctx context.Context, rs []Reading) error {
	if len(rs) == 0 {
		return nil
	}
	_, err := s.Pool.Exec(ctx, `INSERT INTO known_readings (id, asset_id, meter, value, read_at, reset, recorded_at)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::float8[], $5::timestamptz[], $6::bool[], $7::timestamptz[])
		ON CONFLICT (id) DO NOTHING`, columnsOf(rs)...)
	return store.Classify(err, "apply meter readings")
}
