package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/model"
)

// Relay publishes a schema's outbox to the JetStream stream. Every replica
// of a service runs one, and one of them at a time leads: the holder of a
// session advisory lock on the schema, taken on a connection of its own
// (pkg/leader). The others stand by and take over when the leader's
// session ends (a crash, a lost connection, a leader silent for longer
// than Config.LeaderSilence). The leader looks for events when this
// process's writes commit some (Recorder.Wake) and every Config.Poll.
//
// Order: events are read oldest first (by outbox id) and an event is
// published only once every earlier event of the same subject has been
// acknowledged by JetStream: a round publishes what it read in waves, the
// first event of each subject, then, once all of those are acknowledged,
// the second, and so on. Writes to one resource are serialized by its row lock and each
// records its event in its own transaction, so a later change of a
// resource always has a larger outbox id and is visible no earlier than
// the one before it (docs/architecture.md says why).
//
// Fenced: a leader's publishes carry its epoch, and JetStream refuses
// those of a leader another replica has replaced since (fence.go).
//
// At least once: an event is marked published only after JetStream's
// acknowledgement; a relay that dies between the two publishes it again,
// and JetStream drops the second copy within the duplicate window (the
// message id is the event id).
//
// No event stops another: an event NATS refuses for good (larger than the
// server's max_payload or the stream's max_msg_size) is set aside, and
// with it every later event of its subject, so that subject's order still
// holds; every other subject's events go on. An operator sees and replays
// what was set aside (SetAside, Replay; the services' outbox-set-aside
// and outbox-replay commands).
type Relay struct {
	pool   *pgxpool.Pool
	schema string
	cfg    Config
	js     jetstream.JetStream
	logger log.Logger
	wake   <-chan struct{}

	mu          sync.Mutex
	state       string // "starting", "leader", "standby"
	lastErr     error
	streamReady bool
	// epoch is the stream sequence of this leader's fence (fence.go), 0
	// before its first round; fencedAt when it was published.
	epoch    uint64
	fencedAt time.Time

	// beforePublish, when set (tests), runs after a round read its events
	// and before it publishes them: a leader frozen there.
	beforePublish func()

	// afterPublish, when set (tests), runs after a round's events were
	// acknowledged and before they are marked: a relay killed there
	// leaves them to be published again.
	afterPublish func()
}

// NewRelay returns the relay of schema's outbox over pool, publishing on
// nc, woken by the writes of rec (which may be nil: polling only).
func NewRelay(pool *pgxpool.Pool, schema string, nc *nats.Conn, rec *Recorder, cfg Config, logger log.Logger) (*Relay, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("outbox: jetstream: %w", err)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Stream == "" {
		cfg.Stream = StreamName
	}
	if cfg.SubjectPrefix == "" {
		cfg.SubjectPrefix = SubjectPrefix
	}
	return &Relay{pool: pool, schema: schema, cfg: cfg, js: js, wake: rec.woken(),
		logger: log.With(logger, "component", "outbox relay"), state: "starting"}, nil
}

// Job is the relay as the process's job (job.Job).
func (r *Relay) Job() job.Job { return job.Job{Name: "outbox relay", Run: r.Run} }

// Run leads or stands by until ctx ends.
func (r *Relay) Run(ctx context.Context) {
	lock := leader.Lock{Pool: r.pool, Name: "outbox relay", Silence: r.cfg.LeaderSilence, Logger: r.logger,
		Standby: func() {
			r.set("standby", nil)
			relayPending.WithLabelValues(r.schema).Set(0)
			relayOldest.WithLabelValues(r.schema).Set(0)
		},
		Ended: func(err error) {
			if err != nil {
				r.fail(err)
			}
		}}
	lock.Run(ctx, r.lead)
}

