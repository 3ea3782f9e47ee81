package compliance

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/actiontypes"
	"github.com/assetregistry/registry/services/actions/due"
)

// classSQL is classOf over an actions row.
const classSQL = `CASE WHEN status_ok = false THEN 'failed' WHEN status_valid_through IS NULL THEN 'open_ended' ELSE 'dated' END`

// Store is the read model's PostgreSQL side that GET /compliance answers
// from, in the actions schema: latest_actions, and the page query over it
// and known_assets (which the projection keeps).
type Store struct{ *store.Store }

// NewStore returns the component's store over the kit's store.
func NewStore(s *store.Store) *Store { return &Store{s} }

// KeepLatest recomputes the latest_actions rows of pairs from the actions
// table, inside the transaction of the write that changed them. Each
// pair's advisory lock orders concurrent writes to one pair: the recompute
// runs after the locks are granted, as a new statement, so it sees what the
// writes before it committed (read committed).
func KeepLatest(ctx context.Context, tx pgx.Tx, pairs ...Pair) error {
	if err := LockLatest(ctx, tx, pairs); err != nil {
		return err
	}
	return RecomputeLatest(ctx, tx, pairs)
}

// QueueKeepLatest is KeepLatest of one pair as two statements of a
// pipeline; ops name them, for the errors of their results.
func QueueKeepLatest(b *pgx.Batch, p Pair) (ops []string) {
	b.Queue(lockPairSQL, p.lockKey())
	b.Queue(recomputeLatestSQL, recomputeArgs([]Pair{p})...)
	return []string{"lock latest action", "recompute latest action"}
}

// RecomputeLatest recomputes the rows of pairs whose locks the
// transaction holds (LockLatest), all in one statement.
func RecomputeLatest(ctx context.Context, tx pgx.Tx, pairs []Pair) error {
	if len(pairs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, recomputeLatestSQL, recomputeArgs(pairs)...)
	return store.Classify(err, "recompute latest actions")
}

