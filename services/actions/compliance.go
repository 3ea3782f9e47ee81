package actions

// The compliance read model: for every asset and action type, what is due.
// The rules (which action is the latest, which state a row is in) are the
// pure functions at the top; the store's side (the latest_actions rows kept
// in every action write's transaction, and the page query) follows.
// known_assets, the projection of the assets service's assets, is kept by
// projection.go.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/actiontypes"
)

// The states of a compliance row, in the contract's precedence.
const (
	StateNever     = "never"      // no finalized action of the type
	StateFailed    = "failed"     // the latest has status_ok false
	StateOpenEnded = "open_ended" // the latest has no status_valid_through
	StateOverdue   = "overdue"    // status_valid_through before today (UTC)
	StateDue       = "due"        // before due_before
	StateValid     = "valid"
)

// States are the wire values of state, in precedence order.
var States = []string{StateNever, StateFailed, StateOpenEnded, StateOverdue, StateDue, StateValid}

// DueWindow is how far ahead due_before lies when a caller does not say.
const DueWindow = 30 // days

// The date-independent part of a row's state, as latest_actions stores it.
const (
	classFailed    = "failed"
	classOpenEnded = "open_ended"
	classDated     = "dated"
)

// Latest is the latest finalized action of an (asset, action type).
type Latest struct {
	ActionID     uuid.UUID   `db:"action_id"`
	PerformedAt  model.Date  `db:"performed_at"`
	StatusOK     *bool       `db:"status_ok"`
	StatusUseOK  *bool       `db:"status_use_ok"`
	ValidThrough *model.Date `db:"valid_through"`
}

// classOf is the part of the state that does not depend on the date: what
// latest_actions.class holds (classSQL says the same in SQL).
func classOf(statusOK *bool, validThrough *model.Date) string {
	switch {
	case statusOK != nil && !*statusOK:
		return classFailed
	case validThrough == nil:
		return classOpenEnded
	}
	return classDated
}

// classSQL is classOf over an actions row.
const classSQL = `CASE WHEN status_ok = false THEN 'failed' WHEN status_valid_through IS NULL THEN 'open_ended' ELSE 'dated' END`

// StateOf is the state of an (asset, action type) whose latest finalized
// action is latest (nil: none), on the day today, for a caller who calls
// due what expires before dueBefore.
func StateOf(latest *Latest, today, dueBefore model.Date) string {
	if latest == nil {
		return StateNever
	}
	switch classOf(latest.StatusOK, latest.ValidThrough) {
	case classFailed:
		return StateFailed
	case classOpenEnded:
		return StateOpenEnded
	}
	switch vt := *latest.ValidThrough; {
	case vt.Before(today):
		return StateOverdue
	case vt.Before(dueBefore):
		return StateDue
	}
	return StateValid
}

// ComplianceRow is one asset and action type, as GET /compliance shows it.
// DueDate is when the next action falls due: the latest's valid_through
// when it has one, else its performed_at plus its plan's interval, or for
// an asset never acted on its registration date plus the plan's delay
// (null when neither a date nor a plan says).
type ComplianceRow struct {
	AssetID         uuid.UUID   `json:"asset_id"`
	AssetTypeID     uuid.UUID   `json:"asset_type_id"`
	ActionType      string      `json:"action_type"`
	State           string      `json:"state"`
	DueDate         *model.Date `json:"due_date"`
	ValidThrough    *model.Date `json:"valid_through"`
	LastActionID    *uuid.UUID  `json:"last_action_id"`
	LastPerformedAt *model.Date `json:"last_performed_at"`
	StatusOK        *bool       `json:"status_ok"`
	StatusUseOK     *bool       `json:"status_use_ok"`
}

// ComplianceFilter is GET /compliance's query. ActionTypes and States
// empty mean all of them; DueBefore nil means today + DueWindow days.
type ComplianceFilter struct {
	AssetID, AssetTypeID *uuid.UUID
	ActionTypes, States  []string
	DueBefore            *model.Date
	// AsOf asks for the rows as the registry knew them at the end of that
	// day (UTC), their states on that day.
	AsOf   *model.Date
	seenBy string // the organization a bound caller reads as: the rows of assets it sees
}

