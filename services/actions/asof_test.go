package actions

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// registeredAt makes an asset known whose id says it was registered at t
// (ids are UUIDv7), as its asset.created event would.
func (w complianceWorld) registeredAt(t *testing.T, at time.Time) string {
	t.Helper()
	id, stamp := uuid.Must(uuid.NewV7()), compliance.UUIDAt(at)
	copy(id[:6], stamp[:6])
	w.StandIn("assets").Add("asset", id, nil)
	w.applyAsset(t, id, w.assetType, "created")
	return id.String()
}

// writtenAt makes the row id of table (an action, a plan) look written
// at at, as if created then.
func (w complianceWorld) writtenAt(t *testing.T, table, id string, at time.Time) {
	t.Helper()
	if _, err := w.Built.Store.Pool.Exec(context.Background(),
		`UPDATE `+table+` SET created_at = $2, updated_at = $2 WHERE id = $1`, id, at); err != nil {
		t.Fatal(err)
	}
}

// GET /compliance?as_of=D answers the rows as the registry knew them at
// the end of day D (UTC), their states on D: an asset or action recorded
// later is not there yet, one deleted or changed later is there as it was.
func TestComplianceAsOf(t *testing.T) {
	w := newComplianceWorld(t)
	now := time.Now().UTC()
	today := model.DateOf(now)
	day := func(days int) string { return model.DateOf(now.AddDate(0, 0, days)).String() }
	at := func(days int) time.Time { return now.AddDate(0, 0, days) }

	old, later, gone := w.registeredAt(t, at(-10)), w.asset(t), w.registeredAt(t, at(-9))
	action := func(asset, actionType string, performed, validThrough int, written int) string {
		t.Helper()
		id := w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": asset, "action_type": actionType,
			"performed_at": day(performed), "status_ok": true, "status_finalized": true, "status_valid_through": day(validThrough)}).JSON()["id"].(string)
		if written != 0 {
			w.writtenAt(t, "actions", id, at(written))
		}
		return id
	}
	// Known on day -3: an expert control valid until day -2, due then.
	expert := action(old, "expert_control", -6, -2, -5)
	// Recorded today: a newer expert control, not known on day -3.
	action(old, "expert_control", -1, 300, 0)
	// Known on day -3, changed today: it failed, as it was then.
	maintenance := action(old, "maintenance", -6, 100, -5)
	w.Call(200, "PATCH", "/actions/"+maintenance, w.RW, map[string]any{"status_ok": false})
	// Known on day -3, deleted today.
	repair := action(old, "repair", -6, 1, -5)
	w.Call(204, "DELETE", "/actions/"+repair, w.RW, nil)
	// An asset deleted today was there on day -3.
	action(gone, "repair", -7, 100, -5)
	w.applyAsset(t, uuid.MustParse(gone), w.assetType, "deleted")

	names := map[string]string{old: "old", later: "later", gone: "gone", expert: "expert", maintenance: "maintenance", repair: "repair"}
	cases := []struct {
		name, query string
		want        []string
	}{
		{"three days ago", "as_of=" + day(-3), []string{
			"old#expert_control=due(expert)", "old#maintenance=valid(maintenance)", "old#pre_use_inspection=never(-)", "old#repair=due(repair)",
			"gone#expert_control=never(-)", "gone#maintenance=never(-)", "gone#pre_use_inspection=never(-)", "gone#repair=valid()"}},
		{"its states only", "as_of=" + day(-3) + "&state=due", []string{"old#expert_control=due(expert)", "old#repair=due(repair)"}},
		{"one asset, one type", "as_of=" + day(-3) + "&asset_id=" + old + "&action_type=maintenance", []string{"old#maintenance=valid(maintenance)"}},
		{"eleven days ago: nothing registered yet", "as_of=" + day(-11), nil},
		{"today: as without as_of", "as_of=" + today.String() + "&asset_id=" + old, []string{
			"old#expert_control=valid()", "old#maintenance=failed(maintenance)", "old#pre_use_inspection=never(-)", "old#repair=never(-)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := summary(w.rows(t, c.query, 3), names)
			if !slices.Equal(got, c.want) {
				t.Errorf("%s:\n got %v\nwant %v", c.query, got, c.want)
			}
		})
	}
	if got, want := summary(w.rows(t, "asset_id="+old, 0), names), summary(w.rows(t, "as_of="+today.String()+"&asset_id="+old, 0), names); !slices.Equal(got, want) {
		t.Errorf("as_of today %v, without %v", want, got)
	}
	if got := w.rows(t, "asset_id="+later+"&as_of="+day(-1), 0); len(got) != 0 {
		t.Errorf("an asset registered today is in yesterday's rows: %v", got)
	}
	w.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "as_of not a date", Method: "GET", Path: "/compliance?as_of=14.03.2025", ReadOnly: true, Status: 422, Fields: []string{"as_of"}},
		{Name: "as_of not a calendar date", Method: "GET", Path: "/compliance?as_of=2025-02-30", ReadOnly: true, Status: 422, Fields: []string{"as_of"}},
		{Name: "as_of twice", Method: "GET", Path: "/compliance?as_of=2025-03-14&as_of=2025-03-15", ReadOnly: true, Status: 400},
		{Name: "a cursor of another as_of", Method: "GET", Path: "/compliance?as_of=2025-03-14&cursor=" + model.EncodeCursor(uuid.New(), "as_of=2025-03-15"), ReadOnly: true, Status: 400},
	})
}
