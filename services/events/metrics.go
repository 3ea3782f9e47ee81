package events

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The metrics of the consumer and of the log (the chart's PrometheusRule
// alerts on them: the feed lagging, the log not signed or not matching).
var (
	eventsStored = promauto.NewCounter(prometheus.CounterOpts{
		Name: "registry_events_stored_total",
		Help: "Events the consumer stored in the feed (redeliveries not counted).",
	})
	eventStoreLag = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "registry_events_consumer_pending",
		Help: "Messages of the stream the events consumer has not acknowledged yet.",
	})
	logSize = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "registry_log_leaves",
		Help: "Leaves of the transparency log (reported by the leading replica).",
	})
	logAppends = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "registry_log_appends_total",
		Help: "Batches of stored events appended to the log, by where their tree was grown: ahead (while PostgreSQL inserted them) or under_lock (another writer appended since, or the batch held a redelivery).",
	}, []string{"tree"})
	checkpointSize = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "registry_log_checkpoint_leaves",
		Help: "Leaves of the latest signed checkpoint (reported by the leading replica).",
	})
	auditProblems = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "registry_log_audit_mismatches",
		Help: "What the last self-audit found stored that does not match a signed checkpoint (0: everything matches).",
	})
	auditTime = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "registry_log_audit_timestamp_seconds",
		Help: "When the last self-audit of the log completed (Unix seconds).",
	})
	checkpointTime = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "registry_log_checkpoint_timestamp_seconds",
		Help: "When the leading replica last signed a new checkpoint (Unix seconds).",
	})
)

func observeAudit(r AuditReport) {
	auditProblems.Set(float64(len(r.Problems)))
	auditTime.SetToCurrentTime()
}
