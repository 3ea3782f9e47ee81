package feed

import "github.com/assetregistry/registry/pkg/telemetry"

// The metrics of the consumer (the chart's PrometheusRule alerts on them:
// the feed lagging).
var (
	eventsStored = telemetry.NewCounter("registry_events_stored_total",
		"Events the consumer stored in the feed (redeliveries not counted).")
	eventStoreLag = telemetry.NewGauge("registry_events_consumer_pending",
		"Messages of the stream the events consumer has not acknowledged yet.")
	logAppends = telemetry.NewCounterVec("registry_log_appends_total",
		"Batches of stored events appended to the log, by where their tree was grown: ahead (while PostgreSQL inserted them) or under_lock (another writer appended since, or the batch held a redelivery).", "tree")
)
