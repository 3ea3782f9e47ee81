package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
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
// events.
type ComplianceRoll struct {
	Assets          int     `json:"assets"`
	Transitions     int64   `json:"transitions"`
	RollS           float64 `json:"roll_s"`
	RelayS          float64 `json:"relay_s"`
	StoredS         float64 `json:"stored_s"`
	PerSec          float64 `json:"transitions_per_s"`
	VisibleMS       float64 `json:"plan_visible_ms"`
	PlanTransitions int64   `json:"plan_transitions"`
	PlanPassS       float64 `json:"plan_pass_s"`
}

// rollTransitions is the day's transitions the measurement makes: the
// issue's "a day with a million transitions", or every announced row of a
// smaller seed.
const rollTransitions = 1_000_000

// rollGoal is the time a day's million transitions must drain within.
const rollGoal = 10 * time.Minute

// measureComplianceRoll runs both measurements; the roller must run in
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
	mark, err := outboxMark(ctx, conn)
	if err != nil {
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
	before, err := e.transitionsWritten(ctx)
	if err != nil {
		return res, err
	}
	storedBefore, err := e.metricSum(ctx, "events", "registry_events_stored_total")
	if err != nil {
		return res, fmt.Errorf("compliance roll: %w", err)
	}
	started := time.Now()
	if _, err := conn.Exec(ctx, `UPDATE compliance_roll SET rolled_for = current_date - 1, pass_for = NULL, pass_after = NULL`); err != nil {
		return res, fmt.Errorf("compliance roll: %w", err)
	}
	roll, relay, err := drain(ctx, conn, mark, started)
	if err != nil {
		return res, err
	}
	n, err := e.transitionsSince(ctx, before)
	if err != nil {
		return res, err
	}
	res.Transitions, res.RollS, res.RelayS = n, roll.Seconds(), relay.Seconds()
	for deadline := started.Add(3 * rollGoal); ; time.Sleep(100 * time.Millisecond) {
		stored, err := e.metricSum(ctx, "events", "registry_events_stored_total")
		if err != nil {
			return res, fmt.Errorf("compliance roll: %w", err)
		}
		if stored-storedBefore >= float64(n) {
			res.StoredS = time.Since(started).Seconds()
			res.PerSec = float64(n) / res.StoredS
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("compliance roll: %0.f of %d events stored in the feed after %s", stored-storedBefore, n, 3*rollGoal)
		}
	}

	// A plan's change, visible in the next read and announced by a pass.
	if mark, err = outboxMark(ctx, conn); err != nil {
		return res, err
	}
	if before, err = e.transitionsWritten(ctx); err != nil {
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
	pass, _, err := drain(ctx, conn, mark, started)
	if err != nil {
		return res, err
	}
	res.PlanPassS = pass.Seconds()
	res.PlanTransitions, err = e.transitionsSince(ctx, before)
	return res, err
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

// drain waits for the pass begun at started to end (roll) and for its
// events (the outbox's rows after mark) to be published (relay).
func drain(ctx context.Context, conn *pgx.Conn, mark int64, started time.Time) (roll, relay time.Duration, err error) {
	deadline := started.Add(3 * rollGoal)
	for ; ; time.Sleep(100 * time.Millisecond) {
		var rolled, published bool
		if err := conn.QueryRow(ctx, `SELECT pass_for IS NULL AND NOT plans_changed AND rolled_for >= current_date,
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
	return fmt.Sprintf("compliance roller over %d assets: a day of %d transitions announced in %.1f s, published in %.1f s, stored in the feed in %.1f s (%.0f/s; scaled to a million: %.2f of the 10-minute goal); a plan's change visible in %.0f ms (goal 5000), its %d transitions announced in %.1f s",
		r.Assets, r.Transitions, r.RollS, r.RelayS, r.StoredS, r.PerSec, r.scaledRatio(), r.VisibleMS, r.PlanTransitions, r.PlanPassS)
}

// scaledRatio is the day's drain (announced, published and stored) scaled
// to a million transitions, divided by the goal (1 or less: met).
func (r ComplianceRoll) scaledRatio() float64 {
	if r.PerSec == 0 {
		return 0
	}
	return rollTransitions / r.PerSec / rollGoal.Seconds()
}
