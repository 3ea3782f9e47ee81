package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestMain(m *testing.M) {
	ChildMain()              // the quick run starts this test binary as its reference server and proxy
	os.Exit(testkit.Main(m)) // the test kit's datastores (the seed's test) stop with the run
}

// TestQuickRun is `make bench QUICK=1` inside `make test`, so the benchmark
// cannot rot: every row it runs must answer without a single error, and
// results.json must hold them. It asserts nothing about speed. Inside make
// test it runs the short rows (one of each kind; the rows marked Long are
// left out) over smaller seeds; with FULL=1 it runs every row over the
// quick run's seeds.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole registry")
	}
	root := repoRoot(t)
	out := t.TempDir()
	o := Options{
		BinDir: binaries(t, root), OutDir: out, RepoRoot: root,
		Load:          Load{Concurrency: 4, Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond},
		Rounds:        1,
		Organizations: 20, People: 40, Assets: 40, Actions: 4000, ComplianceAssets: 20000, ComplianceActions: 100000,
		LogLeaves:  QuickLogLeaves,
		UploadSize: 2 << 20, LargeUpload: 16 << 20,
		PostgresURL: os.Getenv("TEST_DATABASE_URL"), RedisURL: os.Getenv("TEST_REDIS_URL"),
	}
	if testing.Verbose() {
		// go test -v shows where the run spends its time: each line
		// begins with the seconds since the run began.
		o.Progress = &clockedLines{w: os.Stderr, start: time.Now(), lineStart: true}
	}
	if !testkit.Full() {
		// The seeds are most of the run: deep pages need some depth, not
		// the quick run's.
		o.Short = true
		o.ComplianceAssets, o.ComplianceActions, o.LogLeaves = 2000, 10000, QuickLogLeaves/10
		// The rows' load is the run's CPU: a tenth of a second of calls
		// shows a row works, and one that counted no call is measured
		// again, longer (measureRows).
		o.Load.Warmup, o.Load.Duration = 25*time.Millisecond, 100*time.Millisecond
		// 16 of the largest events still make 8 pages of two, so the
		// 16 clients read different pages, and an unbounded page would
		// still hold 24 MB: a quarter of the default's seed and reads.
		o.LargeEvents = 16
	}
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	// The same comparison make bench prints, against the short run's own
	// baseline (tools/bench/baseline-short.json; write it with
	// BENCH_BASELINE=1 make test): it never fails the test, the machine is noisy.
	if baseline := filepath.Join(root, "tools", "bench", "baseline-short.json"); os.Getenv("BENCH_BASELINE") == "1" {
		if err := WriteBaseline(baseline, res.Baseline("TestQuickRun (make test)")); err != nil {
			t.Fatal(err)
		}
	} else if b, ok, err := ReadBaseline(baseline); err != nil {
		t.Error(err)
	} else if ok && o.Short {
		// go test shows a passing test's output only with -v: the
		// comparison goes to a file make test prints after the tests.
		var out strings.Builder
		PrintComparison(&out, b, res.Compare(b))
		t.Log(out.String())
		if err := os.MkdirAll(filepath.Join(root, "bench"), 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(root, "bench", "short-comparison.txt"), []byte("the bench's short run (TestQuickRun)"+out.String()), 0o644)
		}
	}
	var written Results
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &written); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Results{res, &written} {
		var names []string
		for _, row := range r.Rows {
			names = append(names, row.Name)
			if len(row.Samples) != 1 {
				t.Fatalf("%s: %d samples, want 1", row.Name, len(row.Samples))
			}
			if s := row.Samples[0]; s.Requests == 0 || s.Errors != 0 {
				t.Errorf("%s: %d requests, %d errors (first: %s); want some and none", row.Name, s.Requests, s.Errors, s.FirstError)
			}
			if row.Limit != "" && len(row.RatioToLimit) != 1 {
				t.Errorf("%s: no ratio to %s", row.Name, row.Limit)
			}
		}
		var want []string
		for _, row := range selectWhere(AllRows(), func(r Row) bool { return !o.Short || !r.Long }) {
			want = append(want, row.Name)
		}
		if !slices.Equal(names, want) {
			t.Errorf("rows = %q, want %q", names, want)
		}
		goals := 0
		for _, g := range Goals {
			if slices.Contains(want, g.Row) && (g.Of == "" || slices.Contains(want, g.Of)) {
				goals++
			}
		}
		if len(r.Goals) != goals {
			t.Errorf("%d goals evaluated, want %d", len(r.Goals), goals)
		}
	}
	// The cold find must really be cold, or comparing it with the warm one
	// says nothing. (How warm the warm one is depends on Redis answering
	// within its timeout, a matter of speed, so it is reported, not asserted.)
	ran := func(name string) bool {
		return slices.ContainsFunc(res.Rows, func(r RowResult) bool { return r.Name == name })
	}
	for _, name := range []string{"POST /people/find, cache cold · direct", "POST /people/find, cache cold · gateway"} {
		row := res.row(name)
		if row == nil || row.Samples[0].CacheHitRate == nil || *row.Samples[0].CacheHitRate != 0 {
			t.Errorf("%s: the find cache was looked up and never hit? %+v", name, row)
		}
	}
	for _, name := range []string{"POST /people/find, cache warm · direct", "POST /assets/find, cache warm · direct"} {
		if !ran(name) && o.Short {
			continue // a long row
		}
		if row := res.row(name); row == nil || row.Samples[0].CacheHitRate == nil {
			t.Errorf("%s did not look up the cache", name)
		}
	}
	for _, name := range []string{"POST /assets/find, cache cold · direct", "POST /assets/find, cache cold · gateway"} {
		if !ran(name) && o.Short {
			continue
		}
		row := res.row(name)
		if row == nil || row.Samples[0].CacheHitRate == nil || *row.Samples[0].CacheHitRate != 0 {
			t.Errorf("%s: the find cache was looked up and never hit? %+v", name, row)
		}
	}
	// The upload rows say how much they moved, and the large upload's
	// resident sets were read while it ran.
	for _, name := range []string{PutObject, "POST /documents, upload · gateway", UploadLarge} {
		if !ran(name) && o.Short {
			continue
		}
		if row := res.row(name); row == nil || row.Samples[0].Bytes == 0 || row.Samples[0].MiBPerSec == 0 {
			t.Errorf("%s: no bytes or MiB/s: %+v", name, row)
		}
	}
	if row := res.row(UploadLarge); (ran(UploadLarge) || !o.Short) && (row == nil || row.Samples[0].PeakRSSMiB["documents"] == 0) {
		t.Errorf("%s: the documents service's resident set was not read", UploadLarge)
	}
}

