package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/due"
)

// ComplianceRoll is what the compliance roller does with a day's worth of
// transitions and with a plan's change, on the compliance seed (make bench
// only: QUICK=1 seeds too few rows to say anything).
//
// The day: Transitions of the seed's announced rows are told a state they
// are not in (as if the calendar had moved them overnight) and the roller
// is told yesterday was the last day it rolled. Its next tick passes over
// every asset, as after midnight, and writes one compliance.updated event
// per such row. RollS is from then to the pass's end (every event in the
// outbox, committed with the pass's progress); RelayS to the last of them
// published to NATS; StoredS to the events service having stored as many
// events in the feed (its registry_events_stored_total; nothing else
// writes meanwhile), with their leaves in the log: the day drained. The
// goal: a million within 10 minutes.
//
// The plan: a plan for maintenance on every asset type is created (as
// POST /inspection_plans stores it) and GET /compliance of the planned
// rows asked until they show its due dates: VisibleMS (goal 5 s; the dates
// are computed when a page is read, so it is one read). PlanPassS is the
// roller's pass that announces what the plan changed, PlanTransitions its
// events. Between the two, Usage is the meters' day (UsageDay).
type ComplianceRoll struct {
	Assets int `json:"assets"`
	Drain
	VisibleMS       float64 `json:"plan_visible_ms"`
	PlanTransitions int64   `json:"plan_transitions"`
	PlanPassS       float64 `json:"plan_pass_s"`
	// Usage is the day that moves rows by their meters.
	Usage *UsageDay `json:"usage_day,omitempty"`
}

// rollTransitions is the day's transitions the measurement makes: the
// issue's "a day with a million transitions", or every announced row of a
// smaller seed.
const rollTransitions = 1_000_000

// rollGoal is the time a day's million transitions must drain within.
const rollGoal = 10 * time.Minute

// measureComplianceRoll measures the calendar's day, the meters' day
// (measureUsageDay) and a plan's change; the roller must run in
// the stack's actions service (it does in every replica).
func (e *Env) measureComplianceRoll(ctx context.Context) (ComplianceRoll, error) {
	res := ComplianceRoll{Assets: e.ComplianceAssets}
	conn, err := e.connectDatabase(ctx)
	if err != nil {
		return res, fmt.Errorf("compliance roll: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET search_path = actions"); err != nil {
		return res, fmt.Errorf("compliance roll: %w", err)
	}
	if err := waitRolled(ctx, conn); err != nil {
		return res, err
	}
	// The rows that change overnight: their announced state (and the row
	// an event would show as "before") becomes another one.
	if _, err := conn.Exec(ctx, `WITH moved AS (SELECT asset_id, action_type FROM compliance_announced
			ORDER BY asset_id, action_type LIMIT $1),
		told AS (SELECT a.asset_id, a.action_type, CASE WHEN a.state = 'valid' THEN 'due' ELSE 'valid' END AS state
			FROM compliance_announced a JOIN moved USING (asset_id, action_type))
		UPDATE compliance_announced a SET state = told.state, row = jsonb_set(a.row, '{state}', to_jsonb(told.state))
		FROM told WHERE a.asset_id = told.asset_id AND a.action_type = told.action_type`, rollTransitions); err != nil {
		return res, fmt.Errorf("compliance roll: yesterday's states: %w", err)
	}
	mark, err := e.markRoll(ctx, conn)
	if err != nil {
		return res, err
	}
	started := time.Now()
	if _, err := conn.Exec(ctx, `UPDATE compliance_roll SET rolled_for = current_date - 1, pass_for = NULL, pass_after = NULL`); err != nil {
		return res, fmt.Errorf("compliance roll: %w", err)
	}
	if res.Drain, err = e.waitDrained(ctx, conn, mark, started); err != nil {
		return res, err
	}

	if res.Usage, err = e.measureUsageDay(ctx, conn); err != nil {
		return res, err
	}

	// A plan's change, visible in the next read and announced by a pass.
	if mark, err = e.markRoll(ctx, conn); err != nil {
		return res, err
	}
	plan := uuid.Must(uuid.NewV7())
	if _, err := conn.Exec(ctx, `INSERT INTO inspection_plans (id, action_type, interval_period, first_due_after, due_soon, created_by, updated_by)
		VALUES ($1, 'maintenance', 'P6M', 'P0D', 'P30D', 'bench', 'bench')`, plan); err != nil {
		return res, fmt.Errorf("compliance roll: plan: %w", err)
	}
	started = time.Now()
	defer conn.Exec(context.WithoutCancel(ctx), `DELETE FROM inspection_plans WHERE id = $1`, plan) //nolint:errcheck // the bench's stack ends next
	for {
		// A never-maintained asset's row: no date of its own, its plan's
		// first due date once the plan is there.
		raw, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: "/compliance?action_type=maintenance&state=never&limit=1", Want: 200})
		if err != nil {
			return res, fmt.Errorf("compliance roll: %w", err)
		}
		var rows []struct {
			DueDate *model.Date `json:"due_date"`
		}
		if err := json.Unmarshal(raw, &rows); err != nil {
			return res, fmt.Errorf("compliance roll: %w", err)
		}
		if len(rows) == 1 && rows[0].DueDate != nil {
			res.VisibleMS = float64(time.Since(started).Microseconds()) / 1000
			break
		}
		if time.Since(started) > time.Minute {
			return res, fmt.Errorf("compliance roll: the plan's due dates not in GET /compliance after a minute: %s", strings.TrimSpace(string(raw)))
		}
	}
	pass, _, err := drain(ctx, conn, mark.outbox, started)
	if err != nil {
		return res, err
	}
	res.PlanPassS = pass.Seconds()
	res.PlanTransitions, err = e.transitionsSince(ctx, mark.transitions)
	return res, err
}

