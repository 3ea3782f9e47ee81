package actions

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
)

// transitions are the compliance.updated events recorded since the last
// call, as "action_type:before>after". A transition carries the actor and
// request id of the action write among them, RollerActor's without one.
func (w complianceWorld) transitions(t *testing.T) []string {
	t.Helper()
	var out []string
	events := w.Events(t)
	wantActor, wantRequest := RollerActor, ""
	for _, e := range events {
		if e.Subject.Kind == outbox.KindAction {
			wantActor, wantRequest = e.Actor, e.RequestID
		}
	}
	for _, e := range events {
		if e.Type != outbox.KindCompliance+"."+outbox.OpUpdated {
			continue
		}
		if e.Actor != wantActor || e.RequestID != wantRequest {
			t.Errorf("%s: actor %q request %q, want %q %q", e.Type, e.Actor, e.RequestID, wantActor, wantRequest)
		}
		var row ComplianceRow
		if err := json.Unmarshal(e.Data, &row); err != nil {
			t.Fatal(err)
		}
		var before string
		if c, ok := e.Changes["state"]; ok {
			_ = json.Unmarshal(c[0], &before)
		}
		if e.Subject.ID != row.AssetID.String() {
			t.Errorf("a transition's subject: %+v", e)
		}
		out = append(out, row.ActionType+":"+before+">"+row.State)
	}
	return out
}

// A row's state change is announced once, whether a write or the
// calendar made it, however often the roller runs and from which replica.
func TestComplianceTransitions(t *testing.T) {
	w := newComplianceWorld(t)
	ctx := context.Background()
	st := &Store{Store: w.Built.Store}
	roller := NewRoller(st, time.UTC)
	today := model.Today()
	day := func(days int) string { return model.DateOf(today.Time().AddDate(0, 0, days)).String() }
	a := w.asset(t)
	tick := func(r *Roller) {
		t.Helper()
		if err := r.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tick(roller)
	w.Events(t)
	w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": a, "action_type": "expert_control", "performed_at": day(-1),
		"status_ok": true, "status_finalized": true, "status_valid_through": day(10)})
	tick(roller)
	tick(NewRoller(st, time.UTC)) // another replica
	if got := w.transitions(t); len(got) != 1 || got[0] != "expert_control:never>due" {
		t.Fatalf("after a write: %v", got)
	}
	// Eleven days later the inspection is overdue: the day's pass says
	// so, once, whichever replica rolls.
	later := NewRoller(st, time.UTC)
	later.now = func() time.Time { return time.Now().AddDate(0, 0, 11) }
	other := NewRoller(st, time.UTC)
	other.now = later.now
	tick(later)
	tick(other)
	tick(later)
	if got := w.transitions(t); len(got) != 1 || got[0] != "expert_control:due>overdue" {
		t.Fatalf("eleven days later: %v", got)
	}
	// A plan makes never-inspected rows overdue: a plan change is a pass.
	w.Call(201, "POST", "/inspection_plans", w.Admin, map[string]any{"action_type": "maintenance", "interval": "P1Y",
		"first_due_after": "P0D"})
	tick(later)
	if got := w.transitions(t); len(got) != 1 || got[0] != "maintenance:never>overdue" {
		t.Fatalf("after a plan: %v", got)
	}
}