func TestSelectRowsKeepsLimits(t *testing.T) {
	all := []Row{{Name: "a"}, {Name: "b", Limit: "a"}, {Name: "c", Limit: "b"}, {Name: "d"}, {Name: "e", Paired: "f"}, {Name: "f"}}
	tests := []struct {
		match string
		want  []string
	}{
		{"^c$", []string{"a", "b", "c"}},
		{"^b$", []string{"a", "b"}},
		{"^d$", []string{"d"}},
		{"^e$", []string{"e", "f"}},
		{"^f$", []string{"e", "f"}},
		{"x", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, r := range selectRows(all, regexp.MustCompile(tt.match)) {
			got = append(got, r.Name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.match, got, tt.want)
		}
	}
}

// The short run leaves out the long rows alone: a limit or a partner of a
// row it keeps is measured, long or not.
func TestShortRowsKeepLimitsAndPartners(t *testing.T) {
	all := []Row{{Name: "a", Long: true}, {Name: "b", Limit: "a"}, {Name: "c", Long: true}, {Name: "d", Paired: "e"}, {Name: "e", Long: true}, {Name: "f", Long: true, Limit: "b"}}
	var got []string
	for _, r := range shortRows(all) {
		got = append(got, r.Name)
	}
	if want := []string{"a", "b", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("short rows %q, want %q", got, want)
	}
	if len(shortRows(AllRows())) == len(AllRows()) {
		t.Error("no row of the bench is long: make test runs the whole quick run")
	}
}

func TestRowNamesAreUniqueAndLimitsExist(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range AllRows() {
		if seen[r.Name] {
			t.Errorf("row %q twice", r.Name)
		}
		seen[r.Name] = true
	}
	for _, r := range AllRows() {
		if r.Limit != "" && !seen[r.Limit] {
			t.Errorf("%s: limit %q is no row", r.Name, r.Limit)
		}
	}
	// A pair is measured from its first row, which names the second; the
	// second names none and comes later (Run skips it there).
	rows := AllRows()
	for i, r := range rows {
		if r.Paired == "" {
			continue
		}
		at := slices.IndexFunc(rows, func(p Row) bool { return p.Name == r.Paired })
		if at <= i || rows[at].Paired != "" || r.Once || rows[at].Once {
			t.Errorf("%s: paired with %q, which must be a later row of its own, measured in a window", r.Name, r.Paired)
		}
		if at > i && (r.Clients != 1 || rows[at].Clients != 1) {
			t.Errorf("%s: paired with %q, measured call by call by one client each: both set Clients to 1", r.Name, r.Paired)
		}
	}
	clients := map[string]int{}
	for _, r := range rows {
		clients[r.Name] = r.Clients
	}
	for _, g := range Goals {
		if !seen[g.Row] || g.Of != "" && !seen[g.Of] {
			t.Errorf("goal %q names a row that does not exist", g.Name)
		}
		// A goal that divides two rows' rates compares them at the same
		// number of clients (a pair, measured in turns, shares it).
		if g.Of != "" && g.Metric == "req/s" && clients[g.Row] != clients[g.Of] {
			t.Errorf("goal %q divides %s at %d clients by %s at %d", g.Name, g.Row, clients[g.Row], g.Of, clients[g.Of])
		}
	}
}

// binaries returns REGISTRY_BIN (make test builds them first) or builds
// them, so `go test ./tools/bench` also works alone.
func binaries(t *testing.T, root string) string {
	if dir := os.Getenv("REGISTRY_BIN"); dir != "" {
		return dir
	}
	out := t.TempDir()
	for _, d := range catalog.Deployables() {
		cmd := exec.Command("go", "build", "-o", filepath.Join(out, d.Name), "./"+d.Command)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", d.Command, err, b)
		}
	}
	return out
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal(fmt.Errorf("no go.work above %s", dir))
		}
		dir = parent
	}
}