// complianceQuery is a filter made definite: the types and states in their
// order, the dates fixed. Planned is the action types some inspection plan
// is for: their rows' dates come from the plans, read by the page query
// itself (so that a plan's change is in the very next answer). Types is
// every action type, in the rows' order.
type complianceQuery struct {
	ComplianceFilter
	Today, DueBefore model.Date
	Planned, Types   []string
}

// definite fills in the defaults of f for the day today (the as_of day
// when f has one), with planned the action types some plan is for and
// types every action type (sorted).
func (f ComplianceFilter) definite(today model.Date, planned, types []string) complianceQuery {
	if f.AsOf != nil {
		today = *f.AsOf
	}
	q := complianceQuery{ComplianceFilter: f, Today: today, DueBefore: model.DateOf(today.Time().AddDate(0, 0, DueWindow)),
		Planned: planned, Types: types}
	if f.DueBefore != nil {
		q.DueBefore = *f.DueBefore
	}
	q.ActionTypes = inOrder(types, f.ActionTypes)
	q.States = inOrder(States, f.States)
	return q
}

// rank is a type's place in a page's order of types, the second part of a
// compliance cursor (actiontypes.MaxTypes keeps it in a byte).
func (q complianceQuery) rank(actionType string) uint8 {
	return uint8(slices.Index(q.Types, actionType))
}

// latestPair is an (asset, action type) whose latest action a write may
// change.
type latestPair struct {
	AssetID    uuid.UUID
	ActionType string
}

// keepLatest recomputes the latest_actions rows of pairs from the actions
// table, inside the transaction of the write that changed them. Each
// pair's advisory lock orders concurrent writes to one pair: the recompute
// runs after the lock is granted, as a new statement, so it sees what the
// write before it committed (read committed).
func keepLatest(ctx context.Context, tx pgx.Tx, pairs ...latestPair) error {
	slices.SortFunc(pairs, func(a, b latestPair) int {
		if c := strings.Compare(a.AssetID.String(), b.AssetID.String()); c != 0 {
			return c
		}
		return strings.Compare(a.ActionType, b.ActionType)
	})
	pairs = slices.Compact(pairs)
	for _, p := range pairs {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
			"latest_actions:"+p.AssetID.String()+":"+p.ActionType); err != nil {
			return store.Classify(err, "lock latest action")
		}
		if _, err := tx.Exec(ctx, recomputeLatestSQL, p.AssetID, p.ActionType); err != nil {
			return store.Classify(err, "recompute latest action")
		}
	}
	return nil
}

// latestOfPairSQL is the latest finalized action of ($1, $2): the greatest
// performed_at, ties to the most recently created (ids are UUIDv7).
const latestOfPairSQL = `SELECT asset_id, action_type, id, performed_at, status_ok, status_use_ok, status_valid_through, ` + classSQL + ` AS class
	FROM actions WHERE asset_id = $1 AND action_type = $2 AND status_finalized
	ORDER BY performed_at DESC, id DESC LIMIT 1`

// recomputeLatestSQL replaces the pair's row by its latest, or removes it
// when the pair has no finalized action left.
const recomputeLatestSQL = `WITH latest AS (` + latestOfPairSQL + `),
	gone AS (DELETE FROM latest_actions WHERE asset_id = $1 AND action_type = $2 AND NOT EXISTS (SELECT FROM latest))
	INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, status_ok, status_use_ok, valid_through, class)
	SELECT * FROM latest
	ON CONFLICT (asset_id, action_type) DO UPDATE SET action_id = excluded.action_id, performed_at = excluded.performed_at,
		status_ok = excluded.status_ok, status_use_ok = excluded.status_use_ok, valid_through = excluded.valid_through,
		class = excluded.class`

// rebuildBatch bounds the assets one transaction of the rebuild
// recomputes: their actions are read and their rows written while the
// table lock holds the action writes back, so a batch takes tens of
// milliseconds whatever the table's size.
const rebuildBatch = 500