// UsageDay is a day that moves rows by their meters instead of the
// calendar: a plan with a usage interval (usageEvery operating hours, and
// a calendar interval that never comes) over every asset of the seed, for
// an action type of the bench's own that no asset has seen (every row
// "never"), then two readings for each of Assets assets, the second
// usageEvery + 50 hours on from the first, taken into the compliance read model as its consumer takes
// a delivery's (due.Store.ApplyReadings, usageDelivery readings a
// statement). Each such row falls due by usage (overdue, due_reason
// usage): one compliance.updated event each. ReadS is the readings'
// arrival; Drain from then on, as the calendar's day's (goal: a million
// within 10 minutes). The readings' way into the read model
// (the assets service, its outbox, NATS) is not in it: the readings
// batch row measures that part.
type UsageDay struct {
	Assets   int     `json:"assets"`
	Readings int     `json:"readings"`
	ReadS    float64 `json:"read_s"`
	Drain
}

// Drain is how a day's transitions (Transitions of them) left, in seconds
// from the day's start: the roller done with them and its queue empty
// (RollS, every event in the outbox), their events published (RelayS) and
// stored in the feed (StoredS); PerSec is Transitions ÷ StoredS.
type Drain struct {
	Transitions int64   `json:"transitions"`
	RollS       float64 `json:"roll_s"`
	RelayS      float64 `json:"relay_s"`
	StoredS     float64 `json:"stored_s"`
	PerSec      float64 `json:"transitions_per_s"`
}

const (
	// usageType is the usage day's action type, added by the bench.
	usageType = "bench_usage"
	// usageEvery is the usage plan's interval, in operating hours.
	usageEvery = 250
	// usageDelivery is how many readings one statement takes: the
	// consumer takes a delivery's readings in one.
	usageDelivery = 1000
)