// Ready is the relay's readiness: nil when it publishes or stands by for
// the replica that does; otherwise why it cannot publish, with what waits.
// It is reported in the service's /readyz as an optional check: NATS down
// stops the events, never the writes.
func (r *Relay) Ready(ctx context.Context) error {
	r.mu.Lock()
	state, err := r.state, r.lastErr
	r.mu.Unlock()
	if err != nil {
		return relayError{err}
	}
	if state == "starting" {
		return relayError{errors.New("the relay has not published yet")}
	}
	return nil
}

// relayError says in /readyz why events are not published.
type relayError struct{ err error }

func (e relayError) Error() string           { return e.err.Error() }
func (e relayError) Unwrap() error           { return e.err }
func (e relayError) ReadinessReason() string { return "events wait in the outbox: " + e.err.Error() }

func (r *Relay) set(state string, err error) {
	r.mu.Lock()
	r.state, r.lastErr = state, err
	r.mu.Unlock()
	leader := 0.0
	if state == "leader" {
		leader = 1
	}
	relayLeader.WithLabelValues(r.schema).Set(leader)
}

func (r *Relay) fail(err error) {
	r.mu.Lock()
	r.lastErr = err
	r.mu.Unlock()
}

// lead publishes while this replica holds the schema's relay lock, on
// the lock's session.
func (r *Relay) lead(ctx context.Context, s *leader.Session) error {
	level.Info(r.logger).Log("msg", "outbox relay leads", "schema", r.schema)
	r.set("leader", nil)
	r.epoch = 0 // fenced again before the first round
	var lastSweep, lastMeasure, lastRound time.Time
	// The outbox is a queue: the relay vacuums what it deleted.
	vacuum := leader.QueueVacuum{Table: "outbox"}
	for ctx.Err() == nil {
		var (
			settled    int
			natsFailed bool
		)
		lastRound = time.Now()
		err := s.Use(func(conn *pgx.Conn) error {
			var err error
			settled, err = r.round(ctx, conn)
			if err != nil {
				var nerr natsError
				if !errors.As(err, &nerr) {
					return err // the database: give the lock up and start over
				}
				r.fail(err)
				publishErrors.WithLabelValues(r.schema).Inc()
				level.Warn(r.logger).Log("msg", "publishing events failed; they wait in the outbox", "err", err)
				natsFailed, lastMeasure = true, time.Now()
				return r.measure(ctx, conn)
			}
			r.fail(nil)
			// The gauges once a second: counting on every round would cost
			// as much as the round.
			if time.Since(lastMeasure) >= time.Second {
				if err := r.measure(ctx, conn); err != nil {
					return err
				}
				lastMeasure = time.Now()
			}
			if err := vacuum.Took(ctx, conn, settled); err != nil {
				return err
			}
			if r.cfg.Retention > 0 && time.Since(lastSweep) > min(time.Minute, r.cfg.Retention) {
				if err := r.sweep(ctx, conn); err != nil {
					return err
				}
				lastSweep = time.Now()
			}
			return nil
		})
		if err != nil {
			return err
		}
		if natsFailed {
			sleep(ctx, r.cfg.Poll)
			continue
		}
		if settled == r.cfg.Batch {
			continue // more wait
		}
		poll := time.NewTimer(r.cfg.Poll)
		select {
		case <-ctx.Done():
		case <-r.wake:
			sleep(ctx, gather(time.Since(lastRound)))
		case <-poll.C:
		}
		poll.Stop()
	}
	return nil
}

// gather is how long a relay woken by a write waits for more commits
// before its round, sinceLast after its previous round began: coalesce
// after a quiet spell, so a lone write's event leaves within a few
// milliseconds; while writes keep waking it, until roundInterval after the
// previous round began. A round costs about the same whatever its size:
// the outbox's read and delete here, and downstream the events service's
// transaction (the stream position, the feed's lock, the log's tiles), its
// dispatcher's fan-out and claim, and each follower's statement, since
// they take what arrived together as one batch. Rounds at most every
// roundInterval make a busy registry pay those once per many events
// (docs/architecture.md, "Round trips of a write").
func gather(sinceLast time.Duration) time.Duration {
	return max(coalesce, roundInterval-sinceLast)
}

