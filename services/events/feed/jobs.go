package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/services/events/feed/retention"
)

// Consumer reads the change events' stream and stores them in the feed.
// One replica consumes at a time (the holder of a session advisory lock;
// the others wait to take over), so the stream's order per resource is the
// order the feed stores. The leader reads with an ordered consumer that
// starts right after the stream position stored with the last batch, and
// stores each batch together with its new position in one transaction: a
// replica that takes over resumes exactly there, never ahead of messages
// its predecessor read but did not store (a durable consumer would hand
// those back only after an ack wait, behind later events of the same
// resource). An event is stored once (by id) however often it is read.
type Consumer struct {
	Store *Store
	// Lock is the consumer's lock: one replica consumes at a time.
	Lock    leader.Lock
	JS      jetstream.JetStream
	Stream  string
	Subject string // the stream's subjects to read, e.g. "registry.events.>"
	Name    string // names the stream position it stores (events.durable)
	Batch   int
	// Stored is called after a batch stored new events (it wakes the
	// dispatcher, which queues their deliveries).
	Stored func()
	// Leading are jobs that run while this replica leads (signing the
	// log's checkpoints), beside the consuming.
	Leading []job.Job
	Logger  log.Logger
}

// Run consumes until ctx ends, while this replica holds the consumer's
// lock.
func (c *Consumer) Run(ctx context.Context) { c.Lock.Run(ctx, c.lead) }

// lead consumes while this replica holds the consumer's lock; losing the
// lock's session ends the consuming.
func (c *Consumer) lead(ctx context.Context, _ *leader.Session) error {
	level.Info(c.Logger).Log("msg", "consuming the event stream", "stream", c.Stream, "position", c.Name)
	// Events stored before the log existed take their leaves first, so
	// the log follows the feed's order.
	if n, err := c.Store.Log.Backfill(ctx); err != nil {
		return fmt.Errorf("give stored events their leaves: %w", err)
	} else if n > 0 {
		level.Info(c.Logger).Log("msg", "added stored events to the log", "events", n)
	}
	var jobs sync.WaitGroup
	defer jobs.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, job := range c.Leading {
		jobs.Go(func() { job.Run(ctx) })
	}
	// A stream that does not exist yet, or a NATS that is down, is waited
	// for with the lock kept: no other replica would do better.
	for {
		err := c.consume(ctx)
		if ctx.Err() != nil {
			return nil
		}
		level.Warn(c.Logger).Log("msg", "consuming the event stream stopped; starting again", "err", err)
		sleep(ctx, 2*time.Second)
	}
}

func (c *Consumer) consume(ctx context.Context) error {
	after, err := c.Store.Position(ctx, c.Name, c.Stream)
	if err != nil {
		return err
	}
	config := jetstream.OrderedConsumerConfig{FilterSubjects: []string{c.Subject}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		stream, err := c.JS.Stream(ctx, c.Stream)
		if err != nil {
			return fmt.Errorf("stream %s: %w", c.Stream, err)
		}
		// A position past the stream's end means the stream was made anew:
		// read it all again (what was stored before stays stored once).
		if info := stream.CachedInfo(); info != nil && info.State.LastSeq >= after {
			config.DeliverPolicy, config.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
		}
	}
	cons, err := c.JS.OrderedConsumer(ctx, c.Stream, config)
	if err != nil {
		return fmt.Errorf("read %s: %w", c.Stream, err)
	}
	msgs := make(chan jetstream.Msg, c.Batch)
	consuming, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-ctx.Done():
		}
	}, jetstream.PullMaxMessages(c.Batch))
	if err != nil {
		return fmt.Errorf("consume %s: %w", c.Stream, err)
	}
	defer consuming.Stop()
	// Closed starts a goroutine that waits for the subscription's end on
	// every call: asked once per batch, they piled up by the million in a
	// long run.
	closed := consuming.Closed()
	lag := time.NewTicker(15 * time.Second)
	defer lag.Stop()
	var lastBatch time.Time
	for {
		var first jetstream.Msg
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-closed:
			return errors.New("the subscription closed")
		case <-lag.C:
			if info, err := cons.Info(ctx); err == nil {
				eventStoreLag.Set(float64(info.NumPending))
			}
			continue
		case first = <-msgs:
		}
		// A batch costs about the same whatever its size (the
		// transaction, the log's tiles, the dispatcher's turn): while
		// events keep coming, batches begin a relay's round apart.
		batch := outbox.Collect(ctx, first, msgs, c.Batch, outbox.Gather(time.Since(lastBatch)))
		lastBatch = time.Now()
		if !c.store(ctx, batch) {
			return ctx.Err()
		}
	}
}

// store stores a batch with its stream position, trying again until it
// succeeds or ctx ends (then the next leader reads it again from the
// stored position).
func (c *Consumer) store(ctx context.Context, batch []jetstream.Msg) bool {
	incoming := make([]Incoming, 0, len(batch))
	at := &StreamPosition{Consumer: c.Name, Stream: c.Stream}
	for _, m := range batch {
		meta, err := m.Metadata()
		if err != nil {
			level.Error(c.Logger).Log("msg", "a stream message without its metadata", "subject", m.Subject(), "err", err)
			return false
		}
		at.StreamSeq = max(at.StreamSeq, meta.Sequence.Stream)
		in, err := Parse(m.Data())
		if err != nil {
			// A message that is no event will not become one: it is
			// logged and passed over (the position moves past it).
			level.Error(c.Logger).Log("msg", "dropping a message that is not a change event", "subject", m.Subject(), "err", err)
			continue
		}
		in.StreamSeq = meta.Sequence.Stream
		incoming = append(incoming, in)
	}
	wait := 100 * time.Millisecond
	for {
		stored, err := c.Store.StoreFromStream(ctx, at, incoming)
		if err == nil {
			eventsStored.Add(float64(stored))
			if stored > 0 && c.Stored != nil {
				c.Stored()
			}
			return true
		}
		level.Warn(c.Logger).Log("msg", "storing events failed; trying again", "events", len(incoming), "err", err)
		if !sleep(ctx, wait) {
			return false
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// Parse reads a message as a change event and checks its envelope.
func Parse(data []byte) (Incoming, error) {
	var e outbox.Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Incoming{}, fmt.Errorf("not a JSON event: %w", err)
	}
	kind, op, _ := strings.Cut(e.Type, ".")
	switch {
	case e.ID == "" || uuid.Validate(e.ID) != nil:
		return Incoming{}, fmt.Errorf("id %q is not a UUID", e.ID)
	case !slices.Contains(outbox.Kinds, kind) || !slices.Contains(Ops, op):
		return Incoming{}, fmt.Errorf("type %q is not <kind>.<op>", e.Type)
	case e.Subject.Kind != kind || e.Subject.ID == "":
		return Incoming{}, fmt.Errorf("subject %+v does not match type %q", e.Subject, e.Type)
	}
	return Incoming{Event: e, Raw: data}, nil
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Partitions are the feed's partitions, for tests that look at them.
func Partitions() leader.Partitions { return retention.Partitions() }

// Tasks are the feed's maintenance of the schema (retention.Tasks).
func Tasks(partitionsEvery, feedRetention, pruneEvery, historyRetention time.Duration) []leader.Task {
	return retention.Tasks(partitionsEvery, feedRetention, pruneEvery, historyRetention)
}
