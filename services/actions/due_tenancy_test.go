package actions

import (
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/services/actions/compliance/projection"
)

// include=components rolls up only the components the caller sees: a
// bound caller's crane does not show the failed state of a component
// another organization owns, which an unbound reader's does.
func TestRolledUpStateFollowsWhoSeesTheComponent(t *testing.T) {
	w := newTenancyWorld(t)
	owner := w.Bound("owner-client", orgOwner, auth.ScopeRead)
	assetType := uuid.New()
	crane, hook := w.owned(orgOwner), w.owned(orgOther)
	p := projection.New(projection.NewStore(w.Built.Store))
	for asset, parent := range map[string]*uuid.UUID{crane: nil, hook: new(uuid.MustParse(crane))} {
		ev := projection.AssetEvent{ID: uuid.Must(uuid.NewV7()), AssetID: uuid.MustParse(asset), AssetTypeID: assetType, Op: "created", Parent: parent}
		if err := p.ApplyAsset(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": hook, "action_type": "expert_control",
		"performed_at": "2026-01-05", "status_ok": false, "status_finalized": true})
	for _, c := range []struct {
		who, token, want string
	}{{"the owner", owner, "never"}, {"an unbound reader", w.RO, "failed"}} {
		rows := w.Call(200, "GET", "/compliance?include=components&action_type=expert_control&asset_id="+crane, c.token, nil).List()
		if len(rows) != 1 || rows[0]["rolled_up_state"] != c.want {
			t.Errorf("%s: %v, want rolled up %s", c.who, rows, c.want)
		}
	}
}
