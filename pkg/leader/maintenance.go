package leader

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/assetregistry/registry/pkg/job"
)

// Task is maintenance a schema needs now and then (a prune, a purge, a
// sweep, partitions made ahead), done a bounded step at a time.
type Task struct {
	Name  string
	Every time.Duration
	// Step does one bounded step on the leader's connection and says how
	// many rows it handled and whether more wait. A step is one statement
	// or one short transaction that finishes well within the statement
	// timeout, so the rows it locks are held briefly; and the session
	// waits for no lock longer than a second (MaxLockWait), so a request
	// never queues behind a step's lock for long. Steps must be safe to
	// repeat (a leader that froze may repeat its last one).
	Step func(ctx context.Context, conn *pgx.Conn) (rows int64, more bool, err error)
}

// Drain runs the task's steps on conn until none is left, and says how
// many rows they handled: a command or a test that wants the task done now.
func (t Task) Drain(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var total int64
	for {
		rows, more, err := t.Step(ctx, conn)
		total += rows
		if err != nil || !more {
			return total, err
		}
	}
}

// MaxLockWait is the longest a maintenance step waits for a lock: a
// request that queues behind the step's own wait (a table lock waits
// behind readers, and readers behind it) waits no longer.
const MaxLockWait = time.Second

// Maintenance is a schema's tasks, done by one replica at a time (the
// holder of Lock) in bounded steps, each task on its own schedule.
type Maintenance struct {
	Lock  Lock
	Tasks []Task
	// Pause is the wait between two steps of a task (0: none), which
	// leaves the database to other work between batches.
	Pause time.Duration
}

var (
	maintenanceRows = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "registry_maintenance_rows_total",
		Help: "Rows a maintenance task handled (removed, moved, counted).",
	}, []string{"schema", "task"})
	maintenanceFailures = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "registry_maintenance_failures_total",
		Help: "Runs of a maintenance task that failed (it is tried again).",
	}, []string{"schema", "task"})
	maintenanceFailing = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "registry_maintenance_failing",
		Help: "1 while the latest run of a maintenance task failed, on the replica that leads.",
	}, []string{"schema", "task"})
	maintenanceSuccess = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "registry_maintenance_last_success_timestamp_seconds",
		Help: "When a maintenance task last ran whole (or when this replica began to lead, before its first run).",
	}, []string{"schema", "task"})
	maintenanceInterval = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "registry_maintenance_interval_seconds",
		Help: "How often a maintenance task runs.",
	}, []string{"schema", "task"})
	maintenanceDuration = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "registry_maintenance_last_duration_seconds",
		Help: "How long the latest run of a maintenance task took, all its steps.",
	}, []string{"schema", "task"})
)

// Job is the maintenance as the process's job.
func (m Maintenance) Job() job.Job {
	return job.Job{Name: m.Lock.Name, Run: func(ctx context.Context) { m.Lock.Run(ctx, m.lead) }}
}

// lead runs each task when due while this replica leads.
func (m Maintenance) lead(ctx context.Context, s *Session) error {
	logger := m.Lock.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	if err := s.Use(func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", MaxLockWait.Milliseconds()))
		return err
	}); err != nil {
		return fmt.Errorf("maintenance: %w", err)
	}
	schema := m.Lock.schema()
	// A replica that no longer leads says nothing of the tasks: the alert
	// on a failing task reads the leader's mark alone.
	defer func() {
		for _, t := range m.Tasks {
			maintenanceFailing.WithLabelValues(schema, t.Name).Set(0)
		}
		partitionsAhead.DeletePartialMatch(prometheus.Labels{"schema": schema})
	}()
	due := make([]time.Time, len(m.Tasks))
	now := time.Now()
	for i, t := range m.Tasks {
		due[i] = now
		maintenanceInterval.WithLabelValues(schema, t.Name).Set(t.Every.Seconds())
		maintenanceSuccess.WithLabelValues(schema, t.Name).Set(float64(now.Unix()))
	}
	for {
		next := 0
		for i := range m.Tasks {
			if due[i].Before(due[next]) {
				next = i
			}
		}
		if len(m.Tasks) == 0 || !sleepUntil(ctx, due[next]) {
			return nil
		}
		t := m.Tasks[next]
		err := m.run(ctx, s, schema, t)
		if ctx.Err() != nil {
			return nil
		}
		due[next] = time.Now().Add(t.Every)
		if err != nil {
			// Tried again soon rather than a whole interval later: a
			// database that was away for a moment costs one run.
			due[next] = time.Now().Add(min(t.Every, 5*time.Minute))
			level.Warn(logger).Log("msg", "a maintenance task failed; trying again", "task", t.Name, "err", err)
		}
	}
}

// run does every step of one task.
func (m Maintenance) run(ctx context.Context, s *Session, schema string, t Task) error {
	start := time.Now()
	var total int64
	for ctx.Err() == nil {
		var (
			rows int64
			more bool
		)
		err := s.Use(func(conn *pgx.Conn) error {
			var err error
			rows, more, err = t.Step(ctx, conn)
			return err
		})
		total += rows
		maintenanceRows.WithLabelValues(schema, t.Name).Add(float64(rows))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			maintenanceFailures.WithLabelValues(schema, t.Name).Inc()
			maintenanceFailing.WithLabelValues(schema, t.Name).Set(1)
			return fmt.Errorf("%s (after %d rows): %w", t.Name, total, err)
		}
		if !more {
			break
		}
		if m.Pause > 0 && !sleepUntil(ctx, time.Now().Add(m.Pause)) {
			return nil
		}
	}
	if ctx.Err() == nil {
		maintenanceFailing.WithLabelValues(schema, t.Name).Set(0)
		maintenanceSuccess.WithLabelValues(schema, t.Name).SetToCurrentTime()
		maintenanceDuration.WithLabelValues(schema, t.Name).Set(time.Since(start).Seconds())
	}
	return nil
}

// sleepUntil waits until at or ctx ends; false when ctx ended.
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