// RebuildLatest recomputes every latest_actions row from the actions
// table, rebuildBatch assets at a time in asset order, each batch in a
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
				WHERE asset_id > $1 ORDER BY asset_id LIMIT $2) batch ORDER BY asset_id DESC LIMIT 1)`, after, rebuildBatch).Scan(&last); err != nil {
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
// one statement: a seed's way, on a database nothing else uses.
const RebuildLatestSQL = rebuildLatestSelect + `FROM actions WHERE status_finalized
	ORDER BY asset_id, action_type, performed_at DESC, id DESC`

// rebuildLatestOfAssetsSQL fills latest_actions for the assets after $1
// up to $2, whose rows were removed.
const rebuildLatestOfAssetsSQL = rebuildLatestSelect + `FROM actions WHERE status_finalized AND asset_id > $1 AND asset_id <= $2
	ORDER BY asset_id, action_type, performed_at DESC, id DESC`

const rebuildLatestSelect = `INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, status_ok,
		status_use_ok, valid_through, class)
	SELECT DISTINCT ON (asset_id, action_type) asset_id, action_type, id, performed_at, status_ok, status_use_ok,
		status_valid_through, ` + classSQL + `
	`

// complianceRecord is a row of the page query: an asset and action type
// with its latest action, if any (the latest's columns are NULL when not).
type complianceRecord struct {
	AssetID      uuid.UUID   `db:"asset_id"`
	AssetTypeID  uuid.UUID   `db:"asset_type_id"`
	ActionType   string      `db:"action_type"`
	ActionID     *uuid.UUID  `db:"action_id"`
	PerformedAt  *model.Date `db:"performed_at"`
	StatusOK     *bool       `db:"status_ok"`
	StatusUseOK  *bool       `db:"status_use_ok"`
	ValidThrough *model.Date `db:"valid_through"`
	Class        *string     `db:"class"`
	// A planned type's branch says the due date and state itself (NULL
	// in the others: StateOf decides from the latest).
	DueDate *model.Date `db:"due_date"`
	State   *string     `db:"state"`
}

// Compliance reads one page of q in asset order, then action type.
//
// The query is a UNION ALL of branches, one per action type and, when the
// states asked for leave out never, per class (failed, open_ended, dated
// with its valid_through ranges). Each branch is one ordered index range
// scan from the cursor, limited to a page: a branch with never walks the
// assets and looks up each one's latest action of its type; the others walk
// latest_actions_state_idx and read only matching rows. The few pages
// they return are merged by the outer ORDER BY. A deep page costs what the
// first does.
func (s *Store) Compliance(ctx context.Context, q complianceQuery, page model.Page) (model.Paged[ComplianceRow], error) {
	sql, args := complianceSQL(q, page)
	rows, err := s.Reads(ctx).Query(ctx, sql, args...)
	if err != nil {
		return model.Paged[ComplianceRow]{}, store.Classify(err, "compliance")
	}
	records, err := pgx.CollectRows(rows, pgx.RowToStructByName[complianceRecord])
	if err != nil {
		return model.Paged[ComplianceRow]{}, store.Classify(err, "compliance")
	}
	out := make([]ComplianceRow, 0, len(records))
	for _, r := range records {
		row := ComplianceRow{AssetID: r.AssetID, AssetTypeID: r.AssetTypeID, ActionType: r.ActionType}
		var latest *Latest
		if r.ActionID != nil {
			latest = &Latest{ActionID: *r.ActionID, PerformedAt: *r.PerformedAt, StatusOK: r.StatusOK, StatusUseOK: r.StatusUseOK,
				ValidThrough: r.ValidThrough}
			row.ValidThrough, row.LastActionID, row.LastPerformedAt = r.ValidThrough, r.ActionID, r.PerformedAt
			row.StatusOK, row.StatusUseOK = r.StatusOK, r.StatusUseOK
		}
		row.State, row.DueDate = StateOf(latest, q.Today, q.DueBefore), r.ValidThrough
		if r.State != nil {
			row.State, row.DueDate = *r.State, r.DueDate
		}
		out = append(out, row)
	}
	paged := model.TrimPage(out, page, func(r ComplianceRow) uuid.UUID { return r.AssetID })
	if paged.Next != uuid.Nil {
		paged.NextSub = q.rank(paged.Items[len(paged.Items)-1].ActionType)
	}
	return paged, nil
}

// complianceSQL builds the page query of q (see Compliance).
func complianceSQL(q complianceQuery, page model.Page) (string, []any) {
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
		filters := func(asset string) string {
			var f string
			if q.AssetID != nil {
				f += " AND " + asset + " = " + param("asset_id", *q.AssetID)
			}
			if q.AssetTypeID != nil {
				f += " AND k.asset_type_id = " + param("asset_type_id", *q.AssetTypeID)
			}
			f += visibleFilter(q.seenBy, asset, param)
			return f
		}
		// actionType is a listed type (validated), safe as a literal;
		// literals let the planner use the per-type index ranges. An added
		// type's rows are the covered assets' only (actiontypes.Covered).
		literal := "'" + actionType + "'"
		if !slices.Contains(ActionTypes, actionType) {
			cond := filters("k.asset_id") + actiontypes.Covered(literal, q.AsOf != nil)
			branches = append(branches, plannedBranch(literal, q, keyset("k.asset_id"), cond, limit, param))
			continue
		}
		if slices.Contains(q.Planned, actionType) || q.AsOf != nil {
			branches = append(branches, plannedBranch(literal, q, keyset("k.asset_id"), filters("k.asset_id"), limit, param))
			continue
		}
		if slices.Contains(q.States, StateNever) {
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
			branches = append(branches, fmt.Sprintf(`(SELECT k.asset_id, k.asset_type_id, %[1]s::text AS action_type, `+latestColumns+`
	FROM known_assets k LEFT JOIN latest_actions l ON l.asset_id = k.asset_id AND l.action_type = %[1]s
	CROSS JOIN `+noPlan+`
	WHERE NOT k.deleted AND %[2]s%[3]s%[4]s ORDER BY k.asset_id LIMIT %[5]d)`,
				literal, keyset("k.asset_id"), filters("k.asset_id"), where, limit))
			continue
		}
		for _, c := range []string{classFailed, classOpenEnded, classDated} {
			cond, ok := classCond(c)
			if !ok {
				continue
			}
			branches = append(branches, fmt.Sprintf(`(SELECT l.asset_id, k.asset_type_id, %[1]s::text AS action_type, `+latestColumns+`
	FROM latest_actions l JOIN known_assets k ON k.asset_id = l.asset_id
	CROSS JOIN `+noPlan+`
	WHERE l.action_type = %[1]s AND %[2]s AND %[3]s AND %[6]s AND NOT k.deleted%[4]s ORDER BY l.asset_id LIMIT %[5]d)`,
				literal, cond, keyset("l.asset_id"), filters("l.asset_id"), limit,
				// The cursor on both sides of the join: the planner's
				// merge join otherwise reads known_assets from its first
				// row up to the cursor on every deep page.
				keyset("k.asset_id")))
		}
	}
	return "SELECT * FROM (" + strings.Join(branches, "\nUNION ALL\n") + ") page ORDER BY asset_id, action_type COLLATE \"C\" LIMIT " +
		fmt.Sprint(limit), args
}

// latestColumns are a branch's columns of latest_actions l (NULL without
// a row) and the due date and state r of a planned type's rows (NULL in
// the others, noPlan).
const latestColumns = `l.action_id, l.performed_at, l.status_ok, l.status_use_ok, l.valid_through, l.class, r.due_date, r.state`

// noPlan is the r of a type no plan is for: StateOf decides.
const noPlan = `(SELECT NULL::date AS due_date, NULL::text AS state) r`

// plannedBranch is the branch of an action type some inspection plan is
// for: it walks the assets in order as the never branch does, finds each
// one's plan (its asset type's own, else the type's for every asset type,
// else none), and computes the due date and the state in SQL, so that the
// state filter is applied before the page's limit. PostgreSQL's date +
// interval adds the months first, clamping to the month's end, then the
// days: model.Period.AddTo's rule. A row no plan applies to gets the
// state StateOf would give it.
//
// A page of a state that few rows are in reads as many assets as it takes
// to fill it (the dates depend on the plan, so no index holds them); a
// plan's change costs nothing to write and is in the next answer.
func plannedBranch(literal string, q complianceQuery, keyset, filters string, limit int, param func(string, any) string) string {
	today := param("today", q.Today)
	dueBefore := "(" + today + "::date + coalesce(p.soon, interval '" + fmt.Sprint(DueWindow) + " days'))::date"
	if q.ComplianceFilter.DueBefore != nil {
		dueBefore = param("due_before", q.DueBefore)
	}
	where := ""
	if len(q.States) != len(States) {
		where = " AND r.state = ANY(" + param("states", q.States) + "::text[])"
	}
	latest, live := "latest_actions l ON l.asset_id = k.asset_id AND l.action_type = "+literal, "NOT k.deleted"
	if q.AsOf != nil {
		// Ids and event ids are UUIDv7: an asset registered by the end of
		// the day has an id below the day's end, one deleted after it a
		// tombstone whose event id is not.
		end := time.Date(q.AsOf.Year, q.AsOf.Month, q.AsOf.Day+1, 0, 0, 0, 0, time.UTC)
		bound := param("as_of_bound", uuidAt(end))
		latest = "LATERAL (" + latestKnownSQL(literal, param("as_of_end", end)) + ") l ON true"
		live = "k.asset_id < " + bound + " AND (NOT k.deleted OR k.event_id >= " + bound + ")"
	}
	return fmt.Sprintf(`(SELECT k.asset_id, k.asset_type_id, %[1]s::text AS action_type, `+latestColumns+`
	FROM known_assets k LEFT JOIN %[7]s
	%[2]s
	WHERE %[8]s AND %[3]s%[4]s%[5]s ORDER BY k.asset_id LIMIT %[6]d)`,
		literal, planStateJoins(literal, today, dueBefore), keyset, filters, where, limit, latest, live)
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

// planStateJoins finds the plan p of known_assets k's row of actionType
// (latest_actions l: its latest) and computes its due date and state r on
// the day today with dueBefore (SQL expressions, dueBefore may use
// p.soon, the plan's due-soon window).
func planStateJoins(actionType, today, dueBefore string) string {
	return fmt.Sprintf(`LEFT JOIN LATERAL (SELECT p.interval_period::interval AS every, p.first_due_after::interval AS first,
			p.due_soon::interval AS soon
		FROM inspection_plans p WHERE p.action_type = %[1]s AND (p.asset_type_id = k.asset_type_id OR p.asset_type_id IS NULL)
		ORDER BY p.asset_type_id IS NULL LIMIT 1) p ON true
	CROSS JOIN LATERAL (SELECT CASE
			WHEN l.asset_id IS NULL THEN (registered_on(k.asset_id) + p.first)::date
			WHEN l.valid_through IS NOT NULL THEN l.valid_through
			ELSE (l.performed_at + p.every)::date END AS due_date) d
	CROSS JOIN LATERAL (SELECT d.due_date, CASE
			WHEN l.asset_id IS NULL THEN CASE WHEN d.due_date < %[2]s THEN 'overdue' ELSE 'never' END
			WHEN l.class = 'failed' THEN 'failed'
			WHEN d.due_date IS NULL THEN 'open_ended'
			WHEN d.due_date < %[2]s THEN 'overdue'
			WHEN d.due_date < %[3]s THEN 'due'
			ELSE 'valid' END AS state) r`, actionType, today, dueBefore)
}

// ComplianceSQL is the page query of f on the day today with its
// arguments, for looking at its plan (make bench prints EXPLAIN ANALYZE of
// its compliance rows).
func ComplianceSQL(f ComplianceFilter, today model.Date, planned []string, page model.Page) (string, []any) {
	return complianceSQL(f.definite(today, planned, ActionTypes), page)
}