const (
	// coalesce is the shortest wait: writes commit in bursts, and the
	// ones committing in the next moment go in the same round.
	coalesce = 5 * time.Millisecond
	// roundInterval is the shortest spacing of rounds a stream of writes
	// wakes: at most that much delay added to an event, for rounds of
	// roundInterval's worth of writes. Half of outbox.poll's default,
	// which the events of other replicas' writes already wait.
	roundInterval = 50 * time.Millisecond
)

// natsError marks a failure of NATS (not of the database): the relay keeps
// its lock and tries again.
type natsError struct{ err error }

func (e natsError) Error() string { return "nats: " + e.err.Error() }
func (e natsError) Unwrap() error { return e.err }

// pending is one outbox row on its way to the stream.
type pending struct {
	id    int64
	key   string // its subject's kind and id
	event Event
}

// waves orders a round's events for publishing: the i-th wave holds the
// i-th event of each subject, in outbox order. A wave is published only
// once every event of the one before is acknowledged, so a subject's
// events reach the stream in order and a round still takes all it read.
// (A round that took one event per subject left two thirds of a
// compliance pass, a few events per asset, for later rounds to read
// again.)
func waves(batch []pending) [][]pending {
	var out [][]pending
	seen := map[string]int{}
	for _, p := range batch {
		i := seen[p.key]
		seen[p.key] = i + 1
		if i == len(out) {
			out = append(out, nil)
		}
		out[i] = append(out[i], p)
	}
	return out
}

// round publishes the oldest unpublished events, a subject's in order
// (publishInWaves), and marks those JetStream acknowledged; it sets aside those NATS
// refuses for good, and the events behind a set-aside one of their
// subject. It returns how many rows it settled (published or set aside).
func (r *Relay) round(ctx context.Context, conn *pgx.Conn) (int, error) {
	if !r.streamReady {
		if err := r.ensureStream(ctx); err != nil {
			return 0, natsError{err}
		}
		r.streamReady = true
	}
	if r.epoch == 0 || time.Since(r.fencedAt) > fenceRefresh {
		if err := r.fence(ctx); err != nil {
			r.streamReady = false // ensured again first: the fence subject may be what is missing
			return 0, err
		}
	}
	// The outbox holds only unpublished events, read by the primary key
	// (published_at is set only by relays of an earlier version, which
	// marked published events in place). held: an earlier event of the
	// subject is set aside, so this one must wait behind it (the partial
	// index on set-aside rows is empty while none is, so asking costs a
	// lookup in an empty index).
	rows, err := conn.Query(ctx, `SELECT o.id, o.event_id::text, o.kind, o.subject_id, o.op, o.time, o.actor, o.request_id,
			o.data::text, o.changes::text,
			EXISTS (SELECT 1 FROM outbox s WHERE s.set_aside_at IS NOT NULL AND s.kind = o.kind AND s.subject_id = o.subject_id) AS held
		FROM outbox o WHERE o.published_at IS NULL AND o.set_aside_at IS NULL ORDER BY o.id LIMIT $1`, r.cfg.Batch)
	if err != nil {
		return 0, fmt.Errorf("read the outbox: %w", err)
	}
	var (
		batch []pending
		held  []int64
	)
	for rows.Next() {
		var (
			p                 pending
			kind, subject, op string
			data              string
			changes           *string
			behind            bool
		)
		if err := rows.Scan(&p.id, &p.event.ID, &kind, &subject, &op, &p.event.Time, &p.event.Actor, &p.event.RequestID, &data, &changes, &behind); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read the outbox: %w", err)
		}
		if behind {
			held = append(held, p.id) // every one: left here, they would fill the next rounds
			continue
		}
		p.key = kind + "." + subject
		p.event.Type = kind + "." + op
		p.event.Time = p.event.Time.UTC()
		p.event.Subject = EventSubject{Kind: kind, ID: subject}
		p.event.Data = json.RawMessage(data)
		if changes != nil {
			if err := json.Unmarshal([]byte(*changes), &p.event.Changes); err != nil {
				rows.Close()
				return 0, fmt.Errorf("outbox event %s: changes: %w", p.event.ID, err)
			}
		}
		batch = append(batch, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read the outbox: %w", err)
	}
	settled := 0
	if len(held) > 0 {
		n, err := r.holdBack(ctx, conn, held)
		if err != nil {
			return 0, err
		}
		settled += n
	}
	if len(batch) == 0 {
		return settled, nil
	}
	if r.beforePublish != nil {
		r.beforePublish()
	}
	acked, refused, pubErr := r.publishInWaves(ctx, batch)
	if len(refused) > 0 {
		if err := r.setAside(ctx, conn, refused); err != nil {
			return 0, err
		}
		settled += len(refused)
	}
	settled += len(acked)
	if len(acked) > 0 {
		if r.afterPublish != nil {
			r.afterPublish()
		}
		// An acknowledged event leaves the outbox, which then holds only
		// what waits: the relay reads it by its primary key, and no index
		// of the pending rows (a page every write and every round would
		// meet on) is kept. With a retention it moves to outbox_published
		// for inspection; without one it is deleted at once (a delete
		// only marks the row).
		mark := `DELETE FROM outbox WHERE id = ANY($1)`
		if r.cfg.Retention > 0 {
			mark = `WITH moved AS (DELETE FROM outbox WHERE id = ANY($1)
					RETURNING id, event_id, kind, subject_id, op, time, actor, request_id, data, changes)
				INSERT INTO outbox_published SELECT *, clock_timestamp() FROM moved`
		}
		if _, err := conn.Exec(ctx, mark, acked); err != nil {
			return 0, fmt.Errorf("mark published events: %w", err)
		}
		published.WithLabelValues(r.schema).Add(float64(len(acked)))
	}
	if errors.As(pubErr, new(fenced)) {
		return settled, pubErr // not NATS's failure: this relay no longer leads
	}
	if pubErr != nil {
		r.streamReady = false // ensured again first: it may be what is missing
		return settled, natsError{pubErr}
	}
	return settled, nil
}

