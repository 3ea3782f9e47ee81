package job_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus/testutil"

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

// A job that panics is recovered and run again; until it runs again the
// process is not ready, and the failure is counted; the other jobs go on.
func TestFailedJobIsReportedAndRunAgain(t *testing.T) {
	saved := job.RestartAfter
	job.RestartAfter = 200 * time.Millisecond
	t.Cleanup(func() { job.RestartAfter = saved })
	var runs atomic.Int32
	ran := make(chan struct{}, 2)
	flaky := job.Job{Name: "flaky", Run: func(ctx context.Context) {
		ran <- struct{}{}
		if runs.Add(1) == 1 {
			panic("the first run breaks")
		}
		<-ctx.Done()
	}}
	var steady atomic.Bool
	calm := job.Job{Name: "calm", Run: func(ctx context.Context) { steady.Store(true); <-ctx.Done(); steady.Store(false) }}
	running := job.Start(log.NewNopLogger(), flaky, calm)
	defer running.Stop()
	<-ran
	deadline := time.Now().Add(5 * time.Second)
	for running.Ready(t.Context()) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the failed job was never reported")
		}
		time.Sleep(time.Millisecond)
	}
	if err := running.Ready(t.Context()); err == nil || !strings.Contains(err.Error(), "flaky") {
		t.Fatalf("Ready = %v, want it to name the failed job", err)
	}
	if got := testutil.ToFloat64(job.Failures.WithLabelValues("flaky")); got < 1 {
		t.Fatalf("registry_job_failures_total{job=flaky} = %v, want at least 1", got)
	}
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the failed job did not run again")
	}
	for running.Ready(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatal("still unready after the job ran again")
		}
		time.Sleep(time.Millisecond)
	}
	if !steady.Load() {
		t.Fatal("the other job stopped when one failed")
	}
}
