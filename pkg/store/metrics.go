package store

import (
	"sync"
	"weak"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// poolMetrics exports pgxpool.Stat of every pool the process opened, per
// schema, so that pool saturation (requests queueing for a connection) can
// be alerted on: acquired against max connections, and how often and how
// long acquires waited for an empty pool.
//
// Pools are held weakly: a pool that is closed and dropped disappears from
// the metrics; a closed pool still referenced somewhere reports zero
// connections and its max until it is collected. Pools of one schema in one
// process (the migrate-then-serve sequence, tests) are summed, which is what
// "this process's connections to that schema" means.
type poolMetrics struct {
	mu    sync.Mutex
	pools []trackedPool

	acquired, idle, total, maxConns                        *prometheus.Desc
	acquires, emptyAcquires, canceledAcquires              *prometheus.Desc
	acquireSeconds, emptyAcquireWaitSeconds, newConnsTotal *prometheus.Desc
}

type trackedPool struct {
	schema string
	pool   weak.Pointer[pgxpool.Pool]
}

var (
	metrics         = newPoolMetrics()
	registerMetrics sync.Once
)

func newPoolMetrics() *poolMetrics {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("pgxpool_"+name, help, []string{"schema"}, nil)
	}
	return &poolMetrics{
		acquired:                desc("acquired_conns", "Connections currently checked out of the pool."),
		idle:                    desc("idle_conns", "Idle connections in the pool."),
		total:                   desc("total_conns", "Open connections (acquired, idle and being constructed)."),
		maxConns:                desc("max_conns", "The pool's maximum size (database.max-conns)."),
		acquires:                desc("acquire_count_total", "Successful acquires."),
		emptyAcquires:           desc("empty_acquire_count_total", "Acquires that had to wait because no idle connection was available."),
		canceledAcquires:        desc("canceled_acquire_count_total", "Acquires abandoned because their context ended (often: waited too long)."),
		acquireSeconds:          desc("acquire_duration_seconds_total", "Time spent in successful acquires."),
		emptyAcquireWaitSeconds: desc("empty_acquire_wait_seconds_total", "Time spent waiting by acquires that found the pool empty."),
		newConnsTotal:           desc("new_conns_total", "Connections opened."),
	}
}

// track adds pool to the exported metrics, registering the collector with
// the default registry (the one the metrics port serves) on first use.
func (m *poolMetrics) track(schema string, pool *pgxpool.Pool) {
	registerMetrics.Do(func() { prometheus.MustRegister(m) })
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pools = append(m.pools, trackedPool{schema: schema, pool: weak.Make(pool)})
}

// Describe implements prometheus.Collector.
func (m *poolMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.acquired, m.idle, m.total, m.maxConns, m.acquires,
		m.emptyAcquires, m.canceledAcquires, m.acquireSeconds, m.emptyAcquireWaitSeconds, m.newConnsTotal} {
		ch <- d
	}
}

type poolSums struct {
	acquired, idle, total, max          float64
	acquires, empty, canceled, newConns float64
	acquireSeconds, emptyWaitSeconds    float64
}

// Collect implements prometheus.Collector.
func (m *poolMetrics) Collect(ch chan<- prometheus.Metric) {
	sums := map[string]*poolSums{}
	var order []string
	m.mu.Lock()
	live := m.pools[:0]
	for _, t := range m.pools {
		pool := t.pool.Value()
		if pool == nil {
			continue
		}
		live = append(live, t)
		s := sums[t.schema]
		if s == nil {
			s = &poolSums{}
			sums[t.schema] = s
			order = append(order, t.schema)
		}
		st := pool.Stat()
		s.acquired += float64(st.AcquiredConns())
		s.idle += float64(st.IdleConns())
		s.total += float64(st.TotalConns())
		s.max += float64(st.MaxConns())
		s.acquires += float64(st.AcquireCount())
		s.empty += float64(st.EmptyAcquireCount())
		s.canceled += float64(st.CanceledAcquireCount())
		s.newConns += float64(st.NewConnsCount())
		s.acquireSeconds += st.AcquireDuration().Seconds()
		s.emptyWaitSeconds += st.EmptyAcquireWaitTime().Seconds()
	}
	clear(m.pools[len(live):])
	m.pools = live
	m.mu.Unlock()

	for _, schema := range order {
		s := sums[schema]
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, schema)
		}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, schema)
		}
		gauge(m.acquired, s.acquired)
		gauge(m.idle, s.idle)
		gauge(m.total, s.total)
		gauge(m.maxConns, s.max)
		counter(m.acquires, s.acquires)
		counter(m.emptyAcquires, s.empty)
		counter(m.canceledAcquires, s.canceled)
		counter(m.newConnsTotal, s.newConns)
		counter(m.acquireSeconds, s.acquireSeconds)
		counter(m.emptyAcquireWaitSeconds, s.emptyWaitSeconds)
	}
}