func TestPerRequestDividesAndDropsTheIdle(t *testing.T) {
	got := perRequest(map[string]float64{"postgres": 3, "parties": 1.5, "idp": 0.01}, 1000)
	want := map[string]float64{"postgres": 3, "parties": 1.5}
	if len(got) != len(want) || got["postgres"] != want["postgres"] || got["parties"] != want["parties"] {
		t.Errorf("perRequest = %v, want %v (ms per request; idp spent under 1 %% of the whole)", got, want)
	}
	if perRequest(map[string]float64{"postgres": 1}, 0) != nil {
		t.Error("perRequest of no requests should be nil")
	}
}

func TestPerCoreIsTheInverseOfCPUPerRequest(t *testing.T) {
	for _, c := range []struct {
		name      string
		byProcess map[string][]float64
		want      map[string]float64
	}{
		{"one process", map[string][]float64{"events": {2}}, map[string]float64{"events": 500, perCoreAll: 500}},
		{"the load generator left out of all", map[string][]float64{"api-gateway": {1}, "postgres": {4}, "loadgen": {5}},
			map[string]float64{"api-gateway": 1000, "postgres": 250, perCoreAll: 200}},
		{"the median of the rounds", map[string][]float64{"parties": {1, 4, 2}}, map[string]float64{"parties": 500, perCoreAll: 500}},
		{"a process idle in every round", map[string][]float64{"parties": {0, 0}, "postgres": {0.5}},
			map[string]float64{"postgres": 2000, perCoreAll: 2000}},
		{"no CPU figures", map[string][]float64{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := perCore(c.byProcess); !maps.Equal(got, c.want) {
				t.Errorf("perCore = %v, want %v", got, c.want)
			}
		})
	}
}

