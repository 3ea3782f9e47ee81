//go:build faults

package faults

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// rollerAssets is how many assets the roller's pass goes through: many
// of its 2000-asset batches, so that the kill lands between two.
const rollerAssets = 40000

// The process that rolls the day's compliance transitions is killed
// (SIGKILL) in the middle of a pass and started again: every row that
// changed state has exactly one compliance.updated event, none missing,
// none doubled. The pass is a plan's (a new plan for maintenance, due at
// registration, over assets registered 30 days ago: each one's
// maintenance row goes from never to overdue), written straight to the
// actions schema, as the projection and an admin's POST would.
func TestComplianceRollerKilledMidPass(t *testing.T) {
	skipOnClusters(t)
	long(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, stack.DatabaseURL)
	must(t, err)
	defer conn.Close(ctx)
	ids := make([]uuid.UUID, rollerAssets)
	registered := uint64(time.Now().AddDate(0, 0, -30).UnixMilli())
	for i := range ids {
		var u uuid.UUID
		var ms [8]byte
		binary.BigEndian.PutUint64(ms[:], registered+uint64(i))
		copy(u[:6], ms[2:])
		_, _ = rand.Read(u[6:])
		u[6], u[8] = 0x70|u[6]&0x0f, 0x80|u[8]&0x3f
		ids[i] = u
	}
	assetType := uuid.Must(uuid.NewV7())
	_, err = conn.Exec(ctx, `INSERT INTO actions.known_assets (asset_id, asset_type_id, event_id)
		SELECT id, $2, id FROM unnest($1::uuid[]) AS a(id)`, ids, assetType)
	must(t, err)
	// The queued assets are announced (never: no event) before the plan.
	drained := func() bool {
		var n int
		must(t, conn.QueryRow(ctx, `SELECT count(*) FROM actions.compliance_dirty`).Scan(&n))
		return n == 0
	}
	if !waitFor(2*time.Minute, drained) {
		t.Fatal("the roller does not take the queued assets")
	}
	_, err = conn.Exec(ctx, `INSERT INTO actions.inspection_plans (id, action_type, asset_type_id, interval_period,
		first_due_after, due_soon, created_by, updated_by) VALUES ($1, 'maintenance', $2, 'P1Y', 'P0D', 'P30D', 'faults', 'faults')`,
		uuid.Must(uuid.NewV7()), assetType)
	must(t, err)
	midPass := func() bool {
		var after *uuid.UUID
		must(t, conn.QueryRow(ctx, `SELECT pass_after FROM actions.compliance_roll`).Scan(&after))
		return after != nil && *after != uuid.Nil
	}
	if !waitFor(time.Minute, midPass) {
		t.Fatal("no pass began after the plan")
	}
	kill("actions")(t)
	restart("actions")(t)
	passed := func() bool {
		var pending bool
		must(t, conn.QueryRow(ctx, `SELECT pass_for IS NOT NULL OR plans_changed FROM actions.compliance_roll`).Scan(&pending))
		return !pending
	}
	if !waitFor(5*time.Minute, passed) {
		t.Fatal("the pass did not end after the restart")
	}
	// Published events are kept (outbox.retention) in outbox_published;
	// the outbox holds those the relay has not published yet.
	var events, subjects, doubled int
	must(t, conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT subject_id),
			count(*) FILTER (WHERE (data->>'state') <> 'overdue' OR (data->>'action_type') <> 'maintenance')
		FROM (SELECT kind, subject_id, data FROM actions.outbox_published UNION ALL SELECT kind, subject_id, data FROM actions.outbox) recorded
		WHERE kind = 'compliance' AND subject_id = ANY($1)`, uuidStrings(ids)).Scan(&events, &subjects, &doubled))
	record(row{fault: "compliance roller (actions) killed mid-pass, restarted", calls: rollerAssets,
		lost: max(0, rollerAssets-subjects), duplicates: events - subjects, recovered: true})
	if events != rollerAssets || subjects != rollerAssets || doubled != 0 {
		t.Errorf("%d compliance.updated events for %d assets (%d other than maintenance never>overdue); want one per asset, %d",
			events, subjects, doubled, rollerAssets)
	}
}

func uuidStrings(ids []uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// projectionAssets are the assets created and deleted while NATS is down.
const projectionAssets, projectionDeleted = 300, 100

// The compliance projection with NATS down while assets change: assets
// are created, and assets made before are deleted, through the gateway
// while NATS is killed. The writes succeed (their events wait in the
// assets service's outbox) and GET /compliance keeps answering; once NATS
// is back, every new asset has its rows and every deleted one has none:
// nothing lost, nothing left behind.
func TestComplianceProjectionNATSDown(t *testing.T) {
	skipOnClusters(t)
	long(t)
	ctx := t.Context()
	c := newClient(t)
	name := "projection-" + randomHex()
	create := func(path string, body map[string]string) string {
		t.Helper()
		raw, _ := json.Marshal(body)
		a := c.do(ctx, request{method: "POST", path: path, body: raw, contentType: "application/json", key: "k-" + body["serial_number"] + body["model"], create: true})
		if a.status != http.StatusCreated || a.id == "" {
			t.Fatalf("POST %s: %d %v", path, a.status, a.err)
		}
		return a.id
	}
	typeID := create("/asset_types", map[string]string{"brand": "Projection", "model": name})
	rowsPath := "/compliance?action_type=expert_control&limit=1000&asset_type_id=" + typeID
	var doomed []string
	for i := range projectionDeleted {
		doomed = append(doomed, create("/assets", map[string]string{"serial_number": fmt.Sprintf("%s-old-%d", name, i), "asset_type_id": typeID}))
	}
	if !waitFor(time.Minute, func() bool { return len(complianceAssets(t, c, rowsPath)) == projectionDeleted }) {
		t.Fatal("the assets made before the fault are not in GET /compliance")
	}

	must(t, stack.Nats.Kill())
	want := map[string]bool{}
	for i := range projectionAssets {
		want[create("/assets", map[string]string{"serial_number": fmt.Sprintf("%s-new-%d", name, i), "asset_type_id": typeID})] = true
	}
	for _, id := range doomed {
		if a := c.do(ctx, request{method: "DELETE", path: "/assets/" + id}); a.status != http.StatusNoContent {
			t.Fatalf("DELETE /assets/%s with NATS down: %d %v", id, a.status, a.err)
		}
	}
	during := complianceAssets(t, c, rowsPath) // answers, from what it knew
	must(t, stack.Nats.Restart(ctx))

	var got map[string]bool
	settled := func() bool {
		got = complianceAssets(t, c, rowsPath)
		return len(got) == len(want) && func() bool {
			for id := range want {
				if !got[id] {
					return false
				}
			}
			return true
		}()
	}
	recovered := waitFor(3*time.Minute, settled)
	lost, left := 0, 0
	for id := range want {
		if !got[id] {
			lost++
		}
	}
	for id := range got {
		if !want[id] {
			left++
		}
	}
	record(row{fault: "compliance projection: nats killed while assets are created and deleted, restarted", calls: projectionAssets + projectionDeleted,
		lost: lost, duplicates: left, recovered: recovered})
	if !recovered {
		t.Errorf("after NATS came back: %d new assets missing from GET /compliance, %d deleted ones still there (%d rows while it was down)",
			lost, left, len(during))
	}
}

// complianceAssets are the assets of GET path's rows (one page).
func complianceAssets(t *testing.T, c *client, path string) map[string]bool {
	t.Helper()
	req, err := http.NewRequest("GET", stack.RegistryURL+path, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var rows []struct {
		AssetID string `json:"asset_id"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&rows) != nil {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	out := map[string]bool{}
	for _, r := range rows {
		out[r.AssetID] = true
	}
	return out
}
