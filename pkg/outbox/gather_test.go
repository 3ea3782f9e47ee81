package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/outbox"
)

// TestWokenRelayGathersARoundIntervalOfWrites: a write after a quiet spell
// waits only the few milliseconds that let its burst commit; writes that
// keep waking the relay are gathered into rounds 50 ms apart, so a busy
// outbox costs a round (a read, a delete, the events service's
// transaction) per 50 ms, not per write.
func TestWokenRelayGathersARoundIntervalOfWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		sinceLast time.Duration
		want      time.Duration
	}{
		{"the previous round just began", 0, 50 * time.Millisecond},
		{"the previous round began 8 ms ago", 8 * time.Millisecond, 42 * time.Millisecond},
		{"less of the interval is left than the shortest wait", 48 * time.Millisecond, 5 * time.Millisecond},
		{"after a quiet spell", time.Second, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outbox.Gather(tc.sinceLast); got != tc.want {
				t.Errorf("Gather(%v) = %v, want %v", tc.sinceLast, got, tc.want)
			}
		})
	}
}

// TestCollectTakesABatch: a reader's batch is what arrived within the
// wait, or a full batch as soon as it is full (a backlog is not held back
// by the wait), or what it has when its context ends; always in the order
// the messages arrived.
func TestCollectTakesABatch(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		queued int
		max    int
		wait   time.Duration
		want   int
	}{
		{"what arrived within the wait", context.Background(), 3, 10, time.Millisecond, 4},
		{"a full batch, without waiting", context.Background(), 20, 10, time.Hour, 10},
		{"nothing more arrived", context.Background(), 0, 10, time.Millisecond, 1},
		{"the context ended", cancelled, 0, 10, time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arrived := make(chan int, tc.queued)
			for i := range tc.queued {
				arrived <- i + 1
			}
			got := outbox.Collect(tc.ctx, 0, arrived, tc.max, tc.wait)
			if len(got) != tc.want {
				t.Fatalf("Collect gave %d messages %v, want %d", len(got), got, tc.want)
			}
			for i, m := range got {
				if m != i {
					t.Fatalf("Collect gave %v, not in the order they arrived", got)
				}
			}
			if left := len(arrived); left != tc.queued-(tc.want-1) {
				t.Errorf("%d messages left queued, want %d", left, tc.queued-(tc.want-1))
			}
		})
	}
}
