package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The constructors a component declares its metrics with: each registers
// on the default registry (served by MetricsHandler) and, like promauto,
// panics at start-up when a name is taken twice. A metric that needs more
// than a name, a help and labels (buckets, constant labels) is declared
// with promauto itself.

// NewCounter registers a counter.
func NewCounter(name, help string) prometheus.Counter {
	return promauto.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// NewCounterVec registers a counter by labels.
func NewCounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return promauto.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// NewGauge registers a gauge.
func NewGauge(name, help string) prometheus.Gauge {
	return promauto.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// NewGaugeVec registers a gauge by labels.
func NewGaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return promauto.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// CacheBytes is what a process's bounded in-memory caches hold, by cache:
// memory that grows with use up to the cache's bound, as a log or a key
// space the cache covers grows, and is no leak. A cache reports its own
// bytes here so that whoever watches the process's resident set (the
// soak's verdict, docs/testing.md) can tell the two apart.
var CacheBytes = NewGaugeVec("registry_cache_bytes",
	"Bytes a bounded in-memory cache of this process holds (its values and their entries), by cache.", "cache")
