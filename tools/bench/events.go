package bench

import (
	"context"
	"fmt"
	"time"
)

// The change events' rows (issue 15): what recording an event costs a
// write, and how fast the relay publishes.
const (
	// EventsOffName is POST /organizations straight to a second parties
	// process that records no events (outbox.record=false, no relay), on
	// the same schema: the write as it was before events.
	EventsOffName = "POST /organizations, events off · direct"
	// relayBacklog is how many events one call of RelayRow publishes.
	relayBacklog = 10_000
)

// EventsOff is the write with events off, divided by the same limit as the
// write with them (RefPost); the goal divides the two.
var EventsOff = Row{Name: EventsOffName, Via: "direct", Limit: RefPost, Op: func(e *Env) (Op, error) {
	if e.EventsOffURL == "" {
		return Op{}, fmt.Errorf("%s: no parties process without events", EventsOffName)
	}
	return e.HTTPOp(e.EventsOffURL, func(w *Worker) Request { return createOrganization(e, w) }), nil
}}

// RelayRow measures the relay of the parties service: each call commits
// relayBacklog events straight into its outbox in one transaction (off the
// clock, as a burst of writes would leave them) and is timed until the
// relay has published the last of them to JetStream and marked it, so its
// rate times relayBacklog is the events per second the relay sustains.
// The relay finds them within its poll interval (no write of its own
// process wakes it), which is part of the time.
var RelayRow = Row{Name: "outbox relay: 10,000 events committed → published", Via: "direct", Once: true, Events: relayBacklog,
	Op: func(e *Env) (Op, error) {
		var last int64
		return Op{
			Prepare: func(ctx context.Context, w *Worker) error {
				err := e.Reference.QueryRow(ctx, `WITH inserted AS (
						INSERT INTO parties.outbox (event_id, kind, subject_id, op, actor, request_id, data)
						SELECT gen_random_uuid(), 'organization', $1 || '-' || n, 'created', 'bench', $1, '{"bench":true}'
						FROM generate_series(1, $2) AS n RETURNING id)
					SELECT max(id) FROM inserted`, fmt.Sprintf("%s-%d", w.Tag, w.N), relayBacklog).Scan(&last)
				if err != nil {
					return fmt.Errorf("commit events: %w", err)
				}
				return nil
			},
			Do: func(ctx context.Context, _ *Worker) error {
				for {
					var done bool
					if err := e.Reference.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM parties.outbox WHERE id = $1 AND published_at IS NULL)`, last).Scan(&done); err != nil {
						return fmt.Errorf("wait for the relay: %w", err)
					}
					if done {
						return nil
					}
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(5 * time.Millisecond):
					}
				}
			},
		}, nil
	}}