// A goal whose row counted no request is not met, whatever its value: an
// empty row's p99 of 0 is not a p99 under the bound.
func TestGoalOfAnEmptyRowIsNotMet(t *testing.T) {
	i := slices.IndexFunc(Goals, func(g Goal) bool { return g.Metric == "p99 s" && g.AtMost > 0 })
	if i < 0 {
		t.Fatal("no goal on a p99 in seconds")
	}
	goal := Goals[i]
	for _, c := range []struct {
		requests int
		met      bool
	}{{requests: 0, met: false}, {requests: 10, met: true}} {
		r := &Results{Rows: []RowResult{{Name: goal.Row, Samples: []RowSample{{Sample: Sample{Requests: c.requests, P99: time.Millisecond}}}}}}
		r.finish(time.Now())
		j := slices.IndexFunc(r.Goals, func(v GoalValue) bool { return v.Name == goal.Name })
		if j < 0 {
			t.Fatalf("%d requests: goal %q not evaluated", c.requests, goal.Name)
		}
		if r.Goals[j].Met != c.met {
			t.Errorf("%d requests: %q met = %v, want %v", c.requests, goal.Name, r.Goals[j].Met, c.met)
		}
	}
}

// A goal in items divides the row's items a second, not its requests, by
// the other row's requests or by its fixed number: 45 batches of 100 a
// second against 5,000 reference POSTs is 0.9.
func TestGoalsInItemsCountTheBatchesItems(t *testing.T) {
	sample := func(perSec float64) []RowSample {
		return []RowSample{{Sample: Sample{Requests: 100, PerSec: perSec}}}
	}
	kinds := map[bool]int{}
	for _, goal := range Goals {
		if goal.Items <= 1 {
			continue
		}
		kinds[goal.Of != ""]++
		rows := []RowResult{{Name: goal.Row, Samples: sample(45)}}
		against := goal.Value
		if goal.Of != "" {
			rows, against = append(rows, RowResult{Name: goal.Of, Samples: sample(5000)}), 5000
		}
		r := &Results{Rows: rows}
		r.finish(time.Now())
		j := slices.IndexFunc(r.Goals, func(v GoalValue) bool { return v.Name == goal.Name })
		if j < 0 {
			t.Fatalf("goal %q not evaluated", goal.Name)
		}
		if got, want := r.Goals[j].Values, 45*goal.Items/against; len(got) != 1 || got[0] != want {
			t.Errorf("%q = %v, want %v", goal.Name, got, want)
		}
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Errorf("goals in items: %d against another row, %d against a number; want both kinds", kinds[true], kinds[false])
	}
}

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		stat, name string
		parent     int
		cpu        float64
		ok         bool
	}{
		{"4242 (postgres) S 4200 4242 4242 0 -1 4194560 900 0 0 0 150 50 0 0 20 0 1 0 100 0 0", "postgres", 4200, 2, true},
		// A command name may hold spaces and parentheses: the last ")" ends it.
		{"7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 100 0 0", "a (b) c", 1, 0.07, true},
		{"7 (short) R 1 7", "", 0, 0, false},
		{"no parentheses", "", 0, 0, false},
	} {
		name, parent, cpu, ok := parseStat(c.stat)
		if name != c.name || parent != c.parent || math.Abs(cpu-c.cpu) > 1e-9 || ok != c.ok {
			t.Errorf("parseStat(%q) = %q, %d, %g, %v; want %q, %d, %g, %v", c.stat, name, parent, cpu, ok, c.name, c.parent, c.cpu, c.ok)
		}
	}
}

// A datastore's process this one started is the run's; the same server
// started by someone else is not. The "server" is sleep under a
// datastore's name.
func TestDatastoreSecondsCountsOnlyTheRunsOwn(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	dir := t.TempDir()
	server := filepath.Join(dir, "nats-server")
	raw, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(server, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	ours := exec.Command(server, "30")
	if err := ours.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ours.Process.Kill(); _ = ours.Wait() }()
	// Started by a shell that exits at once: its parent is then init, as a
	// server started by another suite or engineer has no parent of ours.
	theirs := exec.Command("sh", "-c", server+" 30 >/dev/null 2>&1 & echo $!")
	out, err := theirs.Output()
	if err != nil {
		t.Fatal(err)
	}
	other, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(other, syscall.SIGKILL) }()
	e := &Env{}
	counted := func() []int {
		var pids []int
		e.eachDatastoreProcess(func(pid int, _ string, _ float64) { pids = append(pids, pid) })
		return pids
	}
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(counted(), ours.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // until exec has renamed the child
	}
	pids := counted()
	if !slices.Contains(pids, ours.Process.Pid) {
		t.Errorf("the run's own nats-server (pid %d) is not counted: %v", ours.Process.Pid, pids)
	}
	if slices.Contains(pids, other) {
		t.Errorf("another's nats-server (pid %d) is counted: %v", other, pids)
	}
}

