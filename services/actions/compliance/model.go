// Package compliance is the actions service's component for what is due:
// GET /compliance (for every asset and action type, the latest finalized
// action and the state it leaves the row in), the read model it is
// answered from, and the compliance.updated events of its rows' changes.
//
//   - model.go: the rules (which state a row is in), the filter, the
//     rows the roller reads;
//   - service.go, endpoint.go, transport.go: GET /compliance, with
//     rollup.go for include=components;
//   - store.go: latest_actions (kept in each action write's transaction,
//     KeepLatest) and the page query;
//   - projection (a subpackage with its own store): the job that keeps
//     known_assets from the assets service's events, and the rebuild
//     from its listing;
//   - roller (a subpackage with its own store): the job that announces
//     the rows' transitions.
//
// The plans a row falls due by are the plans component's and due's; the
// action types the actiontypes component's.
package compliance

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

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

// Row is one asset and action type, as GET /compliance shows it.
// DueDate is when the next action falls due: the latest's valid_through
// when it has one, else its performed_at plus its plan's interval, or for
// an asset never acted on its registration date plus the plan's delay
// (null when neither a date nor a plan says).
type Row struct {
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
	// DueReason says what makes the row due: "date", or "usage" when only
	// its plan's usage interval has passed (nil without a due date);
	// Usage is that interval's figures (null without one).
	DueReason *string         `json:"due_reason"`
	Usage     json.RawMessage `json:"usage"`
	// RolledUpState (include=components): the worst of State and the
	// asset's components' states of the action type (due.Worst); nil
	// when not asked for.
	RolledUpState *string `json:"rolled_up_state"`
}

// Filter is GET /compliance's query. ActionTypes and States empty mean
// all of them; DueBefore nil means today + DueWindow days.
type Filter struct {
	AssetID, AssetTypeID *uuid.UUID
	ActionTypes, States  []string
	DueBefore            *model.Date
	// AsOf asks for the rows as the registry knew them at the end of that
	// day (UTC), their states on that day.
	AsOf *model.Date
	// Components (include=components) gives each row its rolled-up state.
	Components bool
	seenBy     string      // the organization a bound caller reads as: the rows of assets it sees
	among      []uuid.UUID // only these assets' rows (a page's components)
}

// query is a filter made definite: the types and states in their order,
// the dates fixed. Planned is the action types some inspection plan is
// for: their rows' dates come from the plans, read by the page query
// itself (so that a plan's change is in the very next answer). Types is
// every action type, in the rows' order.
type query struct {
	Filter
	Today, DueBefore model.Date
	Planned, Types   []string
}

// definite fills in the defaults of f for the day today (the as_of day
// when f has one), with planned the action types some plan is for and
// types every action type (sorted).
func (f Filter) definite(today model.Date, planned, types []string) query {
	if f.AsOf != nil {
		today = *f.AsOf
	}
	q := query{Filter: f, Today: today, DueBefore: model.DateOf(today.Time().AddDate(0, 0, DueWindow)),
		Planned: planned, Types: types}
	if f.DueBefore != nil {
		q.DueBefore = *f.DueBefore
	}
	q.ActionTypes = inOrder(types, f.ActionTypes)
	q.States = inOrder(States, f.States)
	return q
}

// planned reports whether some plan is for actionType.
func (q query) planned(actionType string) bool { return slices.Contains(q.Planned, actionType) }

// asks reports whether the states asked for include state.
func (q query) asks(state string) bool { return slices.Contains(q.States, state) }

// rank is a type's place in a page's order of types, the second part of a
// compliance cursor (actiontypes.MaxTypes keeps it in a byte).
func (q query) rank(actionType string) uint8 {
	return uint8(slices.Index(q.Types, actionType))
}

// inOrder is the members of all that chosen names (all when none), in
// all's order.
func inOrder(all, chosen []string) []string {
	if len(chosen) == 0 {
		return all
	}
	var out []string
	for _, v := range all {
		if slices.Contains(chosen, v) {
			out = append(out, v)
		}
	}
	return out
}

// endOf is the end of day d (UTC): the instant an as_of read looks at.
func endOf(d model.Date) time.Time {
	return time.Date(d.Year, d.Month, d.Day+1, 0, 0, 0, 0, time.UTC)
}

// Pair is an (asset, action type) whose latest action a write may change.
type Pair struct {
	AssetID    uuid.UUID
	ActionType string
}

// lockKey is the advisory lock of a pair's latest_actions row.
func (p Pair) lockKey() string {
	return "latest_actions:" + p.AssetID.String() + ":" + p.ActionType
}

