package outbox_test

import (
	"testing"

	"github.com/assetregistry/registry/pkg/outbox"
)

// TestPendingEstimate: the gauge is the count below the cap, the span of
// the waiting ids at or past it, and never less than what was counted.
func TestPendingEstimate(t *testing.T) {
	t.Parallel()
	id := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name        string
		counted     int64
		first, last *int64
		want        int64
	}{
		{"nothing waits", 0, nil, nil, 0},
		{"a few, counted", 12, id(100), id(5000), 12},
		{"one short of the cap, counted", outbox.CountedExactly - 1, id(1), id(900_000), outbox.CountedExactly - 1},
		{"a backlog past the cap: the ids' span", outbox.CountedExactly, id(1_001), id(501_000), 500_000},
		{"a span narrower than the count (ids reused cannot be): the count", outbox.CountedExactly, id(1), id(10), outbox.CountedExactly},
		{"the last id gone between the reads: the count", outbox.CountedExactly, id(1), nil, outbox.CountedExactly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outbox.PendingEstimate(tc.counted, tc.first, tc.last); got != tc.want {
				t.Fatalf("pendingEstimate(%d, %v, %v) = %d, want %d", tc.counted, tc.first, tc.last, got, tc.want)
			}
		})
	}
}
