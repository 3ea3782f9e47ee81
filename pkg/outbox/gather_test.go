package outbox_test

import (
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
