package refs

// Learning targets from their owners' change events. A target this service
// has never met costs its first write an ask of the owner (Prepare); an
// owner's "<kind>.created" event says the same thing earlier, so the
// service remembers the target as alive when the event arrives, and the
// first write naming it asks nobody.
//
// It keeps every guarantee of check.go, because a remembered row is only
// ever trusted under the target's lock, and every delete of the target
// that could still succeed marks this service's row not alive (forget)
// before it takes that lock:
//
//   - an event that arrives after such a mark finds the row there, not
//     alive, and changes nothing (the insert does nothing on a conflict);
//   - an event that arrives before it inserts a row the mark then
//     overwrites.
//
// A row marked not alive is forgotten only ForgetAfter after the mark
// (forget.go), so an event older than LearnHorizon is not learnt: the mark
// it must find may be gone (a consumer that lagged for a day, a message
// delivered again late), and learning is only a saving.
//
// Only kinds whose owners tell nothing but existence (Attrs empty) are
// learnt this way: an event does not carry an owner's attributes in the
// form Exists gives them.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
)

// LearnFromEvents is the job (job.Job) that follows the change events
// of kinds (each one this service points at), remembering every target
// created from now on. The consumer starts at the stream's end: targets
// created before it are asked about once, as before. A batch is learnt
// whole or not at all, so one acknowledgement stands for it (AckAll); the
// consumer of explicit acknowledgements it replaced (learnConsumerBefore)
// hands over its place in the stream and is deleted.
func (r *Registry) LearnFromEvents(nc *nats.Conn, cfg outbox.Config, logger log.Logger, kinds ...string) job.Job {
	return outbox.Follower{Name: r.service + learnConsumer, Kinds: kinds, New: true,
		AckAll: true, Replaces: r.service + learnConsumerBefore,
		Handle: func(ctx context.Context, msgs []jetstream.Msg) { r.learnBatch(ctx, msgs, logger) },
	}.Job(nc, cfg, logger)
}

// The learning consumer's name after the service's, and the one it had
// while every event was acknowledged on its own (JetStream keeps a
// consumer's acknowledgement policy for its life).
const (
	learnConsumer       = "-refs-learn-batches"
	learnConsumerBefore = "-refs-learn"
)

// createdTarget is the target an event says was created; ok is false for
// events of other operations.
func createdTarget(data []byte) (k Key, ok bool, err error) {
	var e struct {
		Type    string    `json:"type"`
		Time    time.Time `json:"time"`
		Subject struct {
			Kind string `json:"kind"`
			ID   string `json:"id"`
		} `json:"subject"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return k, false, err
	}
	if e.Subject.Kind == "" || e.Type != e.Subject.Kind+"."+outbox.OpCreated || time.Since(e.Time) > LearnHorizon {
		return k, false, nil
	}
	id, err := uuid.Parse(e.Subject.ID)
	if err != nil {
		return k, false, fmt.Errorf("subject id %q: %w", e.Subject.ID, err)
	}
	return Key{Kind: e.Subject.Kind, ID: id}, true, nil
}

// learnBatch remembers the targets msgs say were created, in one
// statement, and acknowledges the batch by its last message. A statement
// that fails is tried again every second, the batch unacknowledged, until
// it succeeds or ctx ends (then the events come again to whichever
// replica follows next): acknowledging a later batch first would
// acknowledge this one too.
func (r *Registry) learnBatch(ctx context.Context, msgs []jetstream.Msg, logger log.Logger) {
	var created []Key
	for _, msg := range msgs {
		k, ok, err := createdTarget(msg.Data())
		if err != nil {
			level.Error(logger).Log("msg", "learning targets: dropping an event it cannot read", "subject", msg.Subject(), "err", err)
			continue
		}
		if ok {
			created = append(created, k)
		}
	}
	for {
		apply, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := r.Learn(apply, created)
		cancel()
		if err == nil {
			_ = msgs[len(msgs)-1].Ack()
			return
		}
		level.Warn(logger).Log("msg", "learning targets failed; trying again", "events", len(msgs), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// Learn remembers the targets created as alive, unless this service
// already has a row for one (remembered, or marked by a delete). It is
// what LearnFromEvents does with the events; the rows are written in one
// order, as remember's are, so that it never deadlocks with a batch.
func (r *Registry) Learn(ctx context.Context, created []Key) error {
	if len(created) == 0 {
		return nil
	}
	created = sortedKeys(created)
	kinds, ids := make([]string, len(created)), make([]uuid.UUID, len(created))
	for i, k := range created {
		kinds[i], ids[i] = k.Kind, k.ID
	}
	_, err := r.store.Pool.Exec(ctx, `INSERT INTO ref_targets (kind, id, alive, attrs)
		SELECT kind, id, true, '{}' FROM unnest($1::text[], $2::uuid[]) AS t(kind, id)
		ON CONFLICT (kind, id) DO NOTHING`, kinds, ids)
	return store.Classify(err, "learn reference targets")
}
