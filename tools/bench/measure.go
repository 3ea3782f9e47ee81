package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// RowSample is a Sample with what the processes reported around it.
type RowSample struct {
	Sample
	// CacheHitRate is the share of find-cache lookups that hit, counted
	// by the services themselves during the row; absent when none looked.
	CacheHitRate *float64 `json:"cache_hit_rate,omitempty"`
	// FailOpen counts the calls the gateways let through without a
	// rate-limit check (Redis slower than rate-limit.timeout): a row
	// with limits on that has many did not measure the limiter whole.
	FailOpen float64 `json:"rate_limit_fail_open,omitempty"`
	// PeakRSSMiB is each process's largest resident set seen during the
	// row (sampled every 100 ms), StartRSSMiB its resident set as the row
	// began.
	PeakRSSMiB  map[string]float64 `json:"peak_rss_mib"`
	StartRSSMiB map[string]float64 `json:"start_rss_mib"`
	// LoadAverage is the machine's 1-minute load average after the row: how
	// busy the shared machine was.
	LoadAverage float64 `json:"load_average_1m"`
	// Bytes is the payload of one call and MiBPerSec the rate it moved
	// at, for rows that move files.
	Bytes     int64   `json:"bytes,omitempty"`
	MiBPerSec float64 `json:"mib_per_s,omitempty"`
	// EventsPerSec is the change events the row's calls had published per
	// second (the relay's row).
	EventsPerSec float64 `json:"events_per_s,omitempty"`
	// CPUPerRequestMs is the CPU time each process spent in the measured
	// window divided by the requests counted in it (in ms), the load
	// generator and the datastores included: with every row saturating
	// the machine, a row's rate is the inverse of their sum, so this says
	// where a request's cost lies.
	CPUPerRequestMs map[string]float64 `json:"cpu_per_request_ms,omitempty"`
	// QuietAfterS is how long the row waited, before it began, for the
	// work earlier rows left behind (events still to relay and store, a
	// projection catching up) to end; quietLimit when it never did.
	QuietAfterS float64 `json:"quiet_after_s"`
	// QuietBusiest names the processes that kept the machine from being
	// quiet in the last window waited, with the cores each used, when the
	// row waited at all: the catch-up a row leaves, or work that never
	// stops on an idle stack.
	QuietBusiest string `json:"quiet_busiest,omitempty"`
}

// recountWindow is the longest window a row that counted no call in its
// window is measured again with (measureRows).
const recountWindow = 5 * time.Second

// shortMinWindow caps a row's MinWindow in the short run.
const shortMinWindow = 400 * time.Millisecond