// inLockOrder is pairs once each, in the order every write takes their
// locks: asset, then action type.
func inLockOrder(pairs []Pair) []Pair {
	slices.SortFunc(pairs, func(a, b Pair) int {
		// A UUID's bytes sort as its text does.
		if c := bytes.Compare(a.AssetID[:], b.AssetID[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.ActionType, b.ActionType)
	})
	return slices.Compact(pairs)
}

// lockKeys are the locks of pairs, once each, in the order LockLatest
// takes them (the keys' order is KeepLatest's).
func lockKeys(pairs []Pair) []string {
	keys := make([]string, len(pairs))
	for i, p := range pairs {
		keys[i] = p.lockKey()
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// recomputeArgs are recomputeLatestSQL's arguments for pairs: their rows
// are written in lock order, as their locks were taken.
func recomputeArgs(pairs []Pair) []any {
	type pair struct {
		AssetID    uuid.UUID `json:"asset_id"`
		ActionType string    `json:"action_type"`
	}
	pairs = inLockOrder(slices.Clone(pairs))
	list := make([]pair, len(pairs))
	for i, p := range pairs {
		list[i] = pair(p)
	}
	return []any{store.Records(list)}
}

// RebuildBatch bounds the assets one transaction of the rebuild
// recomputes: their actions are read and their rows written while the
// table lock holds the action writes back, so a batch takes tens of
// milliseconds whatever the table's size.
const RebuildBatch = 500

// UUIDAt is the smallest UUIDv7 of t's millisecond: every id made at or
// after t sorts after it.
func UUIDAt(t time.Time) uuid.UUID {
	var u uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(u[:6], ms[2:])
	u[6] = 0x70 // version 7
	u[8] = 0x80 // RFC 4122 variant
	return u
}

// builtin reports whether actionType is one of the four every asset has a
// row of.
func builtin(actionType string) bool { return slices.Contains(actiontypes.Builtin, actionType) }

func ptrTo[T any](v T) *T { return &v }

// record is a row of the page query: an asset and action type with its
// latest action, if any (the latest's columns are NULL when not).
type record struct {
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
	DueDate   *model.Date     `db:"due_date"`
	State     *string         `db:"state"`
	DueReason *string         `db:"due_reason"`
	Usage     json.RawMessage `db:"usage"`
}

// row is the record as GET /compliance shows it on q's day.
func (r record) row(q query) Row {
	row := Row{AssetID: r.AssetID, AssetTypeID: r.AssetTypeID, ActionType: r.ActionType}
	var latest *Latest
	if r.ActionID != nil {
		latest = &Latest{ActionID: *r.ActionID, PerformedAt: *r.PerformedAt, StatusOK: r.StatusOK, StatusUseOK: r.StatusUseOK,
			ValidThrough: r.ValidThrough}
		row.ValidThrough, row.LastActionID, row.LastPerformedAt = r.ValidThrough, r.ActionID, r.PerformedAt
		row.StatusOK, row.StatusUseOK = r.StatusOK, r.StatusUseOK
	}
	row.State, row.DueDate = stateIn(q, latest != nil, r.StatusOK, r.ValidThrough, r.State), r.ValidThrough
	if row.DueDate != nil {
		row.DueReason = ptrTo("date")
	}
	if r.State != nil {
		row.DueDate, row.DueReason, row.Usage = r.DueDate, r.DueReason, r.Usage
	}
	return row
}

// stateIn is a row's state on q's day: the state a planned type's branch
// computed (planned), else StateOf the latest action, when there is one
// (hasLatest), of statusOK and validThrough.
func stateIn(q query, hasLatest bool, statusOK *bool, validThrough *model.Date, planned *string) string {
	switch {
	case planned != nil:
		return *planned
	case !hasLatest:
		return StateNever
	}
	return StateOf(&Latest{StatusOK: statusOK, ValidThrough: validThrough}, q.Today, q.DueBefore)
}

// pageOf is the page of rows, read with page's limit and one more: its
// cursor is the last row's asset and its action type's rank.
func pageOf[T any](q query, page model.Page, rows []T, key func(T) (uuid.UUID, string)) model.Paged[T] {
	paged := model.TrimPage(rows, page, func(r T) uuid.UUID { asset, _ := key(r); return asset })
	if paged.Next != uuid.Nil {
		_, actionType := key(paged.Items[len(paged.Items)-1])
		paged.NextSub = q.rank(actionType)
	}
	return paged
}

// RowState is a row's asset, action type and state (Store.RowStates).
type RowState struct {
	AssetID    uuid.UUID
	ActionType string
	State      string
}

// stateRecord is a row of a page of stateColumns (Store.RowStates).
type stateRecord struct {
	AssetID      uuid.UUID   `db:"asset_id"`
	ActionType   string      `db:"action_type"`
	ActionID     *uuid.UUID  `db:"action_id"`
	StatusOK     *bool       `db:"status_ok"`
	ValidThrough *model.Date `db:"valid_through"`
	State        *string     `db:"state"`
}
