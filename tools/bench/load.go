package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Op is one measured operation. Every row of the table, a pgx query as
// much as a call through the gateway, runs through the same loop (Measure),
// so rows differ only in what Do does.
type Op struct {
	// Prepare runs before each Do, off the clock (a cold find makes the
	// cache stale here). It still takes the worker's time, so a row with a
	// Prepare reports fewer requests per second than its latency implies.
	Prepare func(ctx context.Context, w *Worker) error
	// Do is the timed part. An error counts against the row.
	Do func(ctx context.Context, w *Worker) error
}

// Worker is one of the concurrent clients; Do gets the same one every
// call, so a worker can keep state (its connection, its counters).
type Worker struct {
	ID   int        // 0..concurrency-1
	N    int        // calls this worker has made in this row, from 0
	Rand *rand.Rand // deterministic per worker and row
	Tag  string     // unique per worker, row and round: for names that must not collide
}

// Sample is one row's measurement in one round.
type Sample struct {
	Requests int           `json:"requests"` // successful calls in the measured window
	Errors   int           `json:"errors"`   // failed calls, warm-up included
	Seconds  float64       `json:"seconds"`
	PerSec   float64       `json:"req_per_s"`
	P50      time.Duration `json:"p50_ns"`
	P99      time.Duration `json:"p99_ns"`
	Max      time.Duration `json:"max_ns"`
	// FirstError is kept so a failing row can be diagnosed.
	FirstError string `json:"first_error,omitempty"`
}

// Load is the fixed shape of every measurement in a run.
type Load struct {
	Concurrency int
	Warmup      time.Duration // run but not counted: connections, caches, JIT-like pool growth
	Duration    time.Duration
}

// histogram bounds: 1µs to 60s at 3 significant digits.
const (
	minLatency = int64(time.Microsecond)
	maxLatency = int64(time.Minute)
)

// Measure runs op from l.Concurrency workers, each calling it in a loop
// for l.Warmup and then l.Duration, and reports the measured part: the
// calls that ended within it (so a call of seconds, an upload, that began
// in the warm-up still counts where it ends). seed makes each worker's
// random choices repeatable.
func Measure(ctx context.Context, l Load, op Op, seed uint64, tag string) Sample {
	hist, s := measure(ctx, l, op, seed, tag)
	return summarize(hist, s)
}

// measure is Measure with its latencies left as a histogram, and the
// sample without the figures taken from it (summarize).
func measure(ctx context.Context, l Load, op Op, seed uint64, tag string) (*hdrhistogram.Histogram, Sample) {
	results := make([]workerResult, l.Concurrency)
	start := time.Now()
	measureFrom := start.Add(l.Warmup)
	end := measureFrom.Add(l.Duration)
	ctx, cancel := context.WithDeadline(ctx, end.Add(30*time.Second)) // a hung call cannot hang the run
	defer cancel()
	var wg sync.WaitGroup
	for i := range l.Concurrency {
		results[i].hist = hdrhistogram.New(minLatency, maxLatency, 3)
		wg.Go(func() {
			res := &results[i]
			w := &Worker{ID: i, Rand: rand.New(rand.NewPCG(seed, uint64(i))), Tag: fmt.Sprintf("%s-%d", tag, i)}
			for ; ; w.N++ {
				if op.Prepare != nil {
					if err := op.Prepare(ctx, w); err != nil {
						res.fail(err)
						if ctx.Err() != nil || time.Now().After(end) {
							return
						}
						continue
					}
				}
				t0 := time.Now()
				if t0.After(end) {
					return
				}
				err := op.Do(ctx, w)
				t1 := time.Now()
				if err != nil {
					res.fail(err) // failures count in the warm-up too: none is expected anywhere
					continue
				}
				if t1.Before(measureFrom) {
					continue // warm-up
				}
				if t1.After(end) {
					return // a call that ends after the window is not counted: the window is exact
				}
				_ = res.hist.RecordValue(max(int64(t1.Sub(t0)), minLatency))
			}
		})
	}
	wg.Wait()
	total := hdrhistogram.New(minLatency, maxLatency, 3)
	s := Sample{Seconds: l.Duration.Seconds()}
	for _, r := range results {
		total.Merge(r.hist)
		s.Errors += r.errors
		if r.firstErr != nil && s.FirstError == "" {
			s.FirstError = r.firstErr.Error()
		}
	}
	return total, s
}

// summarize completes s with the figures of its calls' latencies.
func summarize(latencies *hdrhistogram.Histogram, s Sample) Sample {
	s.Requests = int(latencies.TotalCount())
	s.PerSec = float64(s.Requests) / s.Seconds
	s.P50 = time.Duration(latencies.ValueAtQuantile(50))
	s.P99 = time.Duration(latencies.ValueAtQuantile(99))
	s.Max = time.Duration(latencies.Max())
	return s
}

// MeasureOnce makes one call of op alone, with no warm-up: a row whose one
// call takes seconds (a large upload). Its p50, p99 and max are that call.
func MeasureOnce(ctx context.Context, op Op, tag string) Sample {
	w := &Worker{Rand: rand.New(rand.NewPCG(0, 0)), Tag: tag + "-0"}
	var s Sample
	if op.Prepare != nil {
		if err := op.Prepare(ctx, w); err != nil {
			return Sample{Errors: 1, FirstError: err.Error()}
		}
	}
	t0 := time.Now()
	err := op.Do(ctx, w)
	took := time.Since(t0)
	if err != nil {
		return Sample{Errors: 1, FirstError: err.Error()}
	}
	s.Requests, s.Seconds = 1, took.Seconds()
	s.PerSec = 1 / s.Seconds
	s.P50, s.P99, s.Max = took, took, took
	return s
}

// workerResult is one worker's own record: no locks in the loop.
type workerResult struct {
	hist     *hdrhistogram.Histogram
	errors   int
	firstErr error
}

func (r *workerResult) fail(err error) {
	r.errors++
	if r.firstErr == nil {
		r.firstErr = err
	}
}
