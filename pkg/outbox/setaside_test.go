package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/tools/testkit"
)

// padded is a counter with room to make its event as large as wanted.
type padded struct {
	N   int    `json:"n"`
	Pad string `json:"pad,omitempty"`
}

// TestTheLargestEventPublishes holds the servers every test, make run and
// the fault suite start (tools/devinfra) and the stream the relay creates
// to the largest event the registry makes (outbox.MaxEventSize), and
// publishes an update of that size.
func TestTheLargestEventPublishes(t *testing.T) {
	t.Parallel()
	if testkit.NatsMaxPayload < outbox.MaxMessageSize {
		t.Fatalf("the NATS servers of make run and the tests take %d bytes, less than the largest message %d", testkit.NatsMaxPayload, outbox.MaxMessageSize)
	}
	f := newFixture(t, testkit.NATSServer{})
	nc := testkit.NATSServer{URL: f.cfg.URL, User: f.cfg.User, Password: f.cfg.Password}.Connect(t)
	if got := nc.MaxPayload(); got < outbox.MaxMessageSize {
		t.Fatalf("the test NATS server's max_payload is %d, less than the largest message %d", got, outbox.MaxMessageSize)
	}
	// An update whose data and changes (old and new) are every byte of
	// the largest event but its envelope.
	pad := (outbox.MaxEventSize - outbox.MaxResourceFields) / 3
	old, now := padded{N: 0, Pad: strings.Repeat("o", pad)}, padded{N: 1, Pad: strings.Repeat("n", pad)}
	if err := f.write(t, request("client", "req"), nil, outbox.Created(outbox.KindAction, "asset-0", padded{N: 0}),
		outbox.Updated(outbox.KindAction, "asset-0", old, now)); err != nil {
		t.Fatal(err)
	}
	f.relay(t)
	testkit.Eventually(t, "the largest event published", 60*time.Second, func() bool { return f.unpublished(t) == 0 })
	if got := f.stream(t).CachedInfo().Config.MaxMsgSize; got != outbox.MaxMessageSize {
		t.Errorf("the stream takes messages of %d bytes, want %d", got, outbox.MaxMessageSize)
	}
	msg := f.last(t, "action.asset-0")
	if len(msg.Data) < outbox.MaxEventSize-outbox.MaxResourceFields || len(msg.Data) > outbox.MaxEventSize {
		t.Errorf("the update's event is %d bytes, want close to the largest, %d", len(msg.Data), outbox.MaxEventSize)
	}
}

