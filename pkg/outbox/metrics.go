package outbox

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The relay's metrics, by schema (one outbox per service). Only the
// leading replica reports pending events; standbys report 0, so max()
// over replicas is the outbox's state.
var (
	relayPending = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "outbox_pending_events",
		Help: "Events recorded in the outbox and not yet published to JetStream, besides those set aside (reported by the leading relay; exact up to 10,000, past that the span of their ids).",
	}, []string{"schema"})
	relaySetAside = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "outbox_set_aside_events",
		Help: "Events set aside because NATS refuses them for good (too large), with the later events of their subjects; they wait for an operator's replay (reported by the leading relay).",
	}, []string{"schema"})
	setAsideTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "outbox_set_aside_total",
		Help: "Events NATS refused for good and the relay set aside (not counting the later events of their subjects held behind them).",
	}, []string{"schema"})
	relayOldest = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "outbox_oldest_pending_seconds",
		Help: "Age of the oldest unpublished event (0 when none waits).",
	}, []string{"schema"})
	published = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "outbox_published_total",
		Help: "Events published to JetStream and acknowledged.",
	}, []string{"schema"})
	publishErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "outbox_publish_errors_total",
		Help: "Relay rounds that could not publish (NATS down, no acknowledgement).",
	}, []string{"schema"})
	staleRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "outbox_stale_publishes_refused_total",
		Help: "Publishes (events or fences) JetStream refused because another replica had taken the lead since this one fenced: a stale leader woken (pkg/outbox fence.go).",
	}, []string{"schema"})
	leaderEpoch = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "outbox_relay_epoch",
		Help: "The leading relay's epoch: the stream sequence of its fence message.",
	}, []string{"schema"})
	relayLeader = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "outbox_relay_leader",
		Help: "1 on the replica whose relay publishes the schema's outbox.",
	}, []string{"schema"})
)
