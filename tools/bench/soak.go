package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/tools/devinfra"
)

// SoakOptions of a soak run (`make soak`): the bench's stack under the
// mixed load for a long time, at a share of the capacity measured first,
// beside a client far over its rate-limit budget.
type SoakOptions struct {
	BinDir, OutDir, RepoRoot string
	// Duration is the paced load: the quiet phase, then the noisy one.
	Duration time.Duration
	// Probe is the capacity probe before it: the mixed load from
	// Concurrency clients as fast as they go.
	Probe       time.Duration
	Concurrency int
	// Share of the probe's rate the paced load runs at.
	Share float64
	// NoisyBudget is the noisy client's budget in the gateway's terms
	// ("6000/60s", the production default); it calls at NoisyTimes its
	// sustained rate.
	NoisyBudget string
	NoisyTimes  float64
	// Every is how often the soak samples.
	Every time.Duration
	// Profile saves a heap profile of every registry process at the end
	// of the warm-up and at the end of the run, in <out>/profiles/soak:
	// what a resident set that grew between the two holds more of.
	Profile                       bool
	Organizations, People, Assets int
	Progress                      io.Writer
}

// noisyClient is the machine client of the soak's noisy caller.
const noisyClient = "soak-noisy"

// SoakResult is a soak run: written to <out>/soak.json.
type SoakResult struct {
	Started   time.Time `json:"started"`
	Seconds   float64   `json:"seconds"`
	CPUs      int       `json:"cpus"`
	DurationS float64   `json:"duration_s"`
	QuietS    float64   `json:"quiet_s"`  // the quiet phase, from the paced load's start
	WarmupS   float64   `json:"warmup_s"` // resident sets count from here
	// The capacity probe and the rate it gave.
	Probe       Sample  `json:"probe"`
	RatePerSec  float64 `json:"rate_per_s"`
	NoisyBudget string  `json:"noisy_budget"`
	NoisyPerSec float64 `json:"noisy_rate_per_s"`
	// Quiet and Noisy are the well-behaved clients' calls in each phase.
	Quiet SoakPhase `json:"quiet"`
	Noisy SoakPhase `json:"noisy"`
	// Writes acknowledged, found in the database, delivered by the feed.
	WritesAcked  int          `json:"writes_acknowledged"`
	WritesFound  int          `json:"writes_found"`
	WritesInFeed int          `json:"writes_in_feed"`
	Samples      []SoakSample `json:"samples"`
	Checks       []SoakCheck  `json:"checks"`
	Passed       bool         `json:"passed"`
}

// SoakPhase is one phase's calls of the well-behaved clients.
type SoakPhase struct {
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	FirstError string  `json:"first_error,omitempty"`
	p99        time.Duration
}