// measureRows measures a row alone (measureWindow), or a row and its
// Paired partner call by call in turns (measureCallsInTurn); it gives a
// sample for each row it was given.
func (e *Env) measureRows(ctx context.Context, o Options, rows []Row, ops []Op, seed uint64, tag, profileDir string, profile bool) []RowSample {
	samples := make([]RowSample, len(rows))
	failed := func(err error) []RowSample {
		for i := range samples {
			samples[i] = RowSample{Sample: Sample{Errors: 1, FirstError: "before the row: " + err.Error()}}
		}
		return samples
	}
	prepare := func() error {
		for _, r := range rows {
			if r.Before != nil {
				if err := r.Before(ctx, e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := prepare(); err != nil {
		return failed(err)
	}
	var quietAfter time.Duration
	var busiest string
	if !o.Short {
		// The short run (make test) is a smoke run on a machine busy
		// with other suites: its figures are not compared with goals,
		// so waiting for a quiet machine (half a second a row at least)
		// would only lengthen every test run.
		quietAfter, busiest = e.waitQuiet(ctx)
	}
	before, failOpenBefore := e.cacheCounts(ctx)
	start := e.readRSS()
	sampler := e.sampleRSS()
	var profiled sync.WaitGroup
	if profile { // a pair's profiles, under its first row's name, hold both
		dir := filepath.Join(profileDir, slug(rows[0].Name))
		profiled.Go(func() { e.profile(ctx, dir, o.Load) })
	}
	if rows[0].Once {
		samples[0].Sample = MeasureOnce(ctx, ops[0], tag)
	} else {
		load := o.Load
		for _, r := range rows {
			window := r.MinWindow
			if o.Short {
				// A slow row's long window buys a steady figure; the short
				// run only needs some calls to end without error, and a
				// window that counted none is measured again, longer.
				window = min(window, shortMinWindow)
			}
			load.Duration, load.Warmup = max(load.Duration, window), max(load.Warmup, window/4)
		}
		if c := rows[0].Clients; c > 0 {
			load.Concurrency = c
		}
		measureIn := func() []measured { return []measured{e.measureWindow(ctx, load, ops[0], seed, tag)} }
		if len(ops) > 1 {
			measureIn = func() []measured { return e.measureCallsInTurn(ctx, load, ops, seed, tag) }
		}
		for {
			for i, m := range measureIn() {
				samples[i].Sample, samples[i].CPUPerRequestMs = m.Sample, perRequest(m.cpu, m.Requests)
			}
			// A short window (QUICK=1's 300 ms) in which no call of a
			// row ended, on a machine busy with other test suites, says
			// nothing about the row: it is measured again, four times as
			// long, up to recountWindow. A row that fails is not.
			if !slices.ContainsFunc(samples, countedNothing) || load.Duration >= recountWindow {
				break
			}
			load.Duration = min(4*load.Duration, recountWindow)
			load.Warmup = max(load.Warmup, load.Duration/4)
			if err := prepare(); err != nil { // the rows' state again (a cold cache)
				return failed(err)
			}
		}
	}
	profiled.Wait()
	peak := sampler()
	after, failOpenAfter := e.cacheCounts(ctx)
	cacheHitRate := hitRate(before, after)
	load := loadAverage()
	for i, r := range rows {
		s := &samples[i]
		s.PeakRSSMiB, s.StartRSSMiB = peak, start
		s.QuietAfterS, s.QuietBusiest = quietAfter.Seconds(), busiest
		if r.Events > 0 {
			s.EventsPerSec = math.Round(s.PerSec * float64(r.Events))
		}
		if r.Bytes != nil {
			s.Bytes = r.Bytes(e)
			s.MiBPerSec = math.Round(s.PerSec*float64(s.Bytes)/(1<<20)*10) / 10
		}
		s.FailOpen = failOpenAfter - failOpenBefore
		s.CacheHitRate = cacheHitRate
		s.LoadAverage = load
		if r.After != nil {
			if err := r.After(ctx, e); err != nil && s.FirstError == "" {
				s.Errors++
				s.FirstError = "after the row: " + err.Error()
			}
		}
	}
	return samples
}

func countedNothing(s RowSample) bool { return s.Requests == 0 && s.Errors == 0 }

// hitRate is the share of the find cache's lookups between two counts
// that hit; nil when none looked.
func hitRate(before, after map[string]float64) *float64 {
	var hits, lookups float64
	for result, n := range after {
		d := n - before[result]
		lookups += d
		if result == "hit" {
			hits += d
		}
	}
	if lookups == 0 {
		return nil
	}
	rate := hits / lookups
	return &rate
}

// inTurns is the order in which a pair's calls run, over and over: each
// op as often first as last, so that what grows or warms as they go (the
// feed's partition, the buffers) favours neither.
var inTurns = []int{0, 1, 1, 0}

// measured is one row's part of a measurement: its sample and the CPU
// every process spent in it.
type measured struct {
	Sample
	cpu map[string]float64
}

// measureWindow measures op for l, with the CPU every process spent in its
// window.
func (e *Env) measureWindow(ctx context.Context, l Load, op Op, seed uint64, tag string) measured {
	window := e.cpuDuring(time.Now().Add(l.Warmup), l.Duration)
	hist, s := measure(ctx, l, op, seed, tag)
	return measured{Sample: summarize(hist, s), cpu: window()}
}

// measureCallsInTurn measures two ops of one client each, call by call
// in turns (inTurns, over and over): after l.Warmup of such calls, until
// their calls have taken l.Duration each. Each op's rate is its calls over
// the time they took, and the CPU every process spent during them is its
// own (a snapshot at each change of op). Two copies of one row (a store
// of 256 events, about 10 ms a call) measured against each other in
// slices of a window, A B B A, came out 0.91 to 1.19 of each other
// from round to round with one client, 0.80 to 1.00 with 16, on a shared
// two-core machine: what the machine went through (the disk's flushes, a
// neighbour) fell on one slice and not on the other. Call by call, every
// change meets both within two calls: 1.00 to 1.04.
func (e *Env) measureCallsInTurn(ctx context.Context, l Load, ops []Op, seed uint64, tag string) []measured {
	out := make([]measured, len(ops))
	hists := make([]*hdrhistogram.Histogram, len(ops))
	workers := make([]*Worker, len(ops))
	// busy is the time of each op's counted calls, spent of all its
	// calls: a failed one counts no call, and still ends the measurement.
	busy, spent := make([]time.Duration, len(ops)), make([]time.Duration, len(ops))
	for i := range ops {
		hists[i] = hdrhistogram.New(minLatency, maxLatency, 3)
		out[i].cpu = map[string]float64{}
		workers[i] = &Worker{Rand: rand.New(rand.NewPCG(seed, uint64(i))), Tag: fmt.Sprintf("%s.%d-0", tag, i)}
	}
	ctx, cancel := context.WithTimeout(ctx, l.Warmup+time.Duration(len(ops))*l.Duration+time.Minute) // a hung call cannot hang the run
	defer cancel()
	fail := func(i int, err error) {
		out[i].Errors++
		if out[i].FirstError == "" {
			out[i].FirstError = err.Error()
		}
	}
	warm := time.Now().Add(l.Warmup)
	// The CPU since snapshot is spent by op running; it is that op's once
	// the other runs (or the measurement ends).
	var snapshot map[string]float64
	var meter *cpuMeter
	running := -1
	attribute := func() {
		if snapshot != nil {
			for name, secs := range meter.now() {
				out[running].cpu[name] += secs - snapshot[name]
			}
			snapshot = nil
		}
	}
	for k := 0; ctx.Err() == nil; k++ {
		turn := k % len(inTurns)
		measuring := !time.Now().Before(warm)
		if turn == 0 && measuring && slices.Min(spent) >= l.Duration {
			break
		}
		i, w := inTurns[turn], workers[inTurns[turn]]
		if i != running {
			attribute()
			running = i
		}
		if ops[i].Prepare != nil {
			if err := ops[i].Prepare(ctx, w); err != nil {
				fail(i, err)
				continue
			}
		}
		if measuring && snapshot == nil {
			if meter == nil {
				meter = e.newCPUMeter()
			}
			snapshot = meter.now()
		}
		t0 := time.Now()
		err := ops[i].Do(ctx, w)
		took := time.Since(t0)
		w.N++
		if measuring {
			spent[i] += took
		}
		if err != nil {
			fail(i, err) // failures count in the warm-up too: none is expected anywhere
			continue
		}
		if measuring {
			_ = hists[i].RecordValue(max(int64(took), minLatency))
			busy[i] += took
		}
	}
	attribute()
	for i := range out {
		out[i].Seconds = busy[i].Seconds()
		out[i].Sample = summarize(hists[i], out[i].Sample)
	}
	return out
}

// cacheCounts sums find_cache_requests_total by result over every
// process, and gateway_ratelimit_fail_open_total.
func (e *Env) cacheCounts(ctx context.Context) (map[string]float64, float64) {
	out := map[string]float64{}
	var failOpen float64
	for name, p := range e.processes {
		if _, stopped := e.stopped.Load(name); stopped {
			continue
		}
		// A process that does not answer counts nothing: the row's
		// ratio is of the processes that served it.
		_ = scrapeMetrics(ctx, p.debugURL, func(metric, labels string, v float64) {
			switch metric {
			case "gateway_ratelimit_fail_open_total":
				failOpen += v
			case "find_cache_requests_total":
				_, rest, _ := strings.Cut(labels, `result="`)
				result, _, _ := strings.Cut(rest, `"`)
				out[result] += v
			}
		})
	}
	return out, failOpen
}

// scrapeMetrics reads a process's /metrics (Prometheus' text format) and
// calls each for every sample: the metric's name, its labels as written
// (empty without), its value.
func scrapeMetrics(ctx context.Context, debugURL string, each func(metric, labels string, value float64)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, debugURL+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		metric, rest, labelled := strings.Cut(line, "{")
		labels, value := "", ""
		if labelled {
			labels, value, _ = strings.Cut(rest, "} ")
		} else {
			metric, value, _ = strings.Cut(line, " ")
		}
		var v float64
		fmt.Sscanf(value, "%g", &v)
		each(metric, labels, v)
	}
	return nil
}

// metricSum is the sum of a metric's samples in a process's /metrics.
func (e *Env) metricSum(ctx context.Context, process, metric string) (float64, error) {
	p, ok := e.processes[process]
	if !ok {
		return 0, fmt.Errorf("no %s process", process)
	}
	var sum float64
	err := scrapeMetrics(ctx, p.debugURL, func(name, _ string, v float64) {
		if name == metric {
			sum += v
		}
	})
	return sum, err
}

// sampleRSS watches every process's resident set until the returned
// function is called, which returns the peaks in MiB.
func (e *Env) sampleRSS() func() map[string]float64 {
	peaks := map[string]float64{}
	done := make(chan struct{})
	finished := make(chan struct{})
	read := func() {
		for name, p := range e.processes {
			if mib := rssMiB(p.pid); mib > peaks[name] {
				peaks[name] = mib
			}
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() map[string]float64 {
		close(done)
		<-finished
		read()
		return peaks
	}
}

// readRSS is every process's resident set now, in MiB.
func (e *Env) readRSS() map[string]float64 {
	out := map[string]float64{}
	for name, p := range e.processes {
		out[name] = rssMiB(p.pid)
	}
	return out
}

// settle has a process give back what earlier rows left it holding, so
// that a row's peak resident set shows what the row itself needs: three
// garbage collections through its profiler (/debug/pprof/heap?gc=1), then a
// wait until its resident set stops shrinking (at most 20 s). It takes
// three: a sync.Pool keeps its items through one collection, and the
// runtime returns memory to the system only once a collection has lowered
// its heap goal, which follows the previous collection's live heap.
func (e *Env) settle(ctx context.Context, name string) error {
	p, ok := e.processes[name]
	if !ok {
		return fmt.Errorf("settle: no process %s", name)
	}
	for range 3 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.debugURL+"/debug/pprof/heap?gc=1", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("settle %s: %w", name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Stable: less than 1 MiB given back over the last 2 s.
	history := []float64{rssMiB(p.pid)}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		history = append(history, rssMiB(p.pid))
		if n := len(history); n > 4 && history[n-5]-history[n-1] < 1 {
			return nil
		}
	}
	return nil
}

func rssMiB(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kb); err == nil {
			return math.Round(kb/1024*10) / 10
		}
	}
	return 0
}

func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscanf(string(raw), "%f", &l)
	return l
}

// profile saves a CPU profile of the measured window and then a heap
// profile of every process, this one (the load generator and the pgx
// rows) included, as <dir>/<process>.{cpu,heap}.pprof.
func (e *Env) profile(ctx context.Context, dir string, l Load) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	select {
	case <-time.After(l.Warmup):
	case <-ctx.Done():
		return
	}
	seconds := max(1, int(l.Duration.Seconds()))
	var wg sync.WaitGroup
	for name, p := range e.processes {
		if _, stopped := e.stopped.Load(name); stopped {
			continue
		}
		wg.Go(func() {
			save(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", p.debugURL, seconds), filepath.Join(dir, name+".cpu.pprof"))
			save(ctx, p.debugURL+"/debug/pprof/heap", filepath.Join(dir, name+".heap.pprof"))
		})
	}
	if f, err := os.Create(filepath.Join(dir, "loadgen.cpu.pprof")); err == nil {
		if pprof.StartCPUProfile(f) == nil {
			time.Sleep(time.Duration(seconds) * time.Second)
			pprof.StopCPUProfile()
		}
		f.Close()
	}
	if f, err := os.Create(filepath.Join(dir, "loadgen.heap.pprof")); err == nil {
		_ = pprof.WriteHeapProfile(f)
		f.Close()
	}
	wg.Wait()
}

func save(ctx context.Context, url, file string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	f, err := os.Create(file)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
}

var nonWord = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// slug names a row's profile folder.
func slug(name string) string {
	return strings.Trim(strings.ToLower(nonWord.ReplaceAllString(name, "-")), "-")
}
