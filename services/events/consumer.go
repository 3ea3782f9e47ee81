package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/outbox"
)

// Consumer reads the change events' stream through a durable JetStream
// consumer and stores them in the feed. It is the feed's one writer per
// replica: it takes what is waiting (up to Batch), stores it in one
// transaction and only then acknowledges it, so an event is stored once
// (by id) however often it is delivered, and nothing acknowledged is lost.
// The durable consumer remembers the position across restarts.
type Consumer struct {
	Store   *Store
	JS      jetstream.JetStream
	Stream  string
	Subject string // the stream's subjects to read, e.g. "registry.events.>"
	Durable string
	Batch   int
	// Stored is called after a batch queued deliveries (it wakes the
	// dispatcher).
	Stored func()
	Logger log.Logger
}

// Run consumes until ctx ends. A stream that does not exist yet (no
// service has published) or a NATS that is down is waited for.
func (c *Consumer) Run(ctx context.Context) {
	for ctx.Err() == nil {
		err := c.consume(ctx)
		if ctx.Err() != nil {
			return
		}
		level.Warn(c.Logger).Log("msg", "consuming the event stream stopped; starting again", "err", err)
		sleep(ctx, 2*time.Second)
	}
}

func (c *Consumer) consume(ctx context.Context) error {
	cons, err := c.JS.CreateOrUpdateConsumer(ctx, c.Stream, jetstream.ConsumerConfig{
		Durable:       c.Durable,
		Description:   "the events service: change feed, histories, webhooks",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       time.Minute,
		MaxDeliver:    -1,
		MaxAckPending: 4 * c.Batch,
		FilterSubject: c.Subject,
	})
	if err != nil {
		return fmt.Errorf("create the durable consumer %s on %s: %w", c.Durable, c.Stream, err)
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
	lag := time.NewTicker(15 * time.Second)
	defer lag.Stop()
	for {
		var first jetstream.Msg
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-consuming.Closed():
			return errors.New("the subscription closed")
		case <-lag.C:
			if info, err := cons.Info(ctx); err == nil {
				eventStoreLag.Set(float64(info.NumPending + uint64(info.NumAckPending)))
			}
			continue
		case first = <-msgs:
		}
		batch := []jetstream.Msg{first}
	drain:
		for len(batch) < c.Batch {
			select {
			case m := <-msgs:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		if !c.store(ctx, batch) {
			return ctx.Err()
		}
	}
}

// store stores a batch, trying again until it succeeds or ctx ends
// (then nothing is acknowledged, and JetStream delivers it again).
func (c *Consumer) store(ctx context.Context, batch []jetstream.Msg) bool {
	incoming := make([]Incoming, 0, len(batch))
	for _, m := range batch {
		in, err := Parse(m.Data())
		if err != nil {
			// A message that is no event will not become one: it is
			// logged and never delivered again.
			level.Error(c.Logger).Log("msg", "dropping a message that is not a change event", "subject", m.Subject(), "err", err)
			_ = m.Term()
			continue
		}
		incoming = append(incoming, in)
	}
	wait := 100 * time.Millisecond
	for {
		stored, queued, err := c.Store.StoreEvents(ctx, incoming)
		if err == nil {
			eventsStored.Add(float64(stored))
			if queued > 0 && c.Stored != nil {
				c.Stored()
			}
			break
		}
		level.Warn(c.Logger).Log("msg", "storing events failed; trying again", "events", len(incoming), "err", err)
		if !sleep(ctx, wait) {
			return false
		}
		wait = min(2*wait, 5*time.Second)
		for _, m := range batch {
			_ = m.InProgress() // keep JetStream from delivering it again meanwhile
		}
	}
	for _, m := range batch {
		_ = m.Ack() // a lost ack means a redelivery, which stores nothing twice
	}
	return true
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