// publishInWaves publishes the batch wave by wave (waves). An event NATS
// refuses stops its subject: its later events stay in the outbox, to be
// held back behind it by the next round. A failure of NATS stops the
// round: what is not acknowledged stays for the next.
func (r *Relay) publishInWaves(ctx context.Context, batch []pending) (acked []int64, refused map[int64]error, err error) {
	stopped := map[string]bool{}
	for _, wave := range waves(batch) {
		keys := map[int64]string{}
		wave = slices.DeleteFunc(wave, func(p pending) bool { return stopped[p.key] })
		for _, p := range wave {
			keys[p.id] = p.key
		}
		waveAcked, waveRefused, err := r.publish(ctx, wave)
		acked = append(acked, waveAcked...)
		for id, why := range waveRefused {
			if refused == nil {
				refused = map[int64]error{}
			}
			refused[id] = why
			stopped[keys[id]] = true
		}
		if err != nil {
			return acked, refused, err
		}
	}
	return acked, refused, nil
}

// publishTimeout bounds the wait for one round's acknowledgements.
const publishTimeout = 10 * time.Second

// publish sends the batch without waiting between messages and then
// collects JetStream's acknowledgements. It returns the outbox ids of the
// acknowledged events, the events NATS refused for good with why
// (unpublishable), and the first other failure (NATS down, no
// acknowledgement), after which the rest of the batch waits.
//
// The wave's first event carries the fence check (fence.go) and is
// acknowledged before the others are sent: a stale leader's first publish
// is refused and nothing more of its round leaves. Only one at a time
// carries the check because a replicated stream refuses a message whose
// check subject another in-flight message is checking (it would have to
// order them), which every pipelined event would be.
func (r *Relay) publish(ctx context.Context, batch []pending) (acked []int64, refused map[int64]error, err error) {
	merge := func(a []int64, rf map[int64]error) {
		acked = append(acked, a...)
		for id, why := range rf {
			if refused == nil {
				refused = map[int64]error{}
			}
			refused[id] = why
		}
	}
	for len(batch) > 0 {
		a, rf, err := r.send(ctx, batch[:1], true)
		merge(a, rf)
		batch = batch[1:]
		if err != nil {
			return acked, refused, err
		}
		if len(a) == 1 {
			break // the fence held: the rest go unchecked
		}
	}
	if len(batch) > 0 {
		a, rf, err := r.send(ctx, batch, false)
		merge(a, rf)
		return acked, refused, err
	}
	return acked, refused, nil
}

