package job_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/assetregistry/registry/pkg/job"
)

// TestJobsStopTogether: stop returns only once every job has returned,
// and a job that returns early leaves the others running.
func TestJobsStopTogether(t *testing.T) {
	var finished atomic.Int32
	started := make(chan string, 3)
	long := func(name string) job.Job {
		return job.Job{Name: name, Run: func(ctx context.Context) {
			started <- name
			<-ctx.Done()
			finished.Add(1)
		}}
	}
	early := job.Job{Name: "early", Run: func(context.Context) { started <- "early" }}
	stop := job.StartJobs(log.NewNopLogger(), long("a"), early, long("b"))
	for range 3 {
		<-started
	}
	if n := finished.Load(); n != 0 {
		t.Fatalf("%d long jobs ended before stop, after one job returned early", n)
	}
	stop()
	if n := finished.Load(); n != 2 {
		t.Fatalf("stop returned with %d of 2 long jobs ended", n)
	}
	stop() // a second stop is harmless
}

// TestEvery: the tick runs at once (a sweeper sweeps at start), and
// never again once the job has stopped.
func TestEvery(t *testing.T) {
	var ticks atomic.Int32
	first := make(chan struct{}, 1)
	stop := job.StartJobs(log.NewNopLogger(), job.Every("sweeper", time.Hour, func(context.Context) {
		if ticks.Add(1) == 1 {
			first <- struct{}{}
		}
	}))
	<-first
	stop()
	if n := ticks.Load(); n != 1 {
		t.Fatalf("ticks = %d, want 1 (at start; the hour has not passed)", n)
	}
}

func TestNoJobs(t *testing.T) {
	job.StartJobs(log.NewNopLogger())() // nothing to start, nothing to wait for
}

// TestLater: the first tick waits for the interval, then comes.
func TestLater(t *testing.T) {
	ticked := make(chan struct{}, 1)
	stop := job.StartJobs(log.NewNopLogger(), job.Later("auditor", time.Millisecond, func(context.Context) {
		select {
		case ticked <- struct{}{}:
		default:
		}
	}))
	<-ticked
	stop()
}