// RunSoak starts the stack as the bench does and soaks it; the result
// says whether every check passed. An error is a run that could not judge.
func RunSoak(ctx context.Context, so SoakOptions) (*SoakResult, error) {
	budget, window, err := parseBudget(so.NoisyBudget)
	if err != nil {
		return nil, err
	}
	if so.Every <= 0 || so.Duration < 4*so.Every {
		return nil, fmt.Errorf("soak: a duration of %s holds too few samples of %s", so.Duration, so.Every)
	}
	o := Options{BinDir: so.BinDir, OutDir: so.OutDir, RepoRoot: so.RepoRoot, Load: Load{Concurrency: so.Concurrency},
		Organizations: so.Organizations, People: so.People, Assets: so.Assets, UploadSize: 1 << 20, LargeUpload: 1 << 20,
		Progress: so.Progress, StackEnv: []string{"RATE_LIMIT_CLIENTS=" + noisyClient + "=" + so.NoisyBudget}}
	if err := o.defaults(); err != nil {
		return nil, err
	}
	o.Actions, o.ComplianceAssets = 0, 0 // the bench's large seeds: no soak call reads them
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	dir, err := devinfra.MkdirTemp("soak-")
	if err != nil {
		return nil, err
	}
	defer devinfra.RemoveDir(dir) //nolint:errcheck // a temporary directory
	started := time.Now()
	fmt.Fprintf(so.Progress, "starting the registry as make bench does...\n")
	e, stop, err := start(ctx, o, dir)
	if err != nil {
		return nil, err
	}
	defer stop()

	noisySecret, err := e.Stack.NewClient(ctx, noisyClient, "registry:read")
	if err != nil {
		return nil, fmt.Errorf("soak: the noisy client: %w", err)
	}
	noisyToken, err := e.accessToken(ctx, noisyClient, noisySecret)
	if err != nil {
		return nil, fmt.Errorf("soak: the noisy client: %w", err)
	}
	var noisy atomic.Pointer[string]
	noisy.Store(&noisyToken)
	runCtx, endRun := context.WithCancel(ctx)
	defer endRun()
	// Access tokens last 15 minutes: both clients renew theirs well before.
	go job.Later("token renewal", 5*time.Minute, func(runCtx context.Context) {
		if err := e.refreshToken(runCtx); err != nil {
			fmt.Fprintf(so.Progress, "    renewing the token: %v\n", err)
		}
		if t, err := e.accessToken(runCtx, noisyClient, noisySecret); err == nil {
			noisy.Store(&t)
		}
	}).Run(runCtx)
	writes := &soakWrites{}
	feed, err := e.followFeed(runCtx)
	if err != nil {
		return nil, err
	}
	mixed := e.mixedOp(writes)

	res := &SoakResult{Started: started.UTC(), CPUs: runtime.NumCPU(), DurationS: so.Duration.Seconds(), NoisyBudget: so.NoisyBudget}
	fmt.Fprintf(so.Progress, "capacity probe: the mixed load from %d clients for %s...\n", so.Concurrency, so.Probe)
	res.Probe = Measure(ctx, Load{Concurrency: so.Concurrency, Warmup: so.Probe / 6, Duration: so.Probe}, mixed, 1, "soak-probe")
	fmt.Fprintf(so.Progress, "    %s req/s  p50 %.2f ms  p99 %.2f ms  %d errors\n", rate(res.Probe.PerSec), ms(res.Probe.P50), ms(res.Probe.P99), res.Probe.Errors)
	if res.Probe.Requests == 0 {
		return nil, fmt.Errorf("soak: the capacity probe counted no call (%s)", res.Probe.FirstError)
	}
	quiet := max(so.Duration/20, 30*time.Second)
	quiet = min(quiet, so.Duration/2)
	warmup := min(so.Duration/10, 5*time.Minute)
	res.QuietS, res.WarmupS = quiet.Seconds(), warmup.Seconds()
	res.RatePerSec = math.Round(res.Probe.PerSec * so.Share)
	res.NoisyPerSec = so.NoisyTimes * budget / window.Seconds()
	fmt.Fprintf(so.Progress, "paced load at %s req/s for %s: %s quiet, then %s beside %s at %s calls/s (%s × its budget %s); a sample every %s\n",
		rate(res.RatePerSec), so.Duration, quiet, so.Duration-quiet, noisyClient, rate(res.NoisyPerSec), strconv.FormatFloat(so.NoisyTimes, 'f', -1, 64), so.NoisyBudget, so.Every)

	rec := newSoakRecorder()
	loadCtx, endLoad := context.WithTimeout(runCtx, so.Duration)
	defer endLoad()
	paced := pace(loadCtx, runCtx, res.RatePerSec, 4*so.Concurrency, "soak", func(ctx context.Context, w *Worker) {
		if mixed.Prepare != nil {
			if err := mixed.Prepare(ctx, w); err != nil {
				rec.call(0, err)
				return
			}
		}
		t0 := time.Now()
		err := mixed.Do(ctx, w)
		rec.call(time.Since(t0), err)
	})
	noisyLoad := make(chan *pacer, 1)
	noisyStarts := time.AfterFunc(quiet, func() {
		rec.enter("noisy")
		noisyLoad <- pace(loadCtx, runCtx, res.NoisyPerSec, 64, "noisy", e.noisyCall(&noisy, rec))
	})
	begin := time.Now()
	ticker := time.NewTicker(so.Every)
	warmProfiled := false
	for done := false; !done; {
		select {
		case <-loadCtx.Done():
			done = true
		case <-ticker.C:
		}
		s := rec.sample(time.Since(begin), paced.behind.Swap(0))
		s.RSSMiB, s.CacheMiB, s.LoadAverage = e.soakRSS(), e.soakCacheMiB(ctx), loadAverage()
		res.Samples = append(res.Samples, s)
		if so.Profile && (done || !warmProfiled && s.AtS >= warmup.Seconds()) {
			warmProfiled = true
			e.soakHeapProfiles(ctx, filepath.Join(o.OutDir, "profiles", "soak"), s.AtS)
		}
		fmt.Fprintf(so.Progress, "%6.0fs %-5s %7s req/s  p50 %6.2f ms  p99 %7.2f ms  %d errors  noisy %d ok %d 429 %d other  RSS Σ %.0f MiB (caches %.0f)  load %.1f\n",
			s.AtS, s.Phase, rate(s.PerSec), s.P50Ms, s.P99Ms, s.Errors, s.NoisyOK, s.NoisyLimit, s.NoisyOther, sum(s.RSSMiB), sum(s.CacheMiB), s.LoadAverage)
	}
	ticker.Stop()
	paced.wait()
	if !noisyStarts.Stop() { // it began: wait for it to end
		(<-noisyLoad).wait()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.Quiet, res.Noisy = rec.phase("quiet"), rec.phase("noisy")

	acked := writes.all()
	res.WritesAcked = len(acked.organizations) + len(acked.actions)
	fmt.Fprintf(so.Progress, "checking %d acknowledged writes in the database and in the change feed...\n", res.WritesAcked)
	if res.WritesFound, err = e.countStored(ctx, acked); err != nil {
		return nil, err
	}
	res.WritesInFeed = feed.delivered(ctx, acked, 60*time.Second)
	if err := feed.lastError(); err != nil && res.WritesInFeed < res.WritesAcked {
		fmt.Fprintf(so.Progress, "    the change feed's last error: %v\n", err)
	}
	endRun()

	res.Checks = judgeSoak(soakFigures{WarmupS: res.WarmupS, Samples: res.Samples, QuietP99: res.Quiet.p99, NoisyP99: res.Noisy.p99,
		Errors: res.Quiet.Errors + res.Noisy.Errors, WritesAcked: res.WritesAcked, WritesFound: res.WritesFound,
		WritesInFeed: res.WritesInFeed, NoisyLimited: rec.noisyLimitedTotal()})
	res.Passed = soakPassed(res.Checks)
	res.Seconds = math.Round(time.Since(started).Seconds())
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return res, err
	}
	return res, os.WriteFile(filepath.Join(o.OutDir, "soak.json"), append(raw, '\n'), 0o644)
}

