package refs_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/tools/testkit"
)

// The learner, on the stream: a person's created event makes the referrer
// remember the person alive, a message it cannot read teaches nothing, and
// the batch is acknowledged by its last event (nothing left pending on
// the consumer, whose policy is AckAll).
func TestLearnFromEventsOnTheStream(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	stream := testkit.NATS(t)
	nc := stream.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream.Stream, Subjects: []string{stream.SubjectPrefix + ".>"}}); err != nil {
		t.Fatal(err)
	}
	cfg := outbox.Config{Stream: stream.Stream, SubjectPrefix: stream.SubjectPrefix}
	stop := job.StartJobs(log.NewNopLogger(), w.referrer.LearnFromEvents(nc, cfg, log.NewNopLogger(), "person"))
	defer stop()
	// The consumer starts at the stream's end: publish once it is there.
	var consumer jetstream.Consumer
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if consumer, err = js.Consumer(ctx, stream.Stream, "things-refs-learn-batches"); err == nil {
			break
		} else if !errors.Is(err, jetstream.ErrConsumerNotFound) || time.Now().After(deadline) {
			t.Fatalf("the learner's consumer: %v", err)
		}
	}
	publish := func(kind string, id uuid.UUID, body []byte) {
		t.Helper()
		if _, err := js.Publish(ctx, stream.SubjectPrefix+"."+kind+"."+id.String(), body); err != nil {
			t.Fatal(err)
		}
	}
	event := func(typ string, id uuid.UUID) []byte {
		kind := typ[:len(typ)-len(".created")]
		body, err := json.Marshal(outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: typ, Time: time.Now().UTC(),
			Subject: outbox.EventSubject{Kind: kind, ID: id.String()}, Data: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	unreadable, learnt := uuid.New(), w.person(t)
	publish("person", unreadable, []byte("not an event"))
	publish("person", learnt, event("person.created", learnt))

	var alive bool
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := w.referrerStore.Pool.QueryRow(ctx, `SELECT alive FROM ref_targets WHERE kind = 'person' AND id = $1`, learnt).Scan(&alive)
		if err == nil {
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) || time.Now().After(deadline) {
			t.Fatalf("the created person is not learnt: %v", err)
		}
	}
	if !alive {
		t.Error("the created person is remembered not alive")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, err := consumer.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.AckPolicy != jetstream.AckAllPolicy {
			t.Fatalf("the learner's consumer acknowledges %s, want all", info.Config.AckPolicy)
		}
		if info.NumAckPending == 0 && info.AckFloor.Stream == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the learner's consumer: %d pending, floor %d; want 0 and 2", info.NumAckPending, info.AckFloor.Stream)
		}
	}
	var rows int
	if err := w.referrerStore.Pool.QueryRow(ctx, `SELECT count(*) FROM ref_targets`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Errorf("%d targets remembered, want the one created person", rows)
	}
}
