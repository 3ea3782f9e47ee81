package actions

// compliance.updated events: whenever a compliance row's state changes,
// by a write (an action, an asset's projection row) or by the calendar (a
// date passing at midnight in the roller's zone, a plan changed), one
// event carries the row before and after. The roller compares the rows as
// they are now with compliance_announced, the rows as the last events
// said them, and in one transaction writes the outbox rows of the
// differences and the rows announced: exactly once across replicas and
// restarts, whatever moment a roller is killed at.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/due"
)

// RollerActor is the actor of the transitions no client's write made: a
// date passing, a plan, an asset's projection, a rebuild. An action
// write's transition carries the write's own actor and request id.
const RollerActor = "registry:compliance"

// writer is who made a queued asset's last action write, from its event.
type writer struct {
	Actor     *string `db:"actor"`
	RequestID *string `db:"request_id"`
}

// queued is an entry of the queue: an asset a write queued, and the
// writer when its event named one.
type queued struct {
	ID      int64     `db:"id"`
	AssetID uuid.UUID `db:"asset_id"`
	writer
}

// rollBatch is how many assets one roller transaction announces.
const rollBatch = 2000

// Roller announces compliance transitions.
type Roller struct {
	store *Store
	zone  *time.Location
	now   func() time.Time
}

// NewRoller returns the roller over s; days begin at midnight in zone.
func NewRoller(s *Store, zone *time.Location) *Roller {
	return &Roller{store: s, zone: zone, now: time.Now}
}

// today is the date in the roller's zone: what overdue is measured
// against in the events.
func (r *Roller) today() model.Date {
	t := r.now().In(r.zone)
	return model.DateOf(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC))
}

var (
	transitionsAnnounced = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "compliance_transitions_total",
		Help: "compliance.updated events written, by cause (write: a queued asset; pass: the calendar or a plan).",
	}, []string{"cause"})
	rollerBehind = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "compliance_roller_behind_seconds",
		Help: "How long the oldest unfinished work of the compliance roller has waited: since midnight of a day not yet rolled, or 0.",
	})
)

// Job runs the roller every interval: the queued assets first, then a
// pass over every asset when a day has begun or a plan changed since the
// last one.
func (r *Roller) Job(interval time.Duration, logger log.Logger) job.Job {
	return job.Every("compliance roller", interval, func(ctx context.Context) {
		if err := r.Tick(ctx); err != nil && ctx.Err() == nil {
			level.Warn(logger).Log("msg", "compliance roller: a batch failed; the next tick goes on from where it stopped", "err", err)
		}
	})
}