// TestAnUnpublishableEventStopsNoOther runs a relay against a NATS server
// that takes 64 KiB: one resource's large event is set aside with the
// events after it, every other resource's events are published in order,
// a replay with the limit unchanged sets them aside again, and one after
// the limit is raised publishes them, in order.
func TestAnUnpublishableEventStopsNoOther(t *testing.T) {
	t.Parallel()
	server := testkit.StartNatsWith(t, testkit.NatsOptions{DataDir: filepath.Join(testkit.ServerDir(t), "nats"), MaxPayload: 64 << 10})
	f := newFixture(t, testkit.NATSServer{URL: server.URL, User: server.User, Password: server.Password})
	const others, changes = 4, 5
	write := func(id string, n int, pad int) {
		t.Helper()
		c := outbox.Updated(outbox.KindAsset, id, padded{N: n - 1}, padded{N: n, Pad: strings.Repeat("x", pad)})
		if n == 0 {
			c = outbox.Created(outbox.KindAsset, id, padded{N: 0, Pad: strings.Repeat("x", pad)})
		}
		if err := f.write(t, request("client", "req"), nil, c); err != nil {
			t.Fatal(err)
		}
	}
	write("asset-0", 0, 100<<10) // over the server's 64 KiB
	for n := range changes {
		for s := 1; s <= others; s++ {
			write(fmt.Sprint("asset-", s), n, 0)
		}
		if n > 0 {
			write("asset-0", n, 0) // publishable, but behind the large one
		}
	}
	f.relay(t)
	ctx := t.Context()
	testkit.Eventually(t, "every other resource's events published", 30*time.Second, func() bool {
		return f.unpublished(t) == changes && len(f.streamed(t)) == others*changes
	})
	for _, e := range f.streamed(t) {
		if e.Subject.ID == "asset-0" {
			t.Errorf("%s of asset-0 published before the event set aside ahead of it", e.Type)
		}
	}
	aside, err := outbox.SetAside(ctx, f.store.Pool.Pool, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(aside) != changes || !strings.Contains(aside[0].Reason, "maximum payload") || aside[0].Type != "asset.created" {
		t.Fatalf("set aside %+v, want asset-0's %d events, the first because NATS refuses its size", aside, changes)
	}
	for _, e := range aside[1:] {
		if e.Subject != "asset.asset-0" || !strings.Contains(e.Reason, "behind an earlier event") {
			t.Errorf("set aside %+v, want an event of asset-0 held behind the first", e)
		}
	}
	testkit.Eventually(t, "the set-aside gauge", 10*time.Second, func() bool { return outbox.SetAsideGauge(f.schema) == changes })

	// Replayed with the limit unchanged: set aside again, still unpublished.
	replayed := time.Now()
	if n, err := outbox.Replay(ctx, f.store.Pool.Pool, "asset.asset-0"); err != nil || n != changes {
		t.Fatalf("replay: %d events, %v; want %d", n, err, changes)
	}
	testkit.Eventually(t, "the replayed events set aside again", 30*time.Second, func() bool {
		aside, err := outbox.SetAside(ctx, f.store.Pool.Pool, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(aside) == changes && aside[0].SetAt.After(replayed) && aside[len(aside)-1].SetAt.After(replayed)
	})
	if got := len(f.streamed(t)); got != others*changes {
		t.Fatalf("the stream holds %d events after a replay the server still refuses, want %d", got, others*changes)
	}

	// The operator raises the limit and replays: asset-0's events follow
	// each other in order, after the others'.
	server.MaxPayload = testkit.NatsMaxPayload
	if err := server.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// A client learns the new limit when it reconnects: an event of
	// another resource published says the relay's client has.
	write("asset-5", 0, 0)
	testkit.Eventually(t, "the relay connected again", 30*time.Second, func() bool { return f.unpublished(t) == changes })
	if _, err := outbox.Replay(ctx, f.store.Pool.Pool, "nothing"); err == nil {
		t.Error(`replaying subject "nothing" was accepted, want "<kind>.<id>"`)
	}
	if n, err := outbox.Replay(ctx, f.store.Pool.Pool, ""); err != nil || n != changes {
		t.Fatalf("replay everything: %d events, %v; want %d", n, err, changes)
	}

	testkit.Eventually(t, "every event published after the replay", 60*time.Second, func() bool { return f.unpublished(t) == 0 })
	events := f.streamed(t)
	checkStream(t, slices.DeleteFunc(events, func(e outbox.Event) bool { return e.Subject.ID == "asset-5" }), others+1, changes)
	testkit.Eventually(t, "the set-aside gauge back at 0", 10*time.Second, func() bool { return outbox.SetAsideGauge(f.schema) == 0 })
}

// TestWhatIsUnpublishable tells the failures of one event, which set it
// aside, from those of NATS, which every event waits out.
func TestWhatIsUnpublishable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"over the server's max_payload", nats.ErrMaxPayload, true},
		{"over it, wrapped", fmt.Errorf("event x: %w", nats.ErrMaxPayload), true},
		{"over the stream's max_msg_size", jetstream.ErrStreamMessageExceedsMaximum, true},
		{"a subject NATS cannot take", nats.ErrBadSubject, true},
		{"no server answers", nats.ErrNoResponders, false},
		{"the connection closed", nats.ErrConnectionClosed, false},
		{"no acknowledgement in time", context.DeadlineExceeded, false},
		{"the stream missing", jetstream.ErrStreamNotFound, false},
		{"anything else", errors.New("disk full"), false},
	} {
		if got := outbox.Unpublishable(c.err); got != c.want {
			t.Errorf("%s (%v): unpublishable %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// Events are written as their GET answers are, without Go's HTML
// escaping: a string of '<' is not six times as large in its event.
func TestEventsAreNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.NATSServer{})
	text := strings.Repeat("<&>", 1000)
	if err := f.write(t, request("client", "req"), nil,
		outbox.Created(outbox.KindAsset, "asset-0", padded{N: 0, Pad: text}),
		outbox.Updated(outbox.KindAsset, "asset-0", padded{N: 0, Pad: text}, padded{N: 1, Pad: text + "<"})); err != nil {
		t.Fatal(err)
	}
	f.relay(t)
	testkit.Eventually(t, "published", 30*time.Second, func() bool { return f.unpublished(t) == 0 })
	msg := f.last(t, "asset.asset-0")
	var e outbox.Event
	if err := json.Unmarshal(msg.Data, &e); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(msg.Data), `\u003c`) || len(msg.Data) > 3*len(text)+1000 {
		t.Errorf("the update's event is %d bytes for three copies of %d bytes of text, HTML-escaped: %.80s", len(msg.Data), len(text), msg.Data)
	}
	if string(e.Changes["pad"][1]) != `"`+text+`<"` {
		t.Errorf("changes %.80s", e.Changes["pad"][1])
	}
}
