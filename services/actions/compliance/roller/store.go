package roller

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/due"
)

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
	` + due.StateJoins("t.action_type", "$1::date", "($1::date + coalesce(p.soon, interval '"+fmt.Sprint(compliance.DueWindow)+" days'))::date", "") + `
	WHERE NOT k.deleted AND (t.builtin OR p.every IS NOT NULL OR l.asset_id IS NOT NULL) AND ` + cond
}

// Store is the roller's PostgreSQL side, in the actions schema:
// compliance_dirty (the queue of assets action writes changed, filled by
// triggers), compliance_roll (the pass over every asset) and
// compliance_announced (the rows as the last events said them), read
// against the compliance read model's rows.
type Store struct {
	*store.Store
	// compliance_dirty is a queue: the roller vacuums what it took out.
	dirty *leader.QueueVacuum
}

// NewStore returns the roller's store over the kit's store.
func NewStore(s *store.Store) *Store {
	return &Store{Store: s, dirty: &leader.QueueVacuum{Table: "compliance_dirty"}}
}

// announceQueued takes a batch of the queue, at most limit entries, and
// announces their assets' rows on the day today; taken is how many
// entries it took, written how many events it wrote.
func (s *Store) announceQueued(ctx context.Context, today model.Date, limit int) (taken, written int, err error) {
	err = s.Write(ctx, "announce queued compliance rows", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		// The ids are taken first, once (an array), and then deleted by
		// the primary key. As "id IN (subquery)" the planner, told by the
		// statistics of a queue it last saw empty that it holds one entry,
		// joined every entry against the subquery run again for each: a
		// burst of a hundred thousand entries took minutes a batch.
		entries, err := store.Many[queued](ctx, tx, "take queued assets", `DELETE FROM compliance_dirty WHERE id = ANY(ARRAY(
			SELECT id FROM compliance_dirty ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED))
			RETURNING id, asset_id, actor, request_id`, limit)
		if taken = len(entries); err != nil || taken == 0 {
			return nil, err
		}
		ids, writers := lastWriters(entries)
		written, err = s.announce(ctx, tx, today, ids, writers)
		return nil, err
	})
	return taken, written, err
}

// tookQueued counts entries taken out of the queue, and vacuums it when
// enough were.
func (s *Store) tookQueued(ctx context.Context, taken int) error {
	return s.dirty.Took(ctx, s.Pool, taken)
}

// rollPass announces the next batch, at most limit assets, of a pass
// over every asset; done when no pass is due or the pass has ended. The
// pass's progress is compliance_roll's row, locked by the batch: one
// replica at a time moves it, and a batch's events commit with the
// progress they make. A new pass begins, for today, when a plan changed
// or a day began since the last; behind is told the day of the pass in
// hand (nil: none due).
func (s *Store) rollPass(ctx context.Context, today model.Date, limit int, behind func(*model.Date)) (done bool, written int, err error) {
	err = s.Write(ctx, "roll compliance", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var rolledFor, passFor *model.Date
		var after *uuid.UUID
		var plansChanged bool
		err := tx.QueryRow(ctx, `SELECT rolled_for, pass_for, pass_after, plans_changed FROM compliance_roll FOR UPDATE SKIP LOCKED`).
			Scan(&rolledFor, &passFor, &after, &plansChanged)
		if errors.Is(err, pgx.ErrNoRows) {
			done = true // another replica holds it
			return nil, nil
		}
		if err != nil {
			return nil, store.Classify(err, "read compliance roll")
		}
		if passFor == nil {
			if !plansChanged && rolledFor != nil && !rolledFor.Before(today) {
				done = true
				behind(nil)
				return nil, nil
			}
			// A new pass from the first asset: a plan changed, or a day began.
			passFor, after = &today, &uuid.Nil
			if _, err := tx.Exec(ctx, `UPDATE compliance_roll SET pass_for = $1, pass_after = $2, plans_changed = false`,
				today, uuid.Nil); err != nil {
				return nil, store.Classify(err, "begin compliance pass")
			}
		}
		behind(passFor)
		rows, err := tx.Query(ctx, `SELECT asset_id FROM known_assets WHERE asset_id > $1 ORDER BY asset_id LIMIT $2`, *after, limit)
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
			if written, err = s.announce(ctx, tx, *passFor, ids, nil); err != nil {
				return nil, err
			}
		}
		if len(ids) < limit {
			_, err = tx.Exec(ctx, `UPDATE compliance_roll SET rolled_for = pass_for, pass_for = NULL, pass_after = NULL`)
			done = true
			return nil, store.Classify(err, "end compliance pass")
		}
		_, err = tx.Exec(ctx, `UPDATE compliance_roll SET pass_after = $1`, ids[len(ids)-1])
		return nil, store.Classify(err, "move compliance pass")
	})
	return done, written, err
}

// announce writes the events of the rows of the assets ids whose state
// differs from the announced one, on the day today, and the rows
// announced. The assets' projection rows are locked first, in id order:
// two announcements of one asset (two replicas, a queued asset and a
// pass) follow each other, the second computing after the first
// committed. A deleted asset's announced rows go, without events. An
// asset's transitions carry its writer's actor and request id when
// writers names them, Actor's otherwise.
//
// A pass (writers nil) leaves out the assets that are queued: a write
// that commits while the pass runs is seen by the pass's statement, and
// announced there it would carry Actor instead of its writer. The queue
// entry and the write commit together, so the statement that computes
// the rows sees both or neither; an entry a queue batch has taken but
// not yet committed is still seen, and that batch announces the asset
// once the pass lets go of it.
func (s *Store) announce(ctx context.Context, tx pgx.Tx, today model.Date, ids []uuid.UUID, writers map[uuid.UUID]writer) (int, error) {
	notQueued := "true"
	if writers == nil {
		notQueued = "NOT EXISTS (SELECT 1 FROM compliance_dirty d WHERE d.asset_id = now.asset_id)"
	}
	if _, err := tx.Exec(ctx, `SELECT FROM known_assets WHERE asset_id = ANY($1) ORDER BY asset_id FOR UPDATE`, ids); err != nil {
		return 0, store.Classify(err, "lock assets")
	}
	if _, err := tx.Exec(ctx, `DELETE FROM compliance_announced a USING known_assets k
		WHERE a.asset_id = k.asset_id AND k.deleted AND k.asset_id = ANY($1)`, ids); err != nil {
		return 0, store.Classify(err, "forget deleted assets")
	}
	changed, err := store.Many[announcedRow](ctx, tx, "announce compliance rows", `WITH now AS (`+rowStatesSQL+`)
		INSERT INTO compliance_announced AS a (asset_id, action_type, state, row)
		SELECT asset_id, action_type, state, row FROM now
		WHERE state <> coalesce((SELECT state FROM compliance_announced o WHERE o.asset_id = now.asset_id AND o.action_type = now.action_type), 'never')
			AND `+notQueued+`
		ON CONFLICT (asset_id, action_type) DO UPDATE SET state = excluded.state, row = excluded.row
		RETURNING a.asset_id, a.action_type, a.row,
			coalesce((SELECT row FROM compliance_announced o WHERE o.asset_id = a.asset_id AND o.action_type = a.action_type),
				jsonb_build_object('asset_id', a.asset_id, 'asset_type_id', a.row->'asset_type_id', 'action_type', a.action_type,
					'state', 'never', 'due_date', NULL, 'valid_through', NULL, 'last_action_id', NULL, 'last_performed_at', NULL,
					'status_ok', NULL, 'status_use_ok', NULL, 'due_reason', NULL, 'usage', NULL)) AS before`, today, ids)
	if err != nil {
		return 0, err
	}
	return len(changed), s.recordTransitions(ctx, tx, changed, writers)
}

// recordTransitions records the events of changed through the outbox, in
// the transaction that announced them, a call a run of one writer's rows
// (transitions), so that the events keep changed's order.
func (s *Store) recordTransitions(ctx context.Context, tx pgx.Tx, changed []announcedRow, writers map[uuid.UUID]writer) error {
	for _, run := range transitions(changed, writers) {
		if err := s.Record(ctx, tx, run.by, run.changes...); err != nil {
			return fmt.Errorf("compliance transitions: %w", err)
		}
	}
	return nil
}