// send publishes the batch without waiting between messages and then
// collects JetStream's acknowledgements; with checked, each message holds
// only under this leader's fence.
func (r *Relay) send(ctx context.Context, batch []pending, checked bool) (acked []int64, refused map[int64]error, err error) {
	type sent struct {
		id     int64
		future jetstream.PubAckFuture
	}
	var (
		inFlight []sent
		firstErr error
	)
	refuse := func(id int64, err error) {
		if refused == nil {
			refused = map[int64]error{}
		}
		refused[id] = err
	}
	for _, p := range batch {
		body, err := model.Marshal(p.event)
		if err != nil {
			refuse(p.id, fmt.Errorf("encode event %s: %w", p.event.ID, err))
			continue
		}
		msg := &nats.Msg{Subject: r.cfg.SubjectPrefix + "." + p.event.Subject.Kind + "." + p.event.Subject.ID, Data: body, Header: nats.Header{}}
		opts := []jetstream.PublishOpt{jetstream.WithMsgID(p.event.ID), jetstream.WithExpectStream(r.cfg.Stream)}
		opts = append(opts, r.epochOpts(msg, checked)...)
		f, err := r.js.PublishMsgAsync(msg, opts...)
		if err != nil {
			if unpublishable(err) {
				refuse(p.id, fmt.Errorf("event %s of %d bytes: %w", p.event.ID, len(body), err))
				continue
			}
			firstErr = err
			break
		}
		inFlight = append(inFlight, sent{p.id, f})
	}
	deadline := time.NewTimer(publishTimeout)
	defer deadline.Stop()
	for _, s := range inFlight {
		select {
		case <-s.future.Ok():
			acked = append(acked, s.id)
		case err := <-s.future.Err():
			if wrongEpoch(err) {
				staleRefused.WithLabelValues(r.schema).Inc()
				firstErr = fenced{err}
			} else if unpublishable(err) {
				refuse(s.id, err)
			} else if firstErr == nil {
				firstErr = err
			}
		case <-deadline.C:
			if firstErr == nil {
				firstErr = errors.New("no acknowledgement within " + publishTimeout.String())
			}
			return acked, refused, firstErr
		case <-ctx.Done():
			return acked, refused, ctx.Err()
		}
	}
	return acked, refused, firstErr
}

// unpublishable tells the failures of one event that trying again cannot
// mend (the event is too large for the server or the stream) from those
// of NATS itself (down, slow, the stream missing), which pass.
func unpublishable(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) {
		return true
	}
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
}

// ensureStream creates the stream, or updates it to this configuration.
func (r *Relay) ensureStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := r.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        r.cfg.Stream,
		Description: "The Asset Registry's change events (pkg/outbox)",
		// The events, and the relays' fences (fence.go).
		Subjects:   []string{r.cfg.SubjectPrefix + ".>", r.cfg.SubjectPrefix + "-leaders.>"},
		Storage:    jetstream.FileStorage,
		Retention:  jetstream.LimitsPolicy,
		Discard:    jetstream.DiscardOld,
		MaxAge:     r.cfg.MaxAge,
		Duplicates: r.cfg.DuplicateWindow,
		Replicas:   max(r.cfg.Replicas, 1),
		// The largest event the registry makes, with its headers: no
		// write's event is refused for its size (size.go).
		MaxMsgSize: MaxMessageSize,
	})
	if err != nil {
		return fmt.Errorf("ensure stream %s: %w", r.cfg.Stream, err)
	}
	if limit := r.js.Conn().MaxPayload(); limit > 0 && limit < MaxMessageSize {
		level.Warn(r.logger).Log("msg", "the NATS server's max_payload is below the largest event the registry makes: larger events will be set aside; set max_payload to at least max_event_size (docs/operations.md)",
			"max_payload", limit, "max_event_size", MaxMessageSize)
	}
	return nil
}