// LockLatest takes the locks of pairs (KeepLatest takes each again, which
// costs nothing in the same transaction) in KeepLatest's order, all at
// once, so two batches never wait for each other in a circle.
func LockLatest(ctx context.Context, tx pgx.Tx, pairs []Pair) error {
	if len(pairs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(k, 0))
		FROM unnest($1::text[]) WITH ORDINALITY AS t(k, n) ORDER BY n`, lockKeys(pairs))
	return store.Classify(err, "lock latest actions")
}

const lockPairSQL = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`

// latestOfSQL is the latest finalized action of the pair (asset, actionType), two SQL
// expressions: the greatest performed_at, ties to the most recently created (ids are UUIDv7).
func latestOfSQL(asset, actionType string) string {
	return `SELECT asset_id, action_type, id, performed_at, status_ok, status_use_ok, status_valid_through, ` + classSQL + ` AS class
	FROM actions WHERE asset_id = ` + asset + ` AND action_type = ` + actionType + ` AND status_finalized
	ORDER BY performed_at DESC, id DESC LIMIT 1`
}

// LatestOfPairSQL is the latest finalized action of ($1, $2).
var LatestOfPairSQL = latestOfSQL("$1", "$2")

// recomputeLatestSQL replaces the row of each pair of $1 (a JSON array of {asset_id, action_type}) by
// its latest, or removes it when the pair has none left: one statement, so a batch's recompute does not
// grow with it.
//
// The pairs come as one JSON array (store.Records), so a connection keeps the generic plan: planned on
// every action write from arrays, the statement expanded every partition of actions each time, at a
// seed of 500,000 actions 3.8 ms of planning for 2.2 ms of execution, the largest cost of a write
// (pg_stat_statements with track_planning, under the compliance lag's load). Each pair is still one
// probe of actions_latest_idx per partition.
var recomputeLatestSQL = `WITH pairs AS (SELECT DISTINCT asset_id, action_type FROM jsonb_to_recordset($1::jsonb) AS p(asset_id uuid, action_type text)),
	latest AS (SELECT l.* FROM pairs p CROSS JOIN LATERAL (` + latestOfSQL("p.asset_id", "p.action_type") + `) l),
	gone AS (DELETE FROM latest_actions d USING pairs p WHERE d.asset_id = p.asset_id AND d.action_type = p.action_type
		AND NOT EXISTS (SELECT FROM latest l WHERE l.asset_id = p.asset_id AND l.action_type = p.action_type))
	INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, status_ok, status_use_ok, valid_through, class)
	SELECT * FROM latest ORDER BY asset_id, action_type
	ON CONFLICT (asset_id, action_type) DO UPDATE SET action_id = excluded.action_id, performed_at = excluded.performed_at,
		status_ok = excluded.status_ok, status_use_ok = excluded.status_use_ok, valid_through = excluded.valid_through,
		class = excluded.class`

// RebuildLatest recomputes every latest_actions row from the actions
// table, RebuildBatch assets at a time in asset order, each batch in a
// transaction of its own. One statement over all actions outgrew the
// statement timeout near two million actions, and held every action
// write back for as long. In a batch, readers keep the old rows until it
// commits; action writes wait for it (the table lock) and then recompute
// their pairs over what it wrote, so a pair written during the rebuild is
// right whichever side of its batch the write falls.
func (s *Store) RebuildLatest(ctx context.Context) (rows int64, err error) {
	after := uuid.Nil
	for {
		var last *uuid.UUID
		err := s.Write(ctx, "rebuild latest actions", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			if _, err := tx.Exec(ctx, `LOCK TABLE latest_actions IN EXCLUSIVE MODE`); err != nil {
				return nil, store.Classify(err, "lock latest actions")
			}
			if err := tx.QueryRow(ctx, `SELECT (SELECT asset_id FROM (SELECT DISTINCT asset_id FROM actions
				WHERE asset_id > $1 ORDER BY asset_id LIMIT $2) batch ORDER BY asset_id DESC LIMIT 1)`, after, RebuildBatch).Scan(&last); err != nil {
				return nil, store.Classify(err, "find the rebuild's next assets")
			}
			if last == nil { // no action past after: nothing of the rows past it stays
				_, err := tx.Exec(ctx, `DELETE FROM latest_actions WHERE asset_id > $1`, after)
				return nil, store.Classify(err, "clear latest actions")
			}
			if _, err := tx.Exec(ctx, `DELETE FROM latest_actions WHERE asset_id > $1 AND asset_id <= $2`, after, *last); err != nil {
				return nil, store.Classify(err, "clear latest actions")
			}
			tag, err := tx.Exec(ctx, rebuildLatestOfAssetsSQL, after, *last)
			rows += tag.RowsAffected()
			return nil, store.Classify(err, "rebuild latest actions")
		})
		if err != nil || last == nil {
			return rows, err
		}
		after = *last
	}
}

// RebuildLatestSQL fills an empty latest_actions from the actions table in
// one statement: a seed's way, on a database nothing else uses. It names
// each row's owner from the copy in one join, where the owner's trigger
// (the actions migration 014) would look it up row by row.
const RebuildLatestSQL = `INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, status_ok,
		status_use_ok, valid_through, class, owner_organization_id)
	SELECT l.*, CASE WHEN a.asset_id IS NOT NULL THEN coalesce(a.owner_organization_id, '` + access.Everyone + `') END
	FROM (SELECT DISTINCT ON (asset_id, action_type) asset_id, action_type, id, performed_at, status_ok, status_use_ok,
			status_valid_through, ` + classSQL + `
		FROM actions WHERE status_finalized
		ORDER BY asset_id, action_type, performed_at DESC, id DESC) l
	LEFT JOIN asset_access a ON a.asset_id = l.asset_id`

// rebuildLatestOfAssetsSQL fills latest_actions for the assets after $1
// up to $2, whose rows were removed.
const rebuildLatestOfAssetsSQL = rebuildLatestSelect + `FROM actions WHERE status_finalized AND asset_id > $1 AND asset_id <= $2
	ORDER BY asset_id, action_type, performed_at DESC, id DESC`

const rebuildLatestSelect = `INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, status_ok,
		status_use_ok, valid_through, class)
	SELECT DISTINCT ON (asset_id, action_type) asset_id, action_type, id, performed_at, status_ok, status_use_ok,
		status_valid_through, ` + classSQL + `
	`

