//go:build faults

package faults

import (
	"crypto/rand"
	"encoding/binary"
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
	var events, subjects, doubled int
	must(t, conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT subject_id),
			count(*) FILTER (WHERE (data->>'state') <> 'overdue' OR (data->>'action_type') <> 'maintenance')
		FROM actions.outbox WHERE kind = 'compliance' AND subject_id = ANY($1)`, uuidStrings(ids)).Scan(&events, &subjects, &doubled))
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
