package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/job"
)

// Follower is a durable JetStream consumer of other services' change
// events inside a service: every replica shares it, so each event is
// handled by one of them.
type Follower struct {
	// Name is the durable consumer's name, unique in the stream.
	Name string
	// Kinds are the kinds of resource whose events it gets.
	Kinds []string
	// New starts a consumer that does not exist yet at the stream's end
	// rather than its beginning: for a follower that only saves work, not
	// one whose read model needs every event.
	New bool
	// AckAll makes one acknowledgement stand for the message and every
	// earlier one (JetStream's AckAll): Handle acknowledges a batch it
	// handled whole by its last message. Every acknowledgement is a message
	// to NATS and an update of the consumer's state there, for each event;
	// one per batch is what a follower that handles a batch all or nothing
	// needs. A follower that may fail one message of a batch and keep the
	// next acknowledges each (explicit acknowledgements): an AckAll of a
	// later message would acknowledge the failed one too.
	AckAll bool
	// Replaces names the consumer this one takes the place of, which is
	// deleted. JetStream cannot change an existing consumer's
	// acknowledgement policy, so a follower that changes it takes a new
	// name; the first time it is made, it starts right after the last
	// message the old one had acknowledged with every earlier one, so no
	// event is skipped (those acknowledged out of order come again:
	// at least once).
	Replaces string
	// Handle handles what has arrived, one message or more, in stream
	// order, and acknowledges (or refuses) each one, or, with AckAll, the
	// last of those it handled. Messages that
	// arrive while it runs come in its next call; a busy stream is
	// handled in batches that begin at least a relay's round apart
	// (Gather), without waiting for one to fill.
	Handle func(ctx context.Context, msgs []jetstream.Msg)
}

// maxBatch bounds one call of Handle; maxPending is what JetStream hands
// the follower before it has acknowledged some.
const (
	maxBatch   = 256
	maxPending = 1000
)

// Job is the follower as the process's job (job.Job), named after
// its consumer. A stream that does not exist yet (no relay has created it)
// or a NATS that is down is retried every second.
func (f Follower) Job(nc *nats.Conn, cfg Config, logger log.Logger) job.Job {
	return job.Job{Name: "follower " + f.Name, Run: func(ctx context.Context) {
		for ctx.Err() == nil {
			if err := f.consume(ctx, nc, cfg); err != nil && ctx.Err() == nil {
				level.Warn(logger).Log("msg", "not following change events yet", "consumer", f.Name, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}}
}

// consume attaches to the consumer and hands what arrives to Handle until
// ctx ends.
func (f Follower) consume(ctx context.Context, nc *nats.Conn, cfg Config) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	setup, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	subjects := make([]string, len(f.Kinds))
	for i, kind := range f.Kinds {
		subjects[i] = cfg.SubjectPrefix + "." + kind + ".>"
	}
	consumer, err := f.ensure(setup, js, cfg.Stream, subjects)
	if err != nil {
		return fmt.Errorf("consumer %s on stream %s: %w", f.Name, cfg.Stream, err)
	}
	// The client calls back one message at a time; a second goroutine
	// takes what arrives within Gather as one batch.
	arrived := make(chan jetstream.Msg, maxPending)
	consuming, err := consumer.Consume(func(msg jetstream.Msg) {
		select {
		case arrived <- msg:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return err
	}
	defer consuming.Stop()
	var lastBatch time.Time
	for {
		var first jetstream.Msg
		select {
		case <-ctx.Done():
			return nil
		case first = <-arrived:
		}
		batch := Collect(ctx, first, arrived, maxBatch, Gather(time.Since(lastBatch)))
		lastBatch = time.Now()
		f.Handle(ctx, batch)
	}
}

// ensure creates the follower's consumer, or updates the one there to the
// follower's settings, keeping where it started (JetStream refuses to
// change that). A consumer made for the first time in the place of
// Replaces starts after the old one's acknowledgement floor; the old one
// is then deleted (again by the next start if a crash came between).
func (f Follower) ensure(ctx context.Context, js jetstream.JetStream, stream string, subjects []string) (jetstream.Consumer, error) {
	config := jetstream.ConsumerConfig{
		Durable:        f.Name,
		FilterSubjects: subjects,
		AckPolicy:      jetstream.AckExplicitPolicy,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckWait:        30 * time.Second,
		MaxAckPending:  maxPending,
	}
	if f.AckAll {
		config.AckPolicy = jetstream.AckAllPolicy
	}
	if f.New {
		config.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	existing, err := js.Consumer(ctx, stream, f.Name)
	switch {
	case err == nil:
		was := existing.CachedInfo().Config
		config.DeliverPolicy, config.OptStartSeq = was.DeliverPolicy, was.OptStartSeq
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, err
	case f.Replaces != "":
		old, err := js.Consumer(ctx, stream, f.Replaces)
		if err == nil {
			config.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
			config.OptStartSeq = old.CachedInfo().AckFloor.Stream + 1
		} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("the consumer it replaces, %s: %w", f.Replaces, err)
		}
	}
	consumer, err := js.CreateOrUpdateConsumer(ctx, stream, config)
	if err != nil {
		return nil, err
	}
	if f.Replaces != "" {
		if err := js.DeleteConsumer(ctx, stream, f.Replaces); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("delete the consumer it replaces, %s: %w", f.Replaces, err)
		}
	}
	return consumer, nil
}