// Compliance reads one page of q in asset order, then action type.
//
// The query is a UNION ALL of branches, one per action type and, when the
// states asked for leave out never, per class (failed, open_ended, dated
// with its valid_through ranges). Each branch is one ordered index range
// scan from the cursor, limited to a page: a branch with never walks the
// assets and looks up each one's latest action of its type; the others walk
// latest_actions_state_idx and read only matching rows. The few pages
// they return are merged by the outer ORDER BY. A deep page costs what the
// first does. A bound caller's branches walk the assets its organization
// sees instead, in the parts halves names.
func (s *Store) Compliance(ctx context.Context, q query, page model.Page) (model.Paged[Row], error) {
	sql, args := pageSQL(q, page, "*")
	records, err := store.Many[record](ctx, s.Reads(ctx), "compliance", sql, args...)
	if err != nil {
		return model.Paged[Row]{}, err
	}
	out := make([]Row, 0, len(records))
	for _, r := range records {
		out = append(out, r.row(q))
	}
	return pageOf(q, page, out, func(r Row) (uuid.UUID, string) { return r.AssetID, r.ActionType }), nil
}

// RowStates is q's page in the columns a state is decided by, for the
// roll-up, whose components' rows cost most in scanning all columns.
func (s *Store) RowStates(ctx context.Context, q query, page model.Page) (model.Paged[RowState], error) {
	sql, args := pageSQL(q, page, stateColumns)
	records, err := store.Many[stateRecord](ctx, s.Reads(ctx), "compliance states", sql, args...)
	if err != nil {
		return model.Paged[RowState]{}, err
	}
	out := make([]RowState, 0, len(records))
	for _, r := range records {
		out = append(out, RowState{AssetID: r.AssetID, ActionType: r.ActionType,
			State: stateIn(q, r.ActionID != nil, r.StatusOK, r.ValidThrough, r.State)})
	}
	return pageOf(q, page, out, func(r RowState) (uuid.UUID, string) { return r.AssetID, r.ActionType }), nil
}

// pageSQL builds the page query of q (see Compliance), of the columns
// given (a select list of the branches' columns).
func pageSQL(q query, page model.Page, columns string) (string, []any) {
	// Parameters are numbered as first used: PostgreSQL cannot type one
	// that the statement does not use.
	var args []any
	numbers := map[string]string{}
	param := func(name string, value any) string {
		if n, ok := numbers[name]; ok {
			return n
		}
		args = append(args, value)
		numbers[name] = fmt.Sprintf("$%d", len(args))
		return numbers[name]
	}
	today := func() string { return param("today", q.Today) }
	dueBefore := func() string { return param("due_before", q.DueBefore) }
	limit := page.Limit + 1

	// The condition on latest_actions l of each class the states asked
	// for include; a dated class as ranges of valid_through. Built when
	// used, so that its parameters are numbered only then.
	classCond := func(class string) (string, bool) {
		var dated []string
		for _, st := range q.States {
			switch {
			case st == StateFailed && class == classFailed:
				return "l.class = 'failed'", true
			case st == StateOpenEnded && class == classOpenEnded:
				return "l.class = 'open_ended'", true
			case class != classDated:
			case st == StateOverdue:
				dated = append(dated, "l.valid_through < "+today())
			case st == StateDue:
				dated = append(dated, "(l.valid_through >= "+today()+" AND l.valid_through < "+dueBefore()+")")
			case st == StateValid:
				dated = append(dated, "(l.valid_through >= "+today()+" AND l.valid_through >= "+dueBefore()+")")
			}
		}
		if len(dated) == 0 {
			return "", false
		}
		return "l.class = 'dated' AND (" + strings.Join(dated, " OR ") + ")", true
	}

	// The tables the branches read. A roll-up's components (among) are read
	// once into two CTEs: a lookup per branch was most of their SQL cost.
	tables, with := sources{assets: "known_assets", latest: "latest_actions"}, ""
	if q.among != nil {
		among := param("among", q.among)
		with = "WITH among_assets AS MATERIALIZED (SELECT * FROM known_assets WHERE asset_id = ANY(" + among + ")),\n" +
			"among_latest AS MATERIALIZED (SELECT * FROM latest_actions WHERE asset_id = ANY(" + among + "))\n"
		tables = sources{assets: "among_assets", latest: "among_latest"}
	}

	// A bound caller's page is three parts, each of the branches below
	// once per part (halves).
	var branches []string
	for _, h := range halves(q.seenBy, page.Limit+1, param) {
		branches = append(branches, typeBranches(q, page, h, tables, classCond, param)...)
	}
	return with + "SELECT " + columns + " FROM (" + strings.Join(branches, "\nUNION ALL\n") + ") page ORDER BY asset_id, action_type COLLATE \"C\" LIMIT " +
		fmt.Sprint(limit), args
}

