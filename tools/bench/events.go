package bench

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// The change events' rows: what recording an event costs a
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
// Its process gets its first requests in this row: its first writes
// open the pool's connections, which at load outlasted QUICK=1's 300 ms
// window (the row counted none), so the row has a second.
var EventsOff = Row{Name: EventsOffName, Via: "direct", Limit: RefPost, MinWindow: time.Second, Op: func(e *Env) (Op, error) {
	if e.EventsOffURL == "" {
		return Op{}, fmt.Errorf("%s: no parties process without events", EventsOffName)
	}
	return e.HTTPOp(e.EventsOffURL, func(w *Worker) Request { return createOrganization(e, w) }), nil
}}

// ReadersStoppedName is POST /organizations with events while every
// process that reads them (the events service's feed, the other services'
// reference learners and projections) is stopped with SIGSTOP: what a
// write's own event costs (the outbox row, the relay, NATS) without the
// work its readers do afterwards on the same two cores. In a cluster the
// readers run on cores of their own; the whole-stack row
// (POST /organizations · direct) is this machine's figure, and both are
// divided by EventsOffName.
const ReadersStoppedName = "POST /organizations, the events' readers stopped · direct"

// eventReaders are the processes that read the parties service's events.
var eventReaders = []string{"events", "actions", "assets", "documents"}

var ReadersStopped = Row{Name: ReadersStoppedName, Via: "direct", Limit: RefPost,
	Before: func(_ context.Context, e *Env) error { return e.signal(syscall.SIGSTOP, eventReaders...) },
	// Woken, they catch up with the row's events before the next row
	// begins (measureRow waits for the machine to be quiet).
	After: func(_ context.Context, e *Env) error { return e.signal(syscall.SIGCONT, eventReaders...) },
	Op: func(e *Env) (Op, error) {
		return e.HTTPOp(e.Stack.ServiceURLs["parties"], func(w *Worker) Request { return createOrganization(e, w) }), nil
	}}

// signal sends sig to each of the named registry processes; a stop that
// fails half way is undone, so no process is left stopped. While a
// process is stopped the row's metrics and profiles leave it out (a
// stopped process takes a connection and never answers).
func (e *Env) signal(sig syscall.Signal, names ...string) error {
	var errs []error
	for i, name := range names {
		p, ok := e.processes[name]
		if !ok {
			errs = append(errs, fmt.Errorf("signal: no process %s", name))
			continue
		}
		if sig == syscall.SIGSTOP {
			e.stopped.Store(name, true) // before the stop: no scrape may begin on a stopped process
		}
		if err := syscall.Kill(p.pid, sig); err != nil {
			errs = append(errs, fmt.Errorf("signal %s: %w", name, err))
			if sig == syscall.SIGSTOP {
				_ = e.signal(syscall.SIGCONT, names[:i+1]...)
				return errors.Join(errs...)
			}
			continue
		}
		if sig == syscall.SIGCONT {
			e.stopped.Delete(name)
		}
	}
	return errors.Join(errs...)
}

// RelayRow measures the relay of the parties service: each call commits
// relayBacklog events straight into its outbox in one transaction (off the
// clock, as a burst of writes would leave them) and is timed until the
// relay has published the last of them to JetStream and marked it, so its
// rate times relayBacklog is the events per second the relay sustains.
// The relay finds them within its poll interval (no write of its own
// process wakes it), which is part of the time.
var RelayRow = Row{Name: "outbox relay: 10,000 events committed → published", Via: "direct", Once: true, Long: true, Events: relayBacklog,
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
