package actions

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/compliance/roller"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// announced waits until the writes' queue is empty. The service's own
// roller ticks too: when it took the queued assets first, a test's tick
// skips them (locked) and returns before that roller commits their
// events; the queue's entries go in the same commit as the events.
func (w complianceWorld) announced(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, "the queued compliance rows announced", 30*time.Second, func() bool {
		var queued bool
		err := w.Built.Store.Pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM compliance_dirty)`).Scan(&queued)
		if err != nil {
			t.Fatalf("read the compliance queue: %v", err)
		}
		return !queued
	})
}

// transitions are the compliance.updated events recorded since the last
// call, as "action_type:before>after". A transition carries the actor and
// request id of the action write among them, roller.Actor's without one.
func (w complianceWorld) transitions(t *testing.T) []string {
	t.Helper()
	w.announced(t)
	var out []string
	events := w.Events(t)
	wantActor, wantRequest := roller.Actor, ""
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
		var row compliance.Row
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
	st := roller.NewStore(w.Built.Store)
	first := roller.New(st, time.UTC)
	today := model.Today()
	day := func(days int) string { return model.DateOf(today.Time().AddDate(0, 0, days)).String() }
	a := w.asset(t)
	tick := func(r *roller.Roller) {
		t.Helper()
		if err := r.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tick(first)
	w.Events(t)
	w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": a, "action_type": "expert_control", "performed_at": day(-1),
		"status_ok": true, "status_finalized": true, "status_valid_through": day(10)})
	tick(first)
	tick(roller.New(st, time.UTC)) // another replica
	if got := w.transitions(t); len(got) != 1 || got[0] != "expert_control:never>due" {
		t.Fatalf("after a write: %v", got)
	}
	// Eleven days later the inspection is overdue: the day's pass says
	// so, once, whichever replica rolls.
	elevenDays := func() time.Time { return time.Now().AddDate(0, 0, 11) }
	later := roller.New(st, time.UTC).At(elevenDays)
	other := roller.New(st, time.UTC).At(elevenDays)
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

// A write that commits while a day's pass is under way is announced as
// its writer's, not as the roller's: the pass leaves a queued asset to
// the queue. The test holds the write's queue entry as a queue batch
// that has taken it but not committed would, and runs a pass (the next
// day's) meanwhile.
func TestPassLeavesQueuedAssetsToTheirWriters(t *testing.T) {
	w := newComplianceWorld(t)
	ctx := t.Context()
	st := roller.NewStore(w.Built.Store)
	tomorrow := func() time.Time { return time.Now().AddDate(0, 0, 1) }
	pass := roller.New(st, time.UTC).At(tomorrow)
	var rolledFor string
	readRolledFor := func() string {
		t.Helper()
		var day *time.Time
		if err := w.Built.Store.Pool.QueryRow(ctx, `SELECT rolled_for FROM compliance_roll`).Scan(&day); err != nil {
			t.Fatalf("read the compliance roll: %v", err)
		}
		if day == nil {
			return ""
		}
		return day.Format(time.DateOnly)
	}
	// The service's own roller ticks every second and may take the entry
	// before the test holds it; then the test writes again.
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			t.Fatal("the service's roller took every write's queue entry before the test could hold it")
		}
		a := w.asset(t)
		w.transitions(t)
		w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": a, "action_type": "expert_control",
			"performed_at": "2025-01-01", "status_ok": true, "status_finalized": true, "status_valid_through": "2099-01-01"})
		hold, err := w.Built.Store.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var held int
		err = hold.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM compliance_dirty WHERE asset_id = $1 FOR UPDATE SKIP LOCKED) q`,
			uuid.MustParse(a)).Scan(&held)
		if err != nil || held == 0 {
			_ = hold.Rollback(ctx)
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		// Another replica may hold the roll for a moment: tick until the
		// next day's pass is over.
		want := model.DateOf(tomorrow()).String()
		testkit.Eventually(t, "the next day's pass over", 30*time.Second, func() bool {
			if err := pass.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			rolledFor = readRolledFor()
			return rolledFor == want
		})
		if err := hold.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		break
	}
	// transitions checks that each carries the action write's actor and
	// request id.
	if got := w.transitions(t); len(got) != 1 || got[0] != "expert_control:never>valid" {
		t.Fatalf("after a write during a pass (rolled for %s): %v", rolledFor, got)
	}
}