// sources are the tables of assets and of latest actions a page reads.
type sources struct{ assets, latest string }

// typeBranches are the branches of q's action types (see Compliance),
// each in half h, over tables.
func typeBranches(q query, page model.Page, h half, tables sources, classCond func(string) (string, bool),
	param func(string, any) string) []string {
	limit := page.Limit + 1
	allStates := len(q.States) == len(States)
	var branches []string
	for _, actionType := range q.ActionTypes {
		// The keyset condition of this type: after the cursor's asset, or
		// at it when the type comes after the cursor's type.
		keyset := func(column string) string {
			switch {
			case page.After == uuid.Nil:
				return "true"
			case q.rank(actionType) > page.AfterSub:
				return column + " >= " + param("after", page.After)
			}
			return column + " > " + param("after", page.After)
		}
		// The filters that name assets, on the asset column asset.
		named := func(asset string) string {
			var f string
			if q.AssetID != nil {
				f += " AND " + asset + " = " + param("asset_id", *q.AssetID)
			}
			if q.among != nil {
				f += " AND " + asset + " = ANY(" + param("among", q.among) + ")"
			}
			return f
		}
		// The filters of a branch on the asset column asset of the
		// tables it reads (their aliases: each holds the owner).
		filters := func(asset string, tables ...string) string {
			f := named(asset)
			if q.AssetTypeID != nil {
				f += " AND k.asset_type_id = " + param("asset_type_id", *q.AssetTypeID)
			}
			return f + h.cond(asset, tables)
		}
		// A bound half's walk: from the cursor, and only the named assets
		// when the filter names some (one asset's rows are a probe, not a
		// walk of every asset the organization sees).
		walk := func() string { return keyset(seenAsset) + named(seenAsset) }
		// actionType is a listed type (validated), safe as a literal;
		// literals let the planner use the per-type index ranges. An added
		// type's rows are the covered assets' only (actiontypes.Covered).
		literal := "'" + actionType + "'"
		if !builtin(actionType) {
			cond := filters("k.asset_id", "k") + actiontypes.Covered(literal, q.AsOf != nil)
			branches = append(branches, h.wrap(plannedBranch(literal, q, tables, keyset("k.asset_id"), cond, limit, param), walk()))
			continue
		}
		if q.planned(actionType) || q.AsOf != nil {
			branches = append(branches, h.wrap(plannedBranch(literal, q, tables, keyset("k.asset_id"), filters("k.asset_id", "k"), limit, param), walk()))
			continue
		}
		if q.asks(StateNever) {
			where := ""
			if !allStates {
				conds := []string{"l.asset_id IS NULL"}
				for _, c := range []string{classFailed, classOpenEnded, classDated} {
					if cond, ok := classCond(c); ok {
						conds = append(conds, "("+cond+")")
					}
				}
				where = " AND (" + strings.Join(conds, " OR ") + ")"
			}
			branches = append(branches, h.wrap(fmt.Sprintf(`(SELECT k.asset_id, k.asset_type_id, %[1]s::text AS action_type, `+latestColumns+`
	FROM %[6]s k LEFT JOIN %[7]s l ON l.asset_id = k.asset_id AND l.action_type = %[1]s
	CROSS JOIN `+noPlan+`
	WHERE NOT k.deleted AND %[2]s%[3]s%[4]s ORDER BY k.asset_id LIMIT %[5]d)`,
				literal, keyset("k.asset_id"), filters("k.asset_id", "k"), where, limit, tables.assets, tables.latest), walk()))
			continue
		}
		for _, c := range []string{classFailed, classOpenEnded, classDated} {
			cond, ok := classCond(c)
			if !ok {
				continue
			}
			branches = append(branches, h.wrap(fmt.Sprintf(`(SELECT l.asset_id, k.asset_type_id, %[1]s::text AS action_type, `+latestColumns+`
	FROM %[8]s l JOIN %[7]s k ON k.asset_id = l.asset_id
	CROSS JOIN `+noPlan+`
	WHERE l.action_type = %[1]s AND %[2]s AND %[3]s AND %[6]s AND NOT k.deleted%[4]s ORDER BY l.asset_id LIMIT %[5]d)`,
				literal, cond, keyset("l.asset_id"), filters("l.asset_id", "l", "k"), limit,
				// The cursor on both sides of the join: the planner's
				// merge join otherwise reads known_assets from its first
				// row up to the cursor on every deep page.
				keyset("k.asset_id"), tables.assets, tables.latest), walk()))
		}
	}
	return branches
}

