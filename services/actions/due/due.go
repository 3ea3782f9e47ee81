// Package due is the actions service's component for when a
// compliance row falls due beyond its latest action's own date: which
// inspection plan applies to a row (the asset's own plan, else its asset
// type's, else the plan for every asset type), the plans as they were on
// a past day (GET /compliance?as_of), the components an asset's row rolls
// up (include=components) and the usage a plan may count besides the
// calendar (a meter's readings since the last action). The compliance
// read model (the actions package) builds its page query from the SQL
// this package's store gives, and keeps the parent links and meter
// readings through this package's store from the assets service's events.
package due

import (
	"slices"
)

// The states of a compliance row (the actions package's wire values).
const (
	stateNever     = "never"
	stateFailed    = "failed"
	stateOpenEnded = "open_ended"
	stateOverdue   = "overdue"
	stateDue       = "due"
	stateValid     = "valid"
)

// worstFirst orders the states from the one that says least for an
// asset's fitness to the one that says most: a failed action, then an
// overdue one, then none at all (no evidence, whether or not a plan makes
// it due yet), then one falling due soon, then one without an end, then
// one in date.
var worstFirst = []string{stateFailed, stateOverdue, stateNever, stateDue, stateOpenEnded, stateValid}

// Worst is the worst of states by worstFirst ("" for none; a state it
// does not know counts as the best).
func Worst(states ...string) string {
	worst, rank := "", len(worstFirst)+1
	for _, s := range states {
		r := slices.Index(worstFirst, s)
		if r < 0 {
			r = len(worstFirst)
		}
		if r < rank {
			worst, rank = s, r
		}
	}
	return worst
}