// Print writes the run's figures and the verdict's table.
func (r *SoakResult) Print(w io.Writer) {
	fmt.Fprintf(w, "\nsoak: %s paced at %s req/s (%.0f %% of the probe's %s), %d CPUs, %s in all; noisy client at %s calls/s, budget %s\n",
		secs(r.DurationS), rate(r.RatePerSec), 100*r.RatePerSec/r.Probe.PerSec, rate(r.Probe.PerSec), r.CPUs, secs(r.Seconds), rate(r.NoisyPerSec), r.NoisyBudget)
	for _, p := range []struct {
		name string
		SoakPhase
	}{{"quiet", r.Quiet}, {"noisy", r.Noisy}} {
		fmt.Fprintf(w, "  %-5s %8d calls  p50 %6.2f ms  p99 %7.2f ms  %d errors", p.name, p.Requests, p.P50Ms, p.P99Ms, p.Errors)
		if p.FirstError != "" {
			fmt.Fprintf(w, "  first: %.200s", p.FirstError)
		}
		fmt.Fprintln(w)
	}
	printSoakVerdict(w, r.Checks)
}

// parseBudget reads a gateway budget, "6000/60s": calls per window.
func parseBudget(s string) (float64, time.Duration, error) {
	n, w, ok := strings.Cut(s, "/")
	calls, err := strconv.ParseFloat(n, 64)
	if !ok || err != nil || calls <= 0 {
		return 0, 0, fmt.Errorf("soak: budget %q: want calls/window, as 6000/60s", s)
	}
	window, err := time.ParseDuration(w)
	if err != nil || window <= 0 {
		return 0, 0, fmt.Errorf("soak: budget %q: want calls/window, as 6000/60s", s)
	}
	return calls, window, nil
}