// latestColumns are a branch's columns of latest_actions l (NULL without
// a row) and the due date and state r of a planned type's rows (NULL in
// the others, noPlan).
const latestColumns = `l.action_id, l.performed_at, l.status_ok, l.status_use_ok, l.valid_through, l.class, r.due_date, r.state,
	r.due_reason, r.usage`

// stateColumns are the columns of a page that stateRecord reads.
const stateColumns = "asset_id, action_type, action_id, status_ok, valid_through, state"

// branchColumns are latestColumns as a branch b answers them.
const branchColumns = `b.action_id, b.performed_at, b.status_ok, b.status_use_ok, b.valid_through, b.class, b.due_date, b.state, b.due_reason, b.usage`

// noPlan is the r of a type no plan is for: StateOf decides.
const noPlan = `(SELECT NULL::date AS due_date, NULL::text AS state, NULL::text AS due_reason, NULL::jsonb AS usage) r`

// plannedBranch is the branch of an action type some inspection plan is
// for: it walks the assets in order as the never branch does, finds each
// one's plan (due.StateJoins: the asset's own, else its asset type's,
// else the type's for every asset type, else none; for an as_of day the
// plans as they were at its end), and computes the due date and the state
// in SQL, so that the state filter is applied before the page's limit. A
// row no plan applies to gets the state StateOf would give it.
//
// A page of a state that few rows are in reads as many assets as it takes
// to fill it (the dates depend on the plan, so no index holds them); a
// plan's change costs nothing to write and is in the next answer.
func plannedBranch(literal string, q query, tables sources, keyset, filters string, limit int, param func(string, any) string) string {
	today := param("today", q.Today)
	dueBefore := "(" + today + "::date + coalesce(p.soon, interval '" + fmt.Sprint(DueWindow) + " days'))::date"
	if q.Filter.DueBefore != nil {
		dueBefore = param("due_before", q.DueBefore)
	}
	where := ""
	if len(q.States) != len(States) {
		where = " AND r.state = ANY(" + param("states", q.States) + "::text[])"
	}
	latest, live, plansAt := tables.latest+" l ON l.asset_id = k.asset_id AND l.action_type = "+literal, "NOT k.deleted", ""
	if q.AsOf != nil {
		// Ids and event ids are UUIDv7: an asset registered by the end of
		// the day has an id below the day's end, one deleted after it a
		// tombstone whose event id is not.
		end := endOf(*q.AsOf)
		bound := param("as_of_bound", UUIDAt(end))
		plansAt = param("as_of_end", end)
		latest = "LATERAL (" + latestKnownSQL(literal, plansAt) + ") l ON true"
		live = "k.asset_id < " + bound + " AND (NOT k.deleted OR k.event_id >= " + bound + ")"
	}
	return fmt.Sprintf(`(SELECT k.asset_id, k.asset_type_id, %[1]s::text AS action_type, `+latestColumns+`
	FROM %[9]s k LEFT JOIN %[7]s
	%[2]s
	WHERE %[8]s AND %[3]s%[4]s%[5]s ORDER BY k.asset_id LIMIT %[6]d)`,
		literal, due.StateJoins(literal, today, dueBefore, plansAt), keyset, filters, where, limit, latest, live, tables.assets)
}