// The store rows measure the consumer storing new events: a batch whose
// ids an earlier row or round stored is left out as a redelivery, and
// measures nothing. The same worker number and call count recur in every
// row and round.
func TestStoreBatchesNeverRepeatAnID(t *testing.T) {
	seen := map[string]bool{}
	for round := range 3 {
		w := &Worker{ID: 3, N: 0, Tag: fmt.Sprintf("r%d-1-3", round)}
		for _, in := range benchBatch(w) {
			if seen[in.Event.ID] {
				t.Fatalf("round %d repeats event id %s", round, in.Event.ID)
			}
			seen[in.Event.ID] = true
		}
	}
	if len(seen) != 3*storeBatch {
		t.Fatalf("%d ids in three batches of %d", len(seen), storeBatch)
	}
}

// Two ops of one client are measured call by call in turns, A B B A over
// and over, each for its own calls' time: an op whose calls take twice as
// long has half the rate, and a failed call counts as an error, not a
// call.
func TestCallsInTurnAlternateAndRateByTheirTime(t *testing.T) {
	var order []int
	op := func(i int, took time.Duration, fail func(n int) bool) Op {
		return Op{Do: func(_ context.Context, w *Worker) error {
			order = append(order, i)
			time.Sleep(took)
			if fail(w.N) {
				return errors.New("refused")
			}
			return nil
		}}
	}
	never := func(int) bool { return false }
	e := &Env{}
	got := e.measureCallsInTurn(t.Context(), Load{Warmup: 20 * time.Millisecond, Duration: 200 * time.Millisecond},
		[]Op{op(0, 10*time.Millisecond, never), op(1, 20*time.Millisecond, func(n int) bool { return n == 5 })}, 1, "turns")
	for k, i := range order {
		if want := inTurns[k%len(inTurns)]; i != want {
			t.Fatalf("call %d went to op %d, want %d (order %v)", k, i, want, order[:k+1])
		}
	}
	if len(order)%len(inTurns) != 0 {
		t.Errorf("%d calls: the measurement ends with a whole A B B A", len(order))
	}
	if got[0].Errors != 0 || got[1].Errors != 1 || got[1].FirstError != "refused" {
		t.Errorf("errors %d and %d (%q), want 0 and 1", got[0].Errors, got[1].Errors, got[1].FirstError)
	}
	for i, m := range got {
		if m.Seconds < 0.2 || m.Requests == 0 {
			t.Errorf("op %d: %d calls in %.3f s, want calls taking at least the window", i, m.Requests, m.Seconds)
		}
	}
	// About 0.5; a rate taken over the window both share, or from the
	// count of calls alone, gives 1.
	if ratio := got[1].PerSec / got[0].PerSec; ratio < 0.3 || ratio > 0.75 {
		t.Errorf("rates %.0f/s and %.0f/s: the op twice as slow has %.2f of the other's rate, want about 0.5", got[0].PerSec, got[1].PerSec, ratio)
	}
}

// An op whose every call fails adds no time to its count: the measurement
// still ends, and the other op's calls are counted.
func TestCallsInTurnEndWhenAnOpAlwaysFails(t *testing.T) {
	ok := Op{Do: func(context.Context, *Worker) error { time.Sleep(time.Millisecond); return nil }}
	failing := Op{Do: func(context.Context, *Worker) error { time.Sleep(time.Millisecond); return errors.New("down") }}
	began := time.Now()
	got := (&Env{}).measureCallsInTurn(t.Context(), Load{Duration: 100 * time.Millisecond}, []Op{ok, failing}, 1, "failing")
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the measurement took %s", took)
	}
	if got[0].Requests == 0 || got[1].Requests != 0 || got[1].Errors == 0 {
		t.Errorf("calls %d and %d, errors %d and %d; want the first counted, the second all errors", got[0].Requests, got[1].Requests, got[0].Errors, got[1].Errors)
	}
}

