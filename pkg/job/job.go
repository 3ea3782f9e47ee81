// Package job is the ground floor of the kit: it imports nothing of the
// registry, so what runs jobs (the outbox, the leader lock, the store
// beneath them) does not depend on HTTP or tokens.
//
// Jobs are the one way a process runs work beside answering requests:
// the outbox relay, the stream consumers and projections, the sweepers
// and pruners. Each is a Job with a name and a Run that works until its
// context ends; a service's spec.go returns its jobs (servicekit.Handlers)
// and the kit starts them all after the service is built and stops them
// all, the same way, before anything they use is closed. A job that must
// run in one replica at a time takes the schema's leader lock inside its
// Run (pkg/leader), as the relay and the events consumer do, or is one of
// the schema's maintenance tasks (leader.Task).
package job

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Failures counts the jobs that failed (panicked), by job name (the
// label is not "job", which Prometheus gives the scrape target): each failure is
// also in the log with its panic, and the job is started again after
// RestartAfter. A job that keeps failing keeps the process unready
// (Running.Ready), as dskit's services report a failed service.
var Failures = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "registry_job_failures_total",
	Help: "Jobs (relays, consumers, sweepers) that failed with a panic and were started again.",
}, []string{"name"})

// RestartAfter is how long a failed job waits before it runs again: long
// enough not to spin on a fault that every run meets, short enough that a
// passing fault costs little.
var RestartAfter = 5 * time.Second

// Job is work a process does beside answering requests.
type Job struct {
	// Name says what it is in the logs ("outbox relay", "documents
	// sweeper").
	Name string
	// Run works until ctx ends. It may return earlier (a consumer with
	// nothing to follow): the other jobs go on.
	Run func(ctx context.Context)
}

// Every is the job that runs tick at once and then every interval (a
// sweeper, a pruner): a tick that takes longer than interval delays the
// next rather than overlapping it.
func Every(name string, interval time.Duration, tick func(ctx context.Context)) Job {
	return Job{Name: name, Run: func(ctx context.Context) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}}
}

// Later is Every whose first tick comes one interval after the job starts
// (an audit that need not run at start).
func Later(name string, interval time.Duration, tick func(ctx context.Context)) Job {
	return Job{Name: name, Run: func(ctx context.Context) {
		Ticks(ctx, interval, func(ctx context.Context) bool { tick(ctx); return true })
	}}
}

// Ticks calls tick every interval, the first time one interval from now,
// until ctx ends or tick returns false: the loop of a poller or a
// heartbeat that runs beside other work rather than as a job.
func Ticks(ctx context.Context, interval time.Duration, tick func(ctx context.Context) bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !tick(ctx) {
			return
		}
	}
}

// StartJobs runs jobs until the returned stop is called: Start without
// the readiness report.
func StartJobs(logger log.Logger, jobs ...Job) (stop func()) { return Start(logger, jobs...).Stop }

// Running are started jobs.
type Running struct {
	stop func()

	mu     sync.Mutex
	failed map[string]error // jobs that failed and wait to run again
}

// Ready is nil unless a job failed and has not run again yet: the
// process's readiness check, so an orchestrator sees a replica whose relay
// or consumer is down as the alert does.
func (r *Running) Ready(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failed) == 0 {
		return nil
	}
	names := make([]string, 0, len(r.failed))
	for name := range r.failed {
		names = append(names, name)
	}
	sort.Strings(names)
	return fmt.Errorf("jobs failed and wait to run again: %s", strings.Join(names, ", "))
}

// Stop cancels the jobs' context and returns once every one has returned.
func (r *Running) Stop() { r.stop() }

// Start runs jobs until Stop, which cancels their context and returns
// once every one of them has returned. They run as one oklog/run group:
// the group ends only by Stop, since a job that returns early waits for
// the others rather than interrupting them. A job that panics is
// recovered, counted (registry_job_failures_total), logged, reported by
// Ready, and run again after RestartAfter: one job's fault does not take
// the process's other work down with it.
func Start(logger log.Logger, jobs ...Job) *Running {
	r := &Running{failed: map[string]error{}}
	if len(jobs) == 0 {
		r.stop = func() {}
		return r
	}
	ctx, cancel := context.WithCancel(context.Background())
	var g run.Group
	for _, job := range jobs {
		g.Add(func() error {
			level.Debug(logger).Log("msg", "job started", "job", job.Name)
			for ctx.Err() == nil {
				err := r.runOnce(ctx, job)
				if err == nil {
					break
				}
				Failures.WithLabelValues(job.Name).Inc()
				level.Error(logger).Log("msg", "job failed; it runs again after a pause", "job", job.Name, "err", err, "pause", RestartAfter)
				r.setFailed(job.Name, err)
				select {
				case <-ctx.Done():
				case <-time.After(RestartAfter):
				}
				r.setFailed(job.Name, nil)
			}
			<-ctx.Done()
			level.Debug(logger).Log("msg", "job stopped", "job", job.Name)
			return nil
		}, func(error) { cancel() })
	}
	stopped := make(chan struct{})
	var once sync.Once
	g.Add(func() error { <-stopped; return nil }, func(error) { once.Do(func() { close(stopped) }) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Run() // every actor returns nil
	}()
	r.stop = func() {
		once.Do(func() { close(stopped) })
		<-done
		cancel() // the group's interrupts have cancelled ctx already
	}
	return r
}

// runOnce runs job until it returns, turning a panic into an error.
func (r *Running) runOnce(ctx context.Context, job Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	job.Run(ctx)
	return nil
}

func (r *Running) setFailed(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.failed, name)
		return
	}
	r.failed[name] = err
}
