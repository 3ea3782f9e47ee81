package telemetry

import (
	"maps"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// requestSeries finds the request counter and latency histogram of a
// route, method and status. Every call of every process records both, and
// WithLabelValues hashes the three labels and takes the vector's read
// lock twice per call (and formats the status) to find series that, once
// made, never change. They are kept here in a map read without a lock: a
// new combination copies the map under a mutex, which happens a few
// hundred times in a process's life, bounded by maxRequestSeries.
type requestSeries struct {
	current atomic.Pointer[map[seriesKey]requestMetrics]
	mu      sync.Mutex // serialises the copies
}

type seriesKey struct {
	route, method string
	status        int
}

type requestMetrics struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// maxRequestSeries bounds the map; past it series are looked up in the
// vectors as before (routes are patterns and methods few, so only a
// client sending odd methods gets there).
const maxRequestSeries = 4096

var requestSeriesCache requestSeries

func (s *requestSeries) of(route, method string, status int) requestMetrics {
	key := seriesKey{route, method, status}
	if m := s.current.Load(); m != nil {
		if found, ok := (*m)[key]; ok {
			return found
		}
	}
	code := strconv.Itoa(status)
	found := requestMetrics{count: requests.WithLabelValues(route, method, code), latency: latency.WithLabelValues(route, method, code)}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.current.Load()
	if old != nil && len(*old) >= maxRequestSeries {
		return found
	}
	next := map[seriesKey]requestMetrics{}
	if old != nil {
		next = maps.Clone(*old)
	}
	next[key] = found
	s.current.Store(&next)
	return found
}
