package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-kit/log/level"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Setting aside: an event NATS refuses for good (larger than the server's
// max_payload or the stream's max_msg_size, which MaxMessageSize should
// make impossible) would otherwise be tried again every round and, since
// a round publishes each subject's oldest event first, hold up nothing
// else but its own subject: the relay marks it set aside and goes on.
// Every later event of the same subject is set aside behind it as the
// relay meets it, so a subject's events still reach the stream in order.
// An operator replays them (Replay) once the cause is mended: the relay
// then publishes them like any other, oldest first, and sets aside again
// any that NATS still refuses.
//
// The relay's marks and a replay take one transaction-level advisory lock
// per schema, so a replay never interleaves with the relay holding back a
// later event: either the relay sees the replay (and publishes the event
// in order), or the replay sees the relay's mark (and returns it too).

// setAsideLock is the advisory lock of the marks and replays of the
// connection's schema.
const setAsideLock = `SELECT pg_advisory_xact_lock(hashtextextended('outbox set-aside:' || current_schema(), 0))`

// setAside marks the events NATS refused, with why.
func (r *Relay) setAside(ctx context.Context, conn *pgx.Conn, refused map[int64]error) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setAsideLock); err != nil {
			return fmt.Errorf("set events aside: %w", err)
		}
		for id, why := range refused {
			var event, kind, subject string
			if err := tx.QueryRow(ctx, `UPDATE outbox SET set_aside_at = clock_timestamp(), set_aside_reason = $2 WHERE id = $1
				RETURNING event_id::text, kind, subject_id`, id, why.Error()).Scan(&event, &kind, &subject); err != nil {
				return fmt.Errorf("set event aside: %w", err)
			}
			setAsideTotal.WithLabelValues(r.schema).Inc()
			level.Error(r.logger).Log("msg", "an event NATS refuses was set aside, with the later events of its subject; other subjects' events go on (replay them with the service's outbox-replay command once mended)",
				"event", event, "subject", kind+"."+subject, "err", why)
		}
		return nil
	})
}

// holdBack sets aside the events ids whose subject has an earlier event
// set aside, under the lock: one whose subject a replay has returned
// meanwhile stays to be published in order. It returns how many it set
// aside.
func (r *Relay) holdBack(ctx context.Context, conn *pgx.Conn, ids []int64) (int, error) {
	var n int64
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setAsideLock); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE outbox o SET set_aside_at = clock_timestamp(),
				set_aside_reason = 'behind an earlier event of its subject that was set aside'
			WHERE o.id = ANY($1) AND o.set_aside_at IS NULL AND EXISTS (SELECT 1 FROM outbox s
				WHERE s.set_aside_at IS NOT NULL AND s.kind = o.kind AND s.subject_id = o.subject_id AND s.id < o.id)`, ids)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("hold back events behind set-aside ones: %w", err)
	}
	return int(n), nil
}

// SetAsideEvent is an event waiting for an operator's replay.
type SetAsideEvent struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	Subject string    `json:"subject"` // "<kind>.<id>"
	Time    time.Time `json:"time"`    // the write's
	SetAt   time.Time `json:"set_aside_at"`
	Reason  string    `json:"reason"`
	Bytes   int       `json:"bytes"` // of its data and changes, as stored
}

// SetAside lists the events set aside in the pool's schema, oldest first
// (at most limit).
func SetAside(ctx context.Context, pool *pgxpool.Pool, limit int) ([]SetAsideEvent, error) {
	rows, err := pool.Query(ctx, `SELECT event_id::text, kind || '.' || op, kind || '.' || subject_id, time, set_aside_at, set_aside_reason,
			octet_length(data::text) + coalesce(octet_length(changes::text), 0)
		FROM outbox WHERE set_aside_at IS NOT NULL AND published_at IS NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list set-aside events: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SetAsideEvent, error) {
		var e SetAsideEvent
		err := row.Scan(&e.ID, &e.Type, &e.Subject, &e.Time, &e.SetAt, &e.Reason, &e.Bytes)
		e.Time, e.SetAt = e.Time.UTC(), e.SetAt.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list set-aside events: %w", err)
	}
	return events, nil
}

// Replay returns set-aside events to the relay: those of subject
// ("<kind>.<id>"), or every one when subject is empty. A subject's events
// go back all together, so the relay publishes them in order. It returns
// how many went back.
func Replay(ctx context.Context, pool *pgxpool.Pool, subject string) (int, error) {
	where := ""
	var args []any
	if subject != "" {
		kind, id, ok := strings.Cut(subject, ".")
		if !ok || kind == "" || id == "" {
			return 0, errors.New(`outbox: a subject to replay is "<kind>.<id>", e.g. action.0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f`)
		}
		where, args = ` AND kind = $1 AND subject_id = $2`, []any{kind, id}
	}
	var n int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setAsideLock); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE outbox SET set_aside_at = NULL, set_aside_reason = NULL
			WHERE set_aside_at IS NOT NULL AND published_at IS NULL`+where, args...)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("replay set-aside events: %w", err)
	}
	return int(n), nil
}
