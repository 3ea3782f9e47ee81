package outbox_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/tools/testkit"
)

// TestStaleLeaderIsFencedOut freezes the leading relay between reading the
// outbox and publishing, for longer than its silence (PostgreSQL ends its
// session) and than the stream's duplicate window (JetStream no longer
// drops a second copy). Another relay takes over and publishes every
// event. When the frozen relay wakes, its publish is refused: nothing is
// in the stream twice or out of order, and the refusal is counted.
func TestStaleLeaderIsFencedOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.NATSServer{})
	f.cfg.LeaderSilence = time.Second
	f.cfg.DuplicateWindow = time.Second
	const subjects, changes = 3, 4
	write := func(n int) {
		if err := f.writeRound(t, subjects, n); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := f.relay(t)
	testkit.Eventually(t, "the first relay leading", 10*time.Second, func() bool { return old.Ready(t.Context()) == nil })
	frozen, wake := make(chan struct{}), make(chan struct{})
	held := false
	old.SetBeforePublish(func() {
		if !held {
			held = true
			close(frozen)
			<-wake
		}
	})
	write(0)
	<-frozen
	refusedBefore := outbox.StaleRefused(f.schema)

	f.relay(t) // takes over once PostgreSQL ends the frozen leader's session
	for n := 1; n < changes; n++ {
		write(n)
	}
	testkit.Eventually(t, "every event published by the new leader", 30*time.Second, func() bool { return f.unpublished(t) == 0 })
	checkStream(t, f.streamed(t), subjects, changes)
	time.Sleep(2 * f.cfg.DuplicateWindow) // a second copy would now be stored

	close(wake)
	deadline := time.Now().Add(10 * time.Second)
	for outbox.StaleRefused(f.schema) == refusedBefore && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // what it might still publish
	checkStream(t, f.streamed(t), subjects, changes)
	if outbox.StaleRefused(f.schema) == refusedBefore {
		t.Error("the woken leader's publish was not refused (outbox_stale_publishes_refused_total unchanged)")
	}
}

// TestLeaderFencesAgainAfterItsFenceIsLost purges the stream under a
// leading relay (its fence goes with it, as when the stream is recreated):
// its next publish is refused, it stands down and fences again, and every
// event is still published once, in order.
func TestLeaderFencesAgainAfterItsFenceIsLost(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.NATSServer{})
	relay, _ := f.relay(t)
	write := func(n int) {
		c := outbox.Updated(outbox.KindAsset, "asset-0", counter{n - 1}, counter{n})
		if n == 0 {
			c = outbox.Created(outbox.KindAsset, "asset-0", counter{0})
		}
		if err := f.write(t, request("client", "req"), nil, c); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	testkit.Eventually(t, "the first event published", 30*time.Second, func() bool { return f.unpublished(t) == 0 })
	if err := f.stream(t).Purge(t.Context()); err != nil {
		t.Fatal(err)
	}
	refusedBefore := outbox.StaleRefused(f.schema)
	for n := 1; n < 5; n++ {
		write(n)
	}
	testkit.Eventually(t, "the later events published after fencing again", 30*time.Second, func() bool { return f.unpublished(t) == 0 })
	if outbox.StaleRefused(f.schema) == refusedBefore {
		t.Error("the publish without a fence was not refused")
	}
	testkit.Eventually(t, "the relay ready", 10*time.Second, func() bool { return relay.Ready(t.Context()) == nil })
	events := f.streamed(t)
	if len(events) != 4 {
		t.Fatalf("%d events in the purged stream, want the 4 written after the purge", len(events))
	}
	for i, e := range events {
		var c counter
		if err := json.Unmarshal(e.Data, &c); err != nil || c.N != i+1 {
			t.Errorf("event %d: n=%d (%v), want %d", i, c.N, err, i+1)
		}
	}
}