// soakWrites are the acknowledged writes' ids, by kind.
type soakWrites struct {
	mu                     sync.Mutex
	organizations, actions []string
}

func (s *soakWrites) add(kind *[]string, raw []byte) error {
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &created); err != nil || created.ID == "" {
		return fmt.Errorf("acknowledged write without an id: %.200s", raw)
	}
	s.mu.Lock()
	*kind = append(*kind, created.ID)
	s.mu.Unlock()
	return nil
}

func (s *soakWrites) all() (out struct{ organizations, actions []string }) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out.organizations, out.actions = append([]string(nil), s.organizations...), append([]string(nil), s.actions...)
	return out
}

// mixedOp is the soak's mixed load through the gateway: reads and finds
// of the seeded rows, creates of organizations and actions (each
// acknowledged one kept in writes). The bench's own requests, in these
// shares.
func (e *Env) mixedOp(writes *soakWrites) Op {
	gateway := e.Stack.RegistryURL
	return Op{Do: func(ctx context.Context, w *Worker) error {
		switch n := w.Rand.IntN(100); {
		case n < 30:
			_, err := e.send(ctx, gateway, getOrganization(e)(w))
			return err
		case n < 45:
			_, err := e.send(ctx, gateway, Request{Method: "GET", Path: "/assets/" + e.Assets[w.Rand.IntN(len(e.Assets))], Want: 200})
			return err
		case n < 55:
			_, err := e.send(ctx, gateway, findPerson(w.Rand.IntN(e.People)))
			return err
		case n < 65:
			_, err := e.send(ctx, gateway, findAsset(w.Rand.IntN(len(e.Assets))))
			return err
		case n < 70:
			_, err := e.send(ctx, gateway, Request{Method: "GET", Path: "/organizations?limit=20", Want: 200})
			return err
		case n < 85:
			raw, err := e.send(ctx, gateway, createOrganization(e, w))
			if err != nil {
				return err
			}
			return writes.add(&writes.organizations, raw)
		default:
			raw, err := e.send(ctx, gateway, createAction(e, w))
			if err != nil {
				return err
			}
			return writes.add(&writes.actions, raw)
		}
	}}
}

// noisyCall is one call of the noisy client: a read, answered or refused.
func (e *Env) noisyCall(token *atomic.Pointer[string], rec *soakRecorder) func(ctx context.Context, w *Worker) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute, DisableCompression: true}}
	return func(ctx context.Context, w *Worker) {
		req, err := http.NewRequestWithContext(ctx, "GET", e.Stack.RegistryURL+"/organizations/"+e.Orgs[w.Rand.IntN(len(e.Orgs))], nil)
		if err != nil {
			rec.noisy(0)
			return
		}
		req.Header.Set("Authorization", "Bearer "+*token.Load())
		resp, err := client.Do(req)
		if err != nil {
			rec.noisy(0)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		rec.noisy(resp.StatusCode)
	}
}

// pacer is an open-loop load: calls started at a fixed rate whatever the
// answers take, as independent integrations make them.
type pacer struct {
	behind atomic.Int64 // calls no client was free to start
	wg     sync.WaitGroup
}