// measureUsageDay measures UsageDay on the seed's assets, at most
// rollTransitions of them. The plan stays: the stack ends with the bench.
func (e *Env) measureUsageDay(ctx context.Context, conn *pgx.Conn) (*UsageDay, error) {
	if _, err := conn.Exec(ctx, `INSERT INTO action_types (id, name, description, created_by)
		VALUES ($1, $2, 'The usage day of the bench.', 'bench') ON CONFLICT (name) DO NOTHING`, uuid.Must(uuid.NewV7()), usageType); err != nil {
		return nil, fmt.Errorf("usage day: action type: %w", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO inspection_plans (id, action_type, interval_period, first_due_after, due_soon,
			usage_meter, usage_every, created_by, updated_by)
		VALUES ($1, $2, 'P100Y', 'P100Y', 'P30D', 'operating_hours', $3, 'bench', 'bench')`, uuid.Must(uuid.NewV7()), usageType, usageEvery); err != nil {
		return nil, fmt.Errorf("usage day: plan: %w", err)
	}
	// The plan's own pass: every row of the type "never", nothing to tell.
	if err := waitRolled(ctx, conn); err != nil {
		return nil, fmt.Errorf("usage day: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT asset_id FROM known_assets WHERE NOT deleted ORDER BY asset_id LIMIT $1`, rollTransitions)
	if err != nil {
		return nil, fmt.Errorf("usage day: assets: %w", err)
	}
	assets, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("usage day: assets: %w", err)
	}
	pool, err := store.Open(ctx, store.Config{URL: e.Stack.DatabaseURL, Schema: "actions", MaxConns: 2, StartupWait: time.Minute})
	if err != nil {
		return nil, fmt.Errorf("usage day: %w", err)
	}
	defer pool.Close()
	readings := due.NewStore(store.New(pool, nil))
	mark, err := e.markRoll(ctx, conn)
	if err != nil {
		return nil, err
	}
	day := &UsageDay{Assets: len(assets), Readings: 2 * len(assets)}
	morning := time.Now().UTC().Truncate(time.Hour).Add(-12 * time.Hour)
	started := time.Now()
	for batch := range slices.Chunk(assets, usageDelivery/2) {
		delivery := make([]due.Reading, 0, usageDelivery)
		for _, asset := range batch {
			for i, value := range []float64{1000, 1000 + usageEvery + 50} {
				delivery = append(delivery, due.Reading{ID: uuid.Must(uuid.NewV7()), AssetID: asset, Meter: "operating_hours",
					Value: value, ReadAt: morning.Add(time.Duration(i) * 8 * time.Hour), RecordedAt: time.Now()})
			}
		}
		if err := readings.ApplyReadings(ctx, delivery); err != nil {
			return day, fmt.Errorf("usage day: %w", err)
		}
	}
	day.ReadS = time.Since(started).Seconds()
	if day.Drain, err = e.waitDrained(ctx, conn, mark, started); err != nil {
		return day, fmt.Errorf("usage day: %w", err)
	}
	// The rows fell due by their meters, as GET /compliance says them.
	raw, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: "/compliance?action_type=" + usageType + "&limit=1", Want: 200})
	if err != nil {
		return day, fmt.Errorf("usage day: %w", err)
	}
	var page []struct {
		State     string `json:"state"`
		DueReason string `json:"due_reason"`
	}
	if err := json.Unmarshal(raw, &page); err != nil || len(page) != 1 || page[0].State != "overdue" || page[0].DueReason != "usage" {
		return day, fmt.Errorf("usage day: the first row is not overdue by usage (%v): %.300s", err, raw)
	}
	return day, nil
}

// rollMark is where a measurement of the roller begins: the outbox's
// newest row, and the transitions written and events stored so far.
type rollMark struct {
	outbox              int64
	transitions, stored float64
}

func (e *Env) markRoll(ctx context.Context, conn *pgx.Conn) (rollMark, error) {
	var m rollMark
	var err error
	if m.outbox, err = outboxMark(ctx, conn); err != nil {
		return m, err
	}
	if m.transitions, err = e.transitionsWritten(ctx); err != nil {
		return m, err
	}
	if m.stored, err = e.metricSum(ctx, "events", "registry_events_stored_total"); err != nil {
		return m, fmt.Errorf("compliance roll: %w", err)
	}
	return m, nil
}

// waitDrained waits for the work begun at started, after mark, to drain.
func (e *Env) waitDrained(ctx context.Context, conn *pgx.Conn, mark rollMark, started time.Time) (Drain, error) {
	var d Drain
	roll, relay, err := drain(ctx, conn, mark.outbox, started)
	if err != nil {
		return d, err
	}
	if d.Transitions, err = e.transitionsSince(ctx, mark.transitions); err != nil {
		return d, err
	}
	stored, err := e.waitStored(ctx, mark.stored, d.Transitions, started)
	if err != nil {
		return d, err
	}
	d.RollS, d.RelayS, d.StoredS = roll.Seconds(), relay.Seconds(), stored.Seconds()
	d.PerSec = float64(d.Transitions) / d.StoredS
	return d, nil
}

// waitStored waits until the events service has stored n events since it
// had stored storedBefore (its registry_events_stored_total; nothing else
// writes meanwhile), and says how long after started that was.
func (e *Env) waitStored(ctx context.Context, storedBefore float64, n int64, started time.Time) (time.Duration, error) {
	for deadline := started.Add(3 * rollGoal); ; time.Sleep(100 * time.Millisecond) {
		stored, err := e.metricSum(ctx, "events", "registry_events_stored_total")
		if err != nil {
			return 0, fmt.Errorf("compliance roll: %w", err)
		}
		if stored-storedBefore >= float64(n) {
			return time.Since(started), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("compliance roll: %0.f of %d events stored in the feed after %s", stored-storedBefore, n, 3*rollGoal)
		}
	}
}

