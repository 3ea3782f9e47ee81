package compliance

import (
	"testing"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions/actiontypes"
)

func date(s string) model.Date {
	d, err := model.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

func datePtr(s string) *model.Date {
	d := date(s)
	return &d
}

func boolPtr(b bool) *bool { return &b }

// The contract's precedence: never, failed, open_ended, overdue (before
// today), due (before due_before), valid.
func TestStateOf(t *testing.T) {
	today, dueBefore := date("2026-06-15"), date("2026-07-15")
	tests := []struct {
		name         string
		latest       *Latest
		today, until model.Date
		want         string
	}{
		{"no finalized action is never", nil, today, dueBefore, StateNever},
		{"status_ok false is failed", &Latest{StatusOK: boolPtr(false), ValidThrough: datePtr("2030-01-01")}, today, dueBefore, StateFailed},
		{"failed wins over open_ended", &Latest{StatusOK: boolPtr(false)}, today, dueBefore, StateFailed},
		{"failed wins over overdue", &Latest{StatusOK: boolPtr(false), ValidThrough: datePtr("2020-01-01")}, today, dueBefore, StateFailed},
		{"no valid_through is open_ended", &Latest{StatusOK: boolPtr(true)}, today, dueBefore, StateOpenEnded},
		{"status_ok unknown is not failed", &Latest{ValidThrough: datePtr("2030-01-01")}, today, dueBefore, StateValid},
		{"status_ok unknown, no date: open_ended", &Latest{}, today, dueBefore, StateOpenEnded},
		{"yesterday is overdue", &Latest{StatusOK: boolPtr(true), ValidThrough: datePtr("2026-06-14")}, today, dueBefore, StateOverdue},
		{"today is not overdue but due", &Latest{StatusOK: boolPtr(true), ValidThrough: datePtr("2026-06-15")}, today, dueBefore, StateDue},
		{"the day before due_before is due", &Latest{ValidThrough: datePtr("2026-07-14")}, today, dueBefore, StateDue},
		{"due_before itself is valid", &Latest{ValidThrough: datePtr("2026-07-15")}, today, dueBefore, StateValid},
		{"far ahead is valid", &Latest{ValidThrough: datePtr("2099-12-31")}, today, dueBefore, StateValid},
		{"due_before in the past: overdue still against today", &Latest{ValidThrough: datePtr("2026-06-01")}, today, date("2026-01-01"), StateOverdue},
		{"due_before in the past: nothing is due", &Latest{ValidThrough: datePtr("2026-06-15")}, today, date("2026-01-01"), StateValid},
		{"due_before today: nothing is due", &Latest{ValidThrough: datePtr("2026-06-16")}, today, today, StateValid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StateOf(tt.latest, tt.today, tt.until); got != tt.want {
				t.Errorf("StateOf = %s, want %s", got, tt.want)
			}
		})
	}
}

// A row's state as the page and the roll-up read it: a planned type's
// branch says it; else no latest action is never, whatever the columns
// hold; else StateOf the latest.
func TestStateIn(t *testing.T) {
	q := query{Today: date("2026-06-15"), DueBefore: date("2026-07-15")}
	overdue := StateOverdue
	tests := []struct {
		name         string
		hasLatest    bool
		statusOK     *bool
		validThrough *model.Date
		planned      *string
		want         string
	}{
		{"the plan's state wins over the latest's", true, boolPtr(true), datePtr("2099-01-01"), &overdue, StateOverdue},
		{"the plan's state without a latest", false, nil, nil, &overdue, StateOverdue},
		{"no latest and no plan is never", false, nil, nil, nil, StateNever},
		{"no latest is never, not open_ended", false, boolPtr(true), nil, nil, StateNever},
		{"a latest is StateOf's", true, boolPtr(false), datePtr("2099-01-01"), nil, StateFailed},
		{"a latest without a date is open_ended", true, boolPtr(true), nil, nil, StateOpenEnded},
		{"a latest due before due_before", true, boolPtr(true), datePtr("2026-07-01"), nil, StateDue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stateIn(q, tt.hasLatest, tt.statusOK, tt.validThrough, tt.planned); got != tt.want {
				t.Errorf("stateIn = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestComplianceFilterDefaults(t *testing.T) {
	today := date("2026-12-15")
	q := Filter{}.definite(today, nil, actiontypes.Builtin)
	if q.DueBefore != date("2027-01-14") {
		t.Errorf("default due_before = %s, want today + 30 days", q.DueBefore)
	}
	if len(q.ActionTypes) != 4 || len(q.States) != len(States) {
		t.Errorf("defaults: %v, %v; want every type and state", q.ActionTypes, q.States)
	}
	q = Filter{ActionTypes: []string{"repair", "expert_control"}, States: []string{"valid", "never"}, DueBefore: datePtr("2020-01-01")}.definite(today, nil, actiontypes.Builtin)
	if q.ActionTypes[0] != "expert_control" || q.States[0] != StateNever || q.DueBefore != date("2020-01-01") {
		t.Errorf("chosen: %v, %v, %s; want them in page order and due_before as given", q.ActionTypes, q.States, q.DueBefore)
	}
}