func (p *pacer) wait() { p.wg.Wait() }

// pace starts do at perSec from up to clients goroutines until loadCtx
// ends; each call runs under callCtx (the run's), so that the end of the
// load does not cut the calls under way into errors.
func pace(loadCtx, callCtx context.Context, perSec float64, clients int, tag string, do func(ctx context.Context, w *Worker)) *pacer {
	p := &pacer{}
	slots := make(chan struct{}, clients)
	for i := range clients {
		p.wg.Go(func() {
			w := &Worker{ID: i, Rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i))), Tag: fmt.Sprintf("%s-%d-%d", tag, time.Now().UnixNano(), i)}
			for range slots {
				ctx, cancel := context.WithTimeout(callCtx, 30*time.Second)
				do(ctx, w)
				cancel()
				w.N++
			}
		})
	}
	p.wg.Go(func() {
		defer close(slots)
		begin := time.Now()
		var started int64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
			}
			for due := int64(perSec * time.Since(begin).Seconds()); started < due; started++ {
				select {
				case slots <- struct{}{}:
				default:
					p.behind.Add(1)
				}
			}
		}
	})
	return p
}

// soakRecorder keeps the well-behaved clients' calls by sampling interval
// and by phase, and the noisy client's answers.
type soakRecorder struct {
	mu             sync.Mutex
	current        string
	interval       *hdrhistogram.Histogram
	intervalErrors int
	phases         map[string]*SoakPhase
	phaseLatencies map[string]*hdrhistogram.Histogram
	noisyOK        int
	noisyLimited   int
	noisyOther     int
	noisyLimitedN  int // over the whole run
	lastAt         time.Duration
}

func newSoakRecorder() *soakRecorder {
	r := &soakRecorder{interval: newLatencies(), phases: map[string]*SoakPhase{}, phaseLatencies: map[string]*hdrhistogram.Histogram{}}
	r.enter("quiet")
	return r
}

func newLatencies() *hdrhistogram.Histogram { return hdrhistogram.New(minLatency, maxLatency, 3) }

func (r *soakRecorder) enter(phase string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current = phase
	if r.phases[phase] == nil {
		r.phases[phase], r.phaseLatencies[phase] = &SoakPhase{}, newLatencies()
	}
}

func (r *soakRecorder) call(took time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.phases[r.current]
	if err != nil {
		r.intervalErrors++
		p.Errors++
		if p.FirstError == "" {
			p.FirstError = err.Error()
		}
		return
	}
	v := max(int64(took), minLatency)
	_ = r.interval.RecordValue(v)
	_ = r.phaseLatencies[r.current].RecordValue(v)
}

func (r *soakRecorder) noisy(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case status == http.StatusTooManyRequests:
		r.noisyLimited++
		r.noisyLimitedN++
	case status >= 200 && status < 300:
		r.noisyOK++
	default:
		r.noisyOther++
	}
}

func (r *soakRecorder) noisyLimitedTotal() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.noisyLimitedN
}

// sample takes the interval's figures and starts the next interval.
func (r *soakRecorder) sample(at time.Duration, behind int64) SoakSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.interval
	s := SoakSample{AtS: math.Round(at.Seconds()), Phase: r.current, Requests: int(h.TotalCount()), Errors: r.intervalErrors, Behind: int(behind),
		P50Ms: ms(time.Duration(h.ValueAtQuantile(50))), P99Ms: ms(time.Duration(h.ValueAtQuantile(99))),
		NoisyOK: r.noisyOK, NoisyLimit: r.noisyLimited, NoisyOther: r.noisyOther}
	s.PerSec = math.Round(float64(s.Requests) / max((at-r.lastAt).Seconds(), 1e-3))
	r.interval, r.intervalErrors, r.noisyOK, r.noisyLimited, r.noisyOther = newLatencies(), 0, 0, 0, 0
	r.lastAt = at
	return s
}

