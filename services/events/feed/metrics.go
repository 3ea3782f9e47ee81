package feed

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The metrics of the consumer (the chart's PrometheusRule alerts on them:
// the feed lagging).
var (
	eventsStored = promauto.NewCounter(prometheus.CounterOpts{
		Name: "registry_events_stored_total",
		Help: "Events the consumer stored in the feed (redeliveries not counted).",
	})
	eventStoreLag = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "registry_events_consumer_pending",
		Help: "Messages of the stream the events consumer has not acknowledged yet.",
	})
	logAppends = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "registry_log_appends_total",
		Help: "Batches of stored events appended to the log, by where their tree was grown: ahead (while PostgreSQL inserted them) or under_lock (another writer appended since, or the batch held a redelivery).",
	}, []string{"tree"})
)