// measure sets the pending gauges from the outbox. It counts the waiting
// events exactly up to countedExactly; past that, the gauge is the span of
// their ids (an upper bound: a rolled-back write leaves a gap). A count of
// a large backlog reads every waiting row (2.6 s at half a million), once a
// second, on the relay's own session: it took most of the relay's time
// just when the backlog needed it most, and its long snapshot kept the
// published rows' dead index entries from being skipped by every round's
// read. The oldest is the age of the first waiting event by id.
func (r *Relay) measure(ctx context.Context, conn *pgx.Conn) error {
	var (
		counted, aside  int64
		firstID, lastID *int64
		oldest          *time.Time
	)
	if err := conn.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM (SELECT FROM outbox WHERE published_at IS NULL AND set_aside_at IS NULL LIMIT $1) waiting),
			first.id, first.time, (SELECT max(id) FROM outbox),
			(SELECT count(*) FROM (SELECT FROM outbox WHERE set_aside_at IS NOT NULL AND published_at IS NULL LIMIT $1) aside)
		FROM (SELECT) one LEFT JOIN LATERAL (SELECT id, time FROM outbox
			WHERE published_at IS NULL AND set_aside_at IS NULL ORDER BY id LIMIT 1) first ON true`, countedExactly).
		Scan(&counted, &firstID, &oldest, &lastID, &aside); err != nil {
		return fmt.Errorf("measure the outbox: %w", err)
	}
	relayPending.WithLabelValues(r.schema).Set(float64(pendingEstimate(counted, firstID, lastID)))
	relaySetAside.WithLabelValues(r.schema).Set(float64(aside))
	age := 0.0
	if oldest != nil {
		age = max(time.Since(*oldest).Seconds(), 0)
	}
	relayOldest.WithLabelValues(r.schema).Set(age)
	return nil
}

// countedExactly is how many waiting events the pending gauge counts one
// by one before it estimates (measure).
const countedExactly = 10_000

// pendingEstimate is the pending gauge: the count when it is below
// countedExactly, else the span of the waiting ids, never less than the
// count.
func pendingEstimate(counted int64, firstID, lastID *int64) int64 {
	if counted < countedExactly || firstID == nil || lastID == nil {
		return counted
	}
	return max(counted, *lastID-*firstID+1)
}

// sweep deletes published events older than the retention, a bounded
// number at a time.
func (r *Relay) sweep(ctx context.Context, conn *pgx.Conn) error {
	// The oldest rows by id are the oldest rows: look at those only, so
	// the sweep needs no index of its own.
	_, err := conn.Exec(ctx, `DELETE FROM outbox_published WHERE id IN (
		SELECT id FROM (SELECT id, published_at FROM outbox_published ORDER BY id LIMIT 10000) oldest
		WHERE published_at < clock_timestamp() - $1::interval)`, r.cfg.Retention.String())
	if err != nil {
		return fmt.Errorf("sweep published events: %w", err)
	}
	// Events a relay of an earlier version marked in place during an
	// upgrade: they would be read past by every round.
	if _, err := conn.Exec(ctx, `DELETE FROM outbox WHERE id IN (
		SELECT id FROM outbox WHERE published_at IS NOT NULL LIMIT 10000)`); err != nil {
		return fmt.Errorf("sweep events marked published in the outbox: %w", err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
