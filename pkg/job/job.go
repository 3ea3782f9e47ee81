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
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/oklog/run"
)

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
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				tick(ctx)
			}
		}
	}}
}

// StartJobs runs jobs until the returned stop is called, which cancels
// their context and returns once every one of them has returned. They run
// as one oklog/run group: the group ends only by stop, since a job that
// returns early waits for the others rather than interrupting them.
func StartJobs(logger log.Logger, jobs ...Job) (stop func()) {
	if len(jobs) == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var g run.Group
	for _, job := range jobs {
		g.Add(func() error {
			level.Debug(logger).Log("msg", "job started", "job", job.Name)
			job.Run(ctx)
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
	return func() {
		once.Do(func() { close(stopped) })
		<-done
		cancel() // the group's interrupts have cancelled ctx already
	}
}