// transitionsWritten is the actions process's compliance_transitions_total
// (every cause): the events the roller wrote, which the relay then moves
// out of the outbox, so the outbox cannot count them.
func (e *Env) transitionsWritten(ctx context.Context) (float64, error) {
	n, err := e.metricSum(ctx, "actions", "compliance_transitions_total")
	if err != nil {
		return 0, fmt.Errorf("compliance roll: %w", err)
	}
	return n, nil
}

// transitionsSince is how many transitions were written since the
// counter read before.
func (e *Env) transitionsSince(ctx context.Context, before float64) (int64, error) {
	after, err := e.transitionsWritten(ctx)
	return int64(after - before), err
}

// outboxMark is the outbox's newest row id: the events after it are the
// measurement's.
func outboxMark(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var mark int64
	err := conn.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM outbox`).Scan(&mark)
	if err != nil {
		return 0, fmt.Errorf("compliance roll: %w", err)
	}
	return mark, nil
}

// waitRolled waits until no pass is under way or due, so that the
// measurement's pass is its own.
func waitRolled(ctx context.Context, conn *pgx.Conn) error {
	for deadline := time.Now().Add(rollGoal); ; time.Sleep(200 * time.Millisecond) {
		var idle bool
		if err := conn.QueryRow(ctx, `SELECT pass_for IS NULL AND NOT plans_changed AND rolled_for >= current_date FROM compliance_roll`).Scan(&idle); err != nil {
			return fmt.Errorf("compliance roll: %w", err)
		}
		if idle {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("compliance roll: the roller still has a pass under way after %s", rollGoal)
		}
	}
}

// drain waits for the pass begun at started to end and the roller's
// queue to be empty (roll), and for their events (the outbox's rows after
// mark) to be published (relay).
func drain(ctx context.Context, conn *pgx.Conn, mark int64, started time.Time) (roll, relay time.Duration, err error) {
	deadline := started.Add(3 * rollGoal)
	for ; ; time.Sleep(100 * time.Millisecond) {
		var rolled, published bool
		if err := conn.QueryRow(ctx, `SELECT pass_for IS NULL AND NOT plans_changed AND rolled_for >= current_date
					AND NOT EXISTS (SELECT FROM compliance_dirty),
				NOT EXISTS (SELECT FROM outbox WHERE id > $1 AND published_at IS NULL) FROM compliance_roll`, mark).Scan(&rolled, &published); err != nil {
			return roll, relay, fmt.Errorf("compliance roll: %w", err)
		}
		if rolled && roll == 0 {
			roll = time.Since(started)
		}
		if rolled && published {
			relay = time.Since(started)
			break
		}
		if time.Now().After(deadline) {
			return roll, relay, fmt.Errorf("compliance roll: not drained after %s", 3*rollGoal)
		}
	}
	return roll, relay, nil
}

func (r ComplianceRoll) String() string {
	usage := ""
	if u := r.Usage; u != nil {
		usage = fmt.Sprintf("; a usage day of %d readings moving %d rows: read in %.1f s, %s", u.Readings, u.Transitions, u.ReadS, u.Drain)
	}
	return fmt.Sprintf("compliance roller over %d assets: a day of %d transitions %s; a plan's change visible in %.0f ms (goal 5000), its %d transitions announced in %.1f s",
		r.Assets, r.Transitions, r.Drain, r.VisibleMS, r.PlanTransitions, r.PlanPassS) + usage
}

// String is the drain's times, its rate and its ratio to the goal.
func (d Drain) String() string {
	return fmt.Sprintf("announced in %.1f s, published in %.1f s, stored in the feed in %.1f s (%.0f/s; scaled to a million: %.2f of the 10-minute goal)",
		d.RollS, d.RelayS, d.StoredS, d.PerSec, d.scaled())
}

// scaled is the drain (announced, published and stored) scaled to a
// million transitions, divided by the goal (1 or less: met).
func (d Drain) scaled() float64 {
	if d.PerSec == 0 {
		return 0
	}
	return rollTransitions / d.PerSec / rollGoal.Seconds()
}