// Tick announces the queued assets, then goes on with (or begins) a pass
// when one is due, until there is nothing left or ctx ends.
func (r *Roller) Tick(ctx context.Context) error {
	for {
		n, err := r.announceQueued(ctx)
		if err != nil {
			return err
		}
		if n < rollBatch {
			break
		}
	}
	for {
		done, err := r.passBatch(ctx)
		if err != nil || done {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// announceQueued announces a batch of the queued assets; n is how many.
func (r *Roller) announceQueued(ctx context.Context) (n int, err error) {
	today := r.today()
	written := 0
	err = r.store.Write(ctx, "announce queued compliance rows", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		rows, err := tx.Query(ctx, `DELETE FROM compliance_dirty WHERE id IN
			(SELECT id FROM compliance_dirty ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
			RETURNING id, asset_id, actor, request_id`, rollBatch)
		if err != nil {
			return nil, store.Classify(err, "take queued assets")
		}
		taken, err := pgx.CollectRows(rows, pgx.RowToStructByName[queued])
		if err != nil {
			return nil, store.Classify(err, "take queued assets")
		}
		n = len(taken)
		if n == 0 {
			return nil, nil
		}
		// Each asset once; its writer the last entry that names one.
		slices.SortFunc(taken, func(a, b queued) int { return cmp.Compare(a.ID, b.ID) })
		var ids []uuid.UUID
		writers := make(map[uuid.UUID]writer, n)
		for _, q := range taken {
			w, seen := writers[q.AssetID]
			if !seen {
				ids = append(ids, q.AssetID)
			}
			if q.Actor != nil || !seen {
				w = q.writer
			}
			writers[q.AssetID] = w
		}
		written, err = announce(ctx, tx, today, ids, writers)
		return nil, err
	})
	if err == nil && written > 0 {
		transitionsAnnounced.WithLabelValues("write").Add(float64(written))
		r.store.Events.Wake()
	}
	return n, err
}

// passBatch announces the next batch of a pass over every asset; done
// when no pass is due or the pass has ended. The pass's progress is
// compliance_roll's row, locked by the batch: one replica at a time moves
// it, and a batch's outbox rows commit with the progress they make.
func (r *Roller) passBatch(ctx context.Context) (done bool, err error) {
	today := r.today()
	written := 0
	err = r.store.Write(ctx, "roll compliance", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var rolledFor, passFor *model.Date
		var after *uuid.UUID
		var plansChanged bool
		err := tx.QueryRow(ctx, `SELECT rolled_for, pass_for, pass_after, plans_changed FROM compliance_roll FOR UPDATE SKIP LOCKED`).
			Scan(&rolledFor, &passFor, &after, &plansChanged)
		if err == pgx.ErrNoRows {
			done = true // another replica holds it
			return nil, nil
		}
		if err != nil {
			return nil, store.Classify(err, "read compliance roll")
		}
		if passFor == nil {
			if !plansChanged && rolledFor != nil && !rolledFor.Before(today) {
				done = true
				rollerBehind.Set(0)
				return nil, nil
			}
			// A new pass from the first asset: a plan changed, or a day began.
			passFor, after = &today, &uuid.Nil
			if _, err := tx.Exec(ctx, `UPDATE compliance_roll SET pass_for = $1, pass_after = $2, plans_changed = false`,
				today, uuid.Nil); err != nil {
				return nil, store.Classify(err, "begin compliance pass")
			}
		}
		midnight := time.Date(passFor.Year, passFor.Month, passFor.Day, 0, 0, 0, 0, r.zone)
		rollerBehind.Set(max(0, r.now().Sub(midnight).Seconds()))
		rows, err := tx.Query(ctx, `SELECT asset_id FROM known_assets WHERE asset_id > $1 ORDER BY asset_id LIMIT $2`, *after, rollBatch)
		if err != nil {
			return nil, store.Classify(err, "next assets of the pass")
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return nil, store.Classify(err, "next assets of the pass")
		}
		if len(ids) > 0 {
			// The pass announces against its own day, even past midnight:
			// the next pass starts from the next day.
			if written, err = announce(ctx, tx, *passFor, ids, nil); err != nil {
				return nil, err
			}
		}
		if len(ids) < rollBatch {
			_, err = tx.Exec(ctx, `UPDATE compliance_roll SET rolled_for = pass_for, pass_for = NULL, pass_after = NULL`)
			done = true
			return nil, store.Classify(err, "end compliance pass")
		}
		_, err = tx.Exec(ctx, `UPDATE compliance_roll SET pass_after = $1`, ids[len(ids)-1])
		return nil, store.Classify(err, "move compliance pass")
	})
	if err == nil && written > 0 {
		transitionsAnnounced.WithLabelValues("pass").Add(float64(written))
		r.store.Events.Wake()
	}
	return done, err
}

// announcedRow is a row as an event shows it, with its state before.
type announcedRow struct {
	AssetID    uuid.UUID       `db:"asset_id"`
	ActionType string          `db:"action_type"`
	Row        json.RawMessage `db:"row"`
	Before     json.RawMessage `db:"before"`
}

// announce writes the events of the rows of the assets ids
// whose state differs from the announced one, on the day today ($1),
// and the rows announced. The assets' projection rows are locked first,
// in id order: two announcements of one asset (two replicas, a queued
// asset and a pass) follow each other, the second computing after the
// first committed. A deleted asset's announced rows go, without events.
// An asset's transitions carry its writer's actor and request id when
// writers names them, RollerActor's otherwise.
func announce(ctx context.Context, tx pgx.Tx, today model.Date, ids []uuid.UUID, writers map[uuid.UUID]writer) (int, error) {
	if _, err := tx.Exec(ctx, `SELECT FROM known_assets WHERE asset_id = ANY($1) ORDER BY asset_id FOR UPDATE`, ids); err != nil {
		return 0, store.Classify(err, "lock assets")
	}
	if _, err := tx.Exec(ctx, `DELETE FROM compliance_announced a USING known_assets k
		WHERE a.asset_id = k.asset_id AND k.deleted AND k.asset_id = ANY($1)`, ids); err != nil {
		return 0, store.Classify(err, "forget deleted assets")
	}
	rows, err := tx.Query(ctx, `WITH now AS (`+rowStatesSQL+`)
		INSERT INTO compliance_announced AS a (asset_id, action_type, state, row)
		SELECT asset_id, action_type, state, row FROM now
		WHERE state <> coalesce((SELECT state FROM compliance_announced o WHERE o.asset_id = now.asset_id AND o.action_type = now.action_type), 'never')
		ON CONFLICT (asset_id, action_type) DO UPDATE SET state = excluded.state, row = excluded.row
		RETURNING a.asset_id, a.action_type, a.row,
			coalesce((SELECT row FROM compliance_announced o WHERE o.asset_id = a.asset_id AND o.action_type = a.action_type),
				jsonb_build_object('asset_id', a.asset_id, 'asset_type_id', a.row->'asset_type_id', 'action_type', a.action_type,
					'state', 'never', 'due_date', NULL, 'valid_through', NULL, 'last_action_id', NULL, 'last_performed_at', NULL,
					'status_ok', NULL, 'status_use_ok', NULL, 'due_reason', NULL, 'usage', NULL)) AS before`, today, ids)
	if err != nil {
		return 0, store.Classify(err, "announce compliance rows")
	}
	changed, err := pgx.CollectRows(rows, pgx.RowToStructByName[announcedRow])
	if err != nil {
		return 0, store.Classify(err, "announce compliance rows")
	}
	return len(changed), recordTransitions(ctx, tx, changed, writers)
}

// recordTransitions writes the outbox rows of changed in one statement
// (a pass writes thousands at a time): compliance.updated, subject the
// asset's compliance (kind compliance, the asset's id), data the row
// after, changes the fields that changed.
func recordTransitions(ctx context.Context, tx pgx.Tx, changed []announcedRow, writers map[uuid.UUID]writer) error {
	if len(changed) == 0 {
		return nil
	}
	ids, subjects, data, changes := make([]uuid.UUID, len(changed)), make([]string, len(changed)),
		make([]string, len(changed)), make([]string, len(changed))
	actors, requestIDs := make([]string, len(changed)), make([]string, len(changed))
	for i, c := range changed {
		actors[i] = RollerActor
		if w := writers[c.AssetID]; w.Actor != nil {
			actors[i], requestIDs[i] = *w.Actor, *w.RequestID
		}
		diff, err := outbox.Diff(c.Before, c.Row)
		if err != nil {
			return fmt.Errorf("compliance transition of %s %s: %w", c.AssetID, c.ActionType, err)
		}
		raw, err := json.Marshal(diff)
		if err != nil {
			return fmt.Errorf("compliance transition of %s %s: %w", c.AssetID, c.ActionType, err)
		}
		ids[i], subjects[i], data[i], changes[i] = uuid.Must(uuid.NewV7()), c.AssetID.String(), string(c.Row), string(raw)
	}
	_, err := tx.Exec(ctx, `INSERT INTO outbox (event_id, kind, subject_id, op, actor, request_id, data, changes)
		SELECT id, $2, subject, 'updated', actor, request_id, data::json, changes::json
		FROM unnest($1::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS e(id, subject, data, changes, actor, request_id)`,
		ids, outbox.KindCompliance, subjects, data, changes, actors, requestIDs)
	return store.Classify(err, "record compliance transitions")
}

// rowStatesSQL is every row of the assets $2 (the four types', and an
// added type's where a plan covers the asset or it has a finalized action
// of the type: GET /compliance's rows), on the day $1, with the
// due window of each row's plan (30 days without): the state GET
// /compliance gives without due_before, and the row as JSON as it shows
// it. plannedBranch computes the same.
var rowStatesSQL = rowStatesWhere("k.asset_id = ANY($2)")

// SeedAnnouncedSQL records every row's state on the day $1 as announced
// and empties the queue, in the transaction that loaded the rows: a seed
// (tools/bench) loads a registry that has announced what it holds, as a
// live one has, instead of a million transitions at once.
var SeedAnnouncedSQL = `WITH queue AS (DELETE FROM compliance_dirty)
	INSERT INTO compliance_announced (asset_id, action_type, state, row)
	SELECT asset_id, action_type, state, row FROM (` + rowStatesWhere("true") + `) now WHERE state <> 'never'`

func rowStatesWhere(cond string) string {
	return `SELECT k.asset_id, t.action_type, r.state, jsonb_build_object('asset_id', k.asset_id, 'asset_type_id', k.asset_type_id,
			'action_type', t.action_type, 'state', r.state, 'due_date', r.due_date, 'valid_through', l.valid_through,
			'last_action_id', l.action_id, 'last_performed_at', l.performed_at, 'status_ok', l.status_ok,
			'status_use_ok', l.status_use_ok, 'due_reason', r.due_reason, 'usage', r.usage,
			'rolled_up_state', NULL) AS row
	FROM known_assets k CROSS JOIN (SELECT name AS action_type, builtin FROM action_types) t
	LEFT JOIN latest_actions l ON l.asset_id = k.asset_id AND l.action_type = t.action_type
	` + due.StateJoins("t.action_type", "$1::date", "($1::date + coalesce(p.soon, interval '"+fmt.Sprint(DueWindow)+" days'))::date", "") + `
	WHERE NOT k.deleted AND (t.builtin OR p.every IS NOT NULL OR l.asset_id IS NOT NULL) AND ` + cond
}
