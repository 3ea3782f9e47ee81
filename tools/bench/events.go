package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/outbox"
)

// The change events' rows (issue 15): what recording an event costs a
// write, and how fast the relay publishes.
const (
	// EventsOffName is POST /organizations straight to a second parties
	// process that records no events (outbox.record=false, no relay), on
	// the same schema: the write as it was before events.
	EventsOffName = "POST /organizations, events off · direct"
	// relayBatch is how many events one call of RelayRow commits.
	relayBatch = 64
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
// relayBatch events straight into its outbox (as relayBatch writes would,
// in one transaction) and waits until the relay has published the last of
// them to JetStream and marked it. Its req/s times relayBatch is the
// events per second the relay sustains with 16 writers feeding it.
var RelayRow = Row{Name: "outbox relay: 64 events committed → published", Via: "direct", Events: relayBatch, Op: func(e *Env) (Op, error) {
	channel := outbox.Channel("parties")
	return Op{Do: func(ctx context.Context, w *Worker) error {
		var last int64
		err := pgx.BeginFunc(ctx, e.Reference, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, `INSERT INTO parties.outbox (event_id, kind, subject_id, op, actor, request_id, data)
				SELECT gen_random_uuid(), 'organization', $1 || '-' || n, 'created', 'bench', $1, '{"bench":true}'
				FROM generate_series(1, $2) AS n RETURNING id`, fmt.Sprintf("%s-%d", w.Tag, w.N), relayBatch).Scan(&last); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, channel)
			return err
		})
		if err != nil {
			return fmt.Errorf("commit events: %w", err)
		}
		for {
			var done bool
			if err := e.Reference.QueryRow(ctx, `SELECT published_at IS NOT NULL FROM parties.outbox WHERE id = $1`, last).Scan(&done); err != nil {
				return fmt.Errorf("wait for the relay: %w", err)
			}
			if done {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
		}
	}}, nil
}}