// phase is a phase's totals.
func (r *soakRecorder) phase(name string) SoakPhase {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, h := r.phases[name], r.phaseLatencies[name]
	if p == nil {
		return SoakPhase{}
	}
	out := *p
	out.Requests = int(h.TotalCount())
	out.p99 = time.Duration(h.ValueAtQuantile(99))
	out.P50Ms, out.P99Ms = ms(time.Duration(h.ValueAtQuantile(50))), ms(out.p99)
	return out
}

// countStored counts the acknowledged writes whose rows are in the database.
func (e *Env) countStored(ctx context.Context, acked struct{ organizations, actions []string }) (int, error) {
	found := 0
	for _, kind := range []struct {
		table string
		ids   []string
	}{{"parties.organizations", acked.organizations}, {"actions.actions", acked.actions}} {
		for chunk := range slicesChunk(kind.ids, 5000) {
			var n int
			if err := e.Reference.QueryRow(ctx, "SELECT count(*) FROM "+kind.table+" WHERE id = ANY($1::uuid[])", chunk).Scan(&n); err != nil {
				return 0, fmt.Errorf("soak: counting %s: %w", kind.table, err)
			}
			found += n
		}
	}
	return found, nil
}

func slicesChunk(ids []string, n int) func(yield func([]string) bool) {
	return func(yield func([]string) bool) {
		for len(ids) > 0 {
			k := min(n, len(ids))
			if !yield(ids[:k]) {
				return
			}
			ids = ids[k:]
		}
	}
}

// feedFollower reads the change feed from before the soak's first write,
// as an integration mirroring the registry does, and keeps the subjects of
// the created organizations and actions it was given.
type feedFollower struct {
	mu   sync.Mutex
	seen map[string]struct{}
	err  error
}

func (e *Env) followFeed(ctx context.Context) (*feedFollower, error) {
	_, h, err := e.exchange(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: "/events?after=now", Want: 200})
	if err != nil {
		return nil, fmt.Errorf("soak: the change feed: %w", err)
	}
	after := feedCursor(h)
	if after == "" {
		return nil, fmt.Errorf("soak: the change feed has no next link (%q)", h.Get("Link"))
	}
	f := &feedFollower{seen: map[string]struct{}{}}
	go func() {
		for ctx.Err() == nil {
			path := "/events?type=organization.created&type=action.created&limit=1000&after=" + url.QueryEscape(after)
			raw, h, err := e.exchange(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: path, Want: 200})
			var events []struct {
				Subject struct {
					ID string `json:"id"`
				} `json:"subject"`
			}
			if err == nil {
				err = json.Unmarshal(raw, &events)
			}
			if err != nil {
				f.mu.Lock()
				f.err = err
				f.mu.Unlock()
				sleepCtx(ctx, time.Second)
				continue
			}
			f.mu.Lock()
			for _, ev := range events {
				f.seen[ev.Subject.ID] = struct{}{}
			}
			f.mu.Unlock()
			if next := feedCursor(h); next != "" {
				after = next
			}
			if len(events) == 0 {
				sleepCtx(ctx, time.Second)
			}
		}
	}()
	return f, nil
}

func (f *feedFollower) lastError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// feedCursor is the after of a feed page's next link.
func feedCursor(h http.Header) string {
	link, _, _ := strings.Cut(strings.TrimPrefix(h.Get("Link"), "<"), ">")
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	return u.Query().Get("after")
}

// delivered waits up to wait for the feed to have delivered every
// acknowledged write and says how many it has.
func (f *feedFollower) delivered(ctx context.Context, acked struct{ organizations, actions []string }, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		f.mu.Lock()
		n := 0
		for _, ids := range [][]string{acked.organizations, acked.actions} {
			for _, id := range ids {
				if _, ok := f.seen[id]; ok {
					n++
				}
			}
		}
		f.mu.Unlock()
		if n == len(acked.organizations)+len(acked.actions) || time.Now().After(deadline) || ctx.Err() != nil {
			return n
		}
		sleepCtx(ctx, time.Second)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}