// The meter a pair is measured with reads the processes it was made with,
// and a process that ends keeps the CPU time read of it last, so that the
// difference of two readings is never negative.
func TestCPUMeterReadsItsProcessesAndKeepsOnesThatEnded(t *testing.T) {
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	ended := false
	t.Cleanup(func() {
		if !ended {
			busy.Process.Kill()
			busy.Wait()
		}
	})
	meter := (&Env{processes: map[string]loadedProcess{"busy": {pid: busy.Process.Pid}}}).newCPUMeter()
	if len(meter.processes) != 2 {
		t.Fatalf("metered %+v; want the busy process and this one", meter.processes)
	}
	var read map[string]float64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		read = meter.now()
		if read["busy"] >= 0.05 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the busy process spent %.2f s of CPU in 10 s", read["busy"])
		}
	}
	if read["loadgen"] <= 0 {
		t.Errorf("this process read %.2f s", read["loadgen"])
	}
	busy.Process.Kill()
	busy.Wait()
	ended = true
	if after := meter.now(); after["busy"] < read["busy"] {
		t.Errorf("the ended process reads %.2f s after %.2f s", after["busy"], read["busy"])
	}
}

// The table's heading gives the run's number of clients, and names each
// row that runs a number of its own.
func TestPrintNamesTheRowsWithClientsOfTheirOwn(t *testing.T) {
	r := newResults(Options{Load: Load{Concurrency: 16}, Rounds: 1}, []Row{{Name: "many"}, {Name: "one", Clients: 1}, {Name: "same", Clients: 16}, {Name: "four", Clients: 4}}, time.Now())
	for i := range r.Rows {
		r.add(i, RowSample{Sample: Sample{Requests: 10, P99: time.Millisecond}})
	}
	var out strings.Builder
	r.Print(&out)
	heading, _, _ := strings.Cut(out.String(), "\nrow ")
	if !strings.Contains(heading, "16 concurrent clients,") || !strings.Contains(heading, "one client instead: one\n") ||
		!strings.Contains(heading, "4 concurrent clients instead: four\n") {
		t.Errorf("heading %q; want the run's 16 clients, the row one's 1 and the row four's 4", heading)
	}
	if strings.Contains(heading, ": many") || strings.Contains(heading, ": same") {
		t.Errorf("heading %q names a row that runs the run's clients", heading)
	}
}

// The row without the log runs the consumer's insert with nothing of the
// log left in it, and nothing else taken out.
func TestUnloggedInsertIsTheConsumersWithoutLeaves(t *testing.T) {
	for _, word := range []string{"leaf", "log_state", "row_number"} {
		if strings.Contains(unloggedInsert, word) {
			t.Errorf("the insert without the log still holds %q:\n%s", word, unloggedInsert)
		}
	}
	taken := len(feed.InsertEvents) - len(unloggedInsert)
	want := 0
	for _, p := range leafParts {
		want += len(p.from) - len(p.to)
	}
	if taken != want {
		t.Errorf("%d bytes taken out of the consumer's insert; want the leaves' %d", taken, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("an insert without leaf numbers was taken as the consumer's")
		}
	}()
	withoutLeaves(unloggedInsert)
}

// The promised figures' rows need a full window or a seed of their own:
// the short run inside make test must not grow by them.
func TestPromisedRowsAreLeftOutOfTheShortRun(t *testing.T) {
	promised := []string{LogTiles, ReadingsBatch, AssetsFirstPage.Name(), AssetsFirstPage.StoreName(), ActionsFirstPage.Name(), ActionsFirstPage.StoreName(), ComponentsPageName}
	for _, r := range shortRows(AllRows()) {
		for _, p := range promised {
			if strings.HasPrefix(r.Name, p) {
				t.Errorf("the short run measures %q", r.Name)
			}
		}
	}
}

// clockedLines prefixes each line written through it with the seconds
// since start.
type clockedLines struct {
	w         io.Writer
	start     time.Time
	lineStart bool
}

func (c *clockedLines) Write(p []byte) (int, error) {
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if c.lineStart {
			fmt.Fprintf(c.w, "%6.1fs ", time.Since(c.start).Seconds())
		}
		if _, err := c.w.Write(line); err != nil {
			return 0, err
		}
		c.lineStart = line[len(line)-1] == '\n'
	}
	return len(p), nil
}
