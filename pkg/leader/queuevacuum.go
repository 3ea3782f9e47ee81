package leader

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// QueueVacuum vacuums a queue table, one whose every row is inserted once
// and deleted once by its reader (the outbox, compliance_dirty), after
// every After rows the reader took out (0: QueueVacuumAfter), at most once
// an Every (0: once a second).
//
// Autovacuum looks at a table once a minute at most (autovacuum_naptime),
// and until a vacuum clears them the deleted rows stay in the table's
// pages and its primary key, where every read of the queue's head walks
// over them: at 2,000 events a second the outbox relay's read of about a
// hundred rows took 7.8 ms instead of 0.6, and its delete 6.4 ms instead
// of 0.2, together more of PostgreSQL's time than the write that made the
// event. A vacuum of a few thousand dead rows costs milliseconds and
// blocks no writer: SKIP_LOCKED leaves it for next time rather than wait
// on a lock, and TRUNCATE false keeps the empty pages at the table's end
// for the next inserts instead of taking the exclusive lock that giving
// them back needs (which a standby would replay, cancelling its queries).
// A role that does not own the table gets PostgreSQL's warning, not an
// error, and autovacuum alone.
type QueueVacuum struct {
	Table string
	After int
	Every time.Duration

	mu    sync.Mutex
	taken int
	last  time.Time
}

// QueueVacuumAfter is how many rows a reader takes out of its queue
// between two vacuums, unless its QueueVacuum says otherwise.
const QueueVacuumAfter = 5_000

// Execer runs a statement outside a transaction: a connection or a pool.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Took counts n rows taken out of the queue, and vacuums it on db when
// that makes After since the last vacuum and Every has passed.
func (q *QueueVacuum) Took(ctx context.Context, db Execer, n int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.taken += n
	after, every := q.After, q.Every
	if after == 0 {
		after = QueueVacuumAfter
	}
	if every == 0 {
		every = time.Second
	}
	if q.taken < after || time.Since(q.last) < every {
		return nil
	}
	start := time.Now()
	if _, err := db.Exec(ctx, `VACUUM (SKIP_LOCKED, TRUNCATE false) `+pgx.Identifier{q.Table}.Sanitize()); err != nil {
		return fmt.Errorf("vacuum the queue %s: %w", q.Table, err)
	}
	queueVacuumSeconds.WithLabelValues(q.Table).Observe(time.Since(start).Seconds())
	q.taken, q.last = 0, time.Now()
	return nil
}

var queueVacuumSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "registry_queue_vacuum_duration_seconds",
	Help:    "Vacuums of a queue table (the outbox, compliance_dirty) by its reader, after every few thousand rows it took out, by duration.",
	Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5},
}, []string{"table"})
