package outbox

import "github.com/prometheus/client_golang/prometheus/testutil"

// SetAfterPublish makes the relay call hook after JetStream acknowledged a
// round and before the round is marked published.
func (r *Relay) SetAfterPublish(hook func()) { r.afterPublish = hook }

// Unpublishable is the relay's test of a publish error NATS will repeat for good.
var Unpublishable = unpublishable

// SetAsideGauge is outbox_set_aside_events of schema.
func SetAsideGauge(schema string) float64 {
	return testutil.ToFloat64(relaySetAside.WithLabelValues(schema))
}

// PendingGauge is outbox_pending_events of schema.
func PendingGauge(schema string) float64 {
	return testutil.ToFloat64(relayPending.WithLabelValues(schema))
}

// PendingEstimate is the pending gauge from a capped count and the ids'
// span; CountedExactly its cap.
var PendingEstimate = pendingEstimate

const CountedExactly = countedExactly

// SetBeforePublish makes the relay call hook after a round read its events
// and before it publishes them.
func (r *Relay) SetBeforePublish(hook func()) { r.beforePublish = hook }

// StaleRefused is outbox_stale_publishes_refused_total of schema.
func StaleRefused(schema string) float64 {
	return testutil.ToFloat64(staleRefused.WithLabelValues(schema))
}