// Concurrent batches queue the same assets in opposite orders: no write
// waits for another's queue entry (a keyed queue deadlocked them, 500s
// in the bench's batch rows), and every asset is announced once.
func TestComplianceQueueConcurrentBatches(t *testing.T) {
	w := newComplianceWorld(t)
	var assets []string
	for range 20 {
		assets = append(assets, w.asset(t))
	}
	batch := func(order []string, finalized bool) []any {
		var items []any
		for _, a := range order {
			items = append(items, map[string]any{"asset_id": a, "action_type": "repair", "performed_at": "2025-01-01",
				"status_ok": true, "status_finalized": finalized, "status_valid_through": "2099-01-01"})
		}
		return items
	}
	reversed := slices.Clone(assets)
	slices.Reverse(reversed)
	var wg sync.WaitGroup
	for round := range 4 {
		for _, order := range [][]string{assets, reversed} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, r := range w.Call(200, "POST", "/actions/batch", w.RW, map[string]any{"items": batch(order, round%2 == 1)}).List() {
					if r["status"] != float64(201) {
						t.Errorf("a batch item: %v", r)
					}
				}
			}()
		}
		wg.Wait()
	}
	if err := roller.New(roller.NewStore(w.Built.Store), time.UTC).Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.announced(t)
	// Each asset's transition carries one of the two batches' request
	// ids (the last write queued before the roller took it).
	announced := map[string]int{}
	for _, e := range w.Events(t) {
		if e.Type == outbox.KindCompliance+"."+outbox.OpUpdated {
			announced[e.Subject.ID]++
			if e.Actor == roller.Actor || e.RequestID == "" {
				t.Errorf("a write's transition without its writer: %+v", e)
			}
		}
	}
	for _, a := range assets {
		if announced[a] != 1 {
			t.Errorf("asset %s: %d transitions, want 1 (never to valid)", a, announced[a])
		}
	}
}

// The roller records its events through the outbox recorder, as every
// write does: with outbox.record off (measuring what events cost) it
// announces a transition, and records no event of it.
func TestRollerRecordsThroughTheOutbox(t *testing.T) {
	s := servicetest.StartParallel(t, Spec(), func(c *servicekit.Config) { c.Events.Record = false })
	w := complianceWorld{world: worldOn(s), assetType: uuid.Must(uuid.NewV7())}
	a := w.asset(t)
	w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": a, "action_type": "repair", "performed_at": "2025-01-01",
		"status_ok": false, "status_finalized": true})
	if err := roller.New(roller.NewStore(w.Built.Store), time.UTC).Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	w.announced(t)
	var state string
	if err := w.Built.Store.Pool.QueryRow(t.Context(), `SELECT state FROM compliance_announced
		WHERE asset_id = $1 AND action_type = 'repair'`, a).Scan(&state); err != nil || state != "failed" {
		t.Fatalf("announced state %q (%v), want failed", state, err)
	}
	if events := w.Events(t); len(events) != 0 {
		t.Errorf("%d events with outbox.record off, the first %s", len(events), events[0].Type)
	}
}

// A statement that changes many rows of an asset queues that asset once
// (migration 013): a batch of readings, a rebuild's batch, a projection's
// statement each leave one compliance_dirty entry per asset they touched,
// where a row trigger left one per row; a statement that changes nothing
// queues nothing. Each case runs in a transaction of its own, rolled back,
// so the service's roller never takes the entries it counts.
func TestComplianceQueueOncePerStatement(t *testing.T) {
	w := newComplianceWorld(t)
	var assets []uuid.UUID
	for range 3 {
		assets = append(assets, uuid.MustParse(w.asset(t)))
	}
	other := uuid.MustParse(w.asset(t))
	const readings = `INSERT INTO known_readings (id, asset_id, meter, value, read_at, reset, recorded_at)
		SELECT gen_random_uuid(), a, 'operating_hours', n, now() - n * interval '1 hour', false, now()
		FROM unnest($1::uuid[]) a, generate_series(1, 4) n`
	const latest = `INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, status_ok, status_use_ok, valid_through, class)
		SELECT a, t, gen_random_uuid(), '2025-01-01', true, true, NULL, 'open_ended' FROM unnest($1::uuid[]) a,
		unnest(ARRAY['repair', 'maintenance', 'expert_control']) t`
	cases := []struct {
		name  string
		setup string // run before the queue is emptied
		write string // $1: the assets
		want  []uuid.UUID
	}{
		{name: "readings, four of each asset", write: readings, want: assets},
		{name: "latest actions inserted, three types each", write: latest, want: assets},
		{name: "latest actions updated", setup: latest,
			write: `UPDATE latest_actions SET status_ok = false, class = 'failed' WHERE asset_id = ANY($1)`, want: assets},
		{name: "latest actions deleted", setup: latest, write: `DELETE FROM latest_actions WHERE asset_id = ANY($1)`, want: assets},
		{name: "an update moving rows to another asset queues both", setup: latest,
			write: `UPDATE latest_actions SET asset_id = '` + other.String() + `' WHERE asset_id = ($1::uuid[])[1] AND action_type = 'repair'`,
			want:  []uuid.UUID{assets[0], other}},
		{name: "assets deleted in the projection", write: `UPDATE known_assets SET deleted = true WHERE asset_id = ANY($1)`, want: assets},
		{name: "nothing changed", write: `UPDATE known_assets SET deleted = true WHERE asset_id = ANY($1) AND false`},
	}
	ctx := t.Context()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := w.Built.Store.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if c.setup != "" {
				if _, err := tx.Exec(ctx, c.setup, assets); err != nil {
					t.Fatalf("setup: %v", err)
				}
			}
			if _, err := tx.Exec(ctx, `DELETE FROM compliance_dirty`); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, c.write, assets); err != nil {
				t.Fatalf("write: %v", err)
			}
			rows, err := tx.Query(ctx, `SELECT asset_id FROM compliance_dirty ORDER BY asset_id`)
			if err != nil {
				t.Fatal(err)
			}
			queued, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(c.want)
			slices.SortFunc(want, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
			if !slices.Equal(queued, want) {
				t.Errorf("queued %v, want each of %v once", queued, want)
			}
		})
	}
}