// latestKnownSQL is the latest finalized action of known_assets k's
// actionType as the registry knew it at the instant end: among the
// present versions written before end and the replaced ones
// (action_versions) known at end, the greatest performed_at, ties to the
// most recently created. Each side is one range of its latest index.
func latestKnownSQL(actionType, end string) string {
	return fmt.Sprintf(`SELECT v.asset_id, v.action_id, v.performed_at, v.status_ok, v.status_use_ok, v.valid_through,
			CASE WHEN v.status_ok = false THEN 'failed' WHEN v.valid_through IS NULL THEN 'open_ended' ELSE 'dated' END AS class
		FROM ((SELECT asset_id, id AS action_id, performed_at, status_ok, status_use_ok, status_valid_through AS valid_through
				FROM actions WHERE asset_id = k.asset_id AND action_type = %[1]s AND status_finalized AND updated_at < %[2]s
				ORDER BY performed_at DESC, id DESC LIMIT 1)
			UNION ALL
			(SELECT asset_id, action_id, performed_at, status_ok, status_use_ok, status_valid_through
				FROM action_versions WHERE asset_id = k.asset_id AND action_type = %[1]s AND status_finalized
					AND known_from < %[2]s AND known_until >= %[2]s
				ORDER BY performed_at DESC, action_id DESC LIMIT 1)) v
		ORDER BY v.performed_at DESC, v.action_id DESC LIMIT 1`, actionType, end)
}

// PageSQL is the page query of f on the day today with its arguments,
// as a client bound to organization reads it ("": as an unbound one), for
// looking at its plan (make bench prints EXPLAIN ANALYZE of its
// compliance rows).
func PageSQL(f Filter, organization string, today model.Date, planned []string, page model.Page) (string, []any) {
	f.seenBy = organization
	return pageSQL(f.definite(today, planned, actiontypes.Builtin), page, "*")
}

// half is what one part of a bound page reads: cond is a branch's
// condition on its rows' asset column, or on the owner column of the
// tables it reads (their aliases); wrap makes the branch the half's,
// given the walk's conditions on seenAsset (the cursor, the assets the
// filter names).
type half struct {
	cond func(asset string, tables []string) string
	wrap func(branch, keyset string) string
}

// seenAsset is the column of the asset a bound half walks.
const seenAsset = "seen.asset_id"

// halves are the parts of a compliance page: for an unbound caller (seenBy
// "") one, the branches as they are; for a bound one three, never the
// same asset twice. The assets its organization owns and those with no
// owner are the branches as they are, each on one owner's range of the
// tables' owner indexes (owner_organization_id, kept from the copy by
// the actions migration 014), in page order as an unbound page reads
// its own. The assets granted to it (access.GrantedAssets, few) are a
// walk of the copy's rows in asset order from the cursor, reading each
// one's row (a lateral subquery: the planner may not merge the walk with
// every known asset, which it did at the quick bench's seed), up to the
// page's limit. One condition for all (access.VisibleTo) answers in no
// order.
func halves(seenBy string, limit int, param func(string, any) string) []half {
	if seenBy == "" {
		return []half{{cond: func(string, []string) string { return "" }, wrap: func(branch, _ string) string { return branch }}}
	}
	owned := func(name, owner string) half {
		return half{
			cond: func(_ string, tables []string) string {
				var c string
				for _, t := range tables {
					c += " AND " + t + ".owner_organization_id = " + param(name, owner) + "::uuid"
				}
				return c
			},
			wrap: func(branch, _ string) string { return branch },
		}
	}
	granted := half{
		cond: func(asset string, _ []string) string { return " AND " + asset + " = " + seenAsset },
		wrap: func(branch, keyset string) string {
			// The walk's own column, not the branch's equal one: the
			// planner knows the walk's order only by it.
			return fmt.Sprintf(`(SELECT %s, b.asset_type_id, b.action_type, `+branchColumns+` FROM (%s) seen
	CROSS JOIN LATERAL %s b WHERE %s ORDER BY %s LIMIT %d)`,
				seenAsset, access.GrantedAssets(param("seen_by", seenBy)), branch, keyset, seenAsset, limit)
		},
	}
	return []half{owned("seen_by", seenBy), owned("everyone", access.Everyone), granted}
}
