package outbox_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/tools/testkit"
)

// A follower that acknowledges by batch (AckAll) in the place of a consumer
// of explicit acknowledgements starts where that one's acknowledgements
// end, deletes it, and on its next start keeps its own place.
func TestFollowerReplacesAConsumerFromItsAcknowledgedPlace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	stream := testkit.NATS(t)
	js, err := jetstream.New(stream.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream.Stream, Subjects: []string{stream.SubjectPrefix + ".>"}}); err != nil {
		t.Fatal(err)
	}
	subject := stream.SubjectPrefix + ".organization.x"
	publish := func(n int) {
		t.Helper()
		for range n {
			if _, err := js.Publish(ctx, subject, []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := outbox.Config{Stream: stream.Stream, SubjectPrefix: stream.SubjectPrefix}

	// The consumer as an earlier release made it: new events only, each
	// acknowledged on its own; 1-3 and 5 acknowledged, 4 not.
	old, err := js.CreateConsumer(ctx, stream.Stream, jetstream.ConsumerConfig{Durable: "learn",
		FilterSubjects: []string{stream.SubjectPrefix + ".organization.>"}, AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverNewPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	publish(5)
	fetched, err := old.Fetch(5, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	for m := range fetched.Messages() {
		if seq++; seq != 4 {
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if seq != 5 {
		t.Fatalf("the old consumer fetched %d messages, want 5", seq)
	}

	follower := outbox.Follower{Name: "learn-batches", Kinds: []string{"organization"}, New: true, AckAll: true, Replaces: "learn"}
	follow := func() (got func(want int) []uint64, stop func()) {
		seqs := make(chan uint64, 100)
		// A batch is told once acknowledged, so that a stop after it
		// does not cut the acknowledgement short.
		follower.Handle = func(ctx context.Context, msgs []jetstream.Msg) {
			if err := msgs[len(msgs)-1].DoubleAck(ctx); err != nil {
				t.Error(err)
				return
			}
			for _, m := range msgs {
				meta, err := m.Metadata()
				if err != nil {
					t.Error(err)
					return
				}
				seqs <- meta.Sequence.Stream
			}
		}
		stop = job.StartJobs(log.NewNopLogger(), follower.Job(stream.Connect(t), cfg, log.NewNopLogger()))
		got = func(want int) []uint64 {
			t.Helper()
			var out []uint64
			deadline := time.After(30 * time.Second)
			for len(out) < want {
				select {
				case s := <-seqs:
					out = append(out, s)
				case <-deadline:
					t.Fatalf("the follower handled %v, want %d messages", out, want)
				}
			}
			return out
		}
		return got, stop
	}

	got, stop := follow()
	if seqs := got(2); !slices.Equal(seqs, []uint64{4, 5}) {
		t.Errorf("the follower began with %v, want [4 5]: right after the old consumer's acknowledged place", seqs)
	}
	stop()
	if _, err := js.Consumer(ctx, stream.Stream, "learn"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the replaced consumer: %v, want it deleted", err)
	}
	info := consumerInfo(t, js, stream.Stream, "learn-batches")
	if info.Config.AckPolicy != jetstream.AckAllPolicy || info.AckFloor.Stream != 5 || info.NumAckPending != 0 {
		t.Errorf("the follower's consumer: %s, floor %d, %d pending; want AckAll, 5, 0",
			info.Config.AckPolicy, info.AckFloor.Stream, info.NumAckPending)
	}

	// Started again, the consumer there keeps its place (JetStream would
	// refuse a change of where it starts).
	publish(2)
	got, stop = follow()
	defer stop()
	if seqs := got(2); !slices.Equal(seqs, []uint64{6, 7}) {
		t.Errorf("the follower started again handled %v, want [6 7]", seqs)
	}
}

func consumerInfo(t *testing.T, js jetstream.JetStream, stream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(t.Context(), stream, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info
}
