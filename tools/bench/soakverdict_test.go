package bench

import (
	"strings"
	"testing"
	"time"
)

func TestSoakRSSIsFlatOnlyWithoutGrowth(t *testing.T) {
	for _, c := range []struct {
		name   string
		series []float64
		pass   bool
	}{
		{"flat", []float64{100, 101, 99, 100, 102, 100, 101, 100}, true},
		{"garbage-collection saw-tooth", []float64{100, 120, 100, 121, 99, 119, 101, 118}, true},
		{"one spike at the end", []float64{100, 100, 100, 100, 100, 100, 150, 100}, true},
		{"grows 9 %", []float64{100, 101, 102, 103, 105, 107, 108, 109}, true},
		{"grows 12 %", []float64{100, 101, 103, 105, 107, 109, 111, 112}, false},
		{"grows steadily", []float64{100, 110, 120, 130, 140, 150, 160, 170}, false},
		{"shrinks", []float64{200, 180, 160, 150, 150, 150, 150, 150}, true},
		{"gone at the end: a crash looks flat", []float64{100, 100, 100, 100, 100, 0}, false},
		{"too few samples", []float64{100}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := rssCheck("events", c.series)
			if got.Pass != c.pass {
				t.Errorf("%v: pass %v (growth %.1f %%, %s), want %v", c.series, got.Pass, got.Value, got.Detail, c.pass)
			}
		})
	}
}

func TestSoakRSSCountsOnlyAfterTheWarmup(t *testing.T) {
	// Growing through the warm-up (pools, caches) and flat after it.
	var samples []SoakSample
	for i, mib := range []float64{20, 40, 60, 80, 80, 81, 80, 80, 81, 80} {
		samples = append(samples, SoakSample{AtS: float64(10 * (i + 1)), RSSMiB: map[string]float64{"api-gateway": mib}})
	}
	if c := uncachedRSSCheck("api-gateway", samples, 40); !c.Pass {
		t.Errorf("after a 40 s warm-up: %+v, want a pass", c)
	}
	if c := uncachedRSSCheck("api-gateway", samples, 0); c.Pass {
		t.Errorf("without a warm-up: %+v, want a failure", c)
	}
}

func TestSoakRSSLessItsBoundedCaches(t *testing.T) {
	// The hour-long soak's events process: 46 → 69 MiB, linearly, while
	// the log's tiles it keeps for proofs grew.
	rss := []float64{46, 49, 52, 55, 58, 61, 64, 67, 69}
	for _, c := range []struct {
		name   string
		caches []float64 // nil: the process reports no cache
		pass   bool
	}{
		{"no cache reported: a leak for all the verdict knows", nil, false},
		{"a cache that grew as much", []float64{2, 5, 8, 11, 14, 17, 20, 23, 25}, true},
		{"a cache that grew a third as much: the rest is growth", []float64{2, 3, 4, 5, 6, 7, 8, 9, 10}, false},
		{"a flat cache", []float64{20, 20, 20, 20, 20, 20, 20, 20, 20}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var samples []SoakSample
			for i, mib := range rss {
				s := SoakSample{AtS: float64(10 * (i + 1)), RSSMiB: map[string]float64{"events": mib}}
				if c.caches != nil {
					s.CacheMiB = map[string]float64{"events": c.caches[i]}
				}
				samples = append(samples, s)
			}
			got := uncachedRSSCheck("events", samples, 0)
			if got.Pass != c.pass {
				t.Errorf("pass %v (growth %.1f %%, %s), want %v", got.Pass, got.Value, got.Detail, c.pass)
			}
		})
	}
	t.Run("gone in a sample, its cache reported before", func(t *testing.T) {
		samples := []SoakSample{
			{AtS: 10, RSSMiB: map[string]float64{"events": 46}, CacheMiB: map[string]float64{"events": 2}},
			{AtS: 20, RSSMiB: map[string]float64{"events": 46}, CacheMiB: map[string]float64{"events": 2}},
			{AtS: 30, RSSMiB: map[string]float64{}},
		}
		if got := uncachedRSSCheck("events", samples, 0); got.Pass {
			t.Errorf("%+v, want a failure: a crash looks flat", got)
		}
	})
}

func TestSoakVerdict(t *testing.T) {
	flat := []SoakSample{
		{AtS: 10, RSSMiB: map[string]float64{"parties": 50, "postgres": 200}},
		{AtS: 20, RSSMiB: map[string]float64{"parties": 51, "postgres": 201}},
		{AtS: 30, RSSMiB: map[string]float64{"parties": 50, "postgres": 200}},
		{AtS: 40, RSSMiB: map[string]float64{"parties": 51, "postgres": 202}},
	}
	good := soakFigures{Samples: flat, QuietP99: 20 * time.Millisecond, NoisyP99: 25 * time.Millisecond,
		WritesAcked: 1000, WritesFound: 1000, WritesInFeed: 1000, NoisyLimited: 5000}
	for _, c := range []struct {
		name   string
		change func(f *soakFigures)
		failed string // the one check that fails; "" for none
	}{
		{"all good", func(*soakFigures) {}, ""},
		{"p99 at 1.5 × quiet", func(f *soakFigures) { f.NoisyP99 = 30 * time.Millisecond }, ""},
		{"p99 at 1.6 × quiet", func(f *soakFigures) { f.NoisyP99 = 32 * time.Millisecond }, "p99 beside the noisy client"},
		{"no call in the quiet phase", func(f *soakFigures) { f.QuietP99 = 0 }, "p99 beside the noisy client"},
		{"an error", func(f *soakFigures) { f.Errors = 1 }, "well-behaved clients' errors"},
		{"a write lost", func(f *soakFigures) { f.WritesFound = 999 }, "missing from the database"},
		{"no write at all", func(f *soakFigures) { f.WritesAcked, f.WritesFound, f.WritesInFeed = 0, 0, 0 }, "missing from the"},
		{"an event not delivered", func(f *soakFigures) { f.WritesInFeed = 999 }, "missing from the change feed"},
		{"noisy client never refused", func(f *soakFigures) { f.NoisyLimited = 0 }, "noisy client refused"},
		{"a process grows", func(f *soakFigures) {
			f.Samples = append([]SoakSample(nil), flat...)
			f.Samples = append(f.Samples, SoakSample{AtS: 50, RSSMiB: map[string]float64{"parties": 70, "postgres": 200}},
				SoakSample{AtS: 60, RSSMiB: map[string]float64{"parties": 80, "postgres": 200}})
		}, "RSS growth after warm-up: parties"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := good
			c.change(&f)
			checks := judgeSoak(f)
			if len(checks) != 7 { // two processes and five checks of the whole
				t.Fatalf("%d checks: %+v", len(checks), checks)
			}
			for _, check := range checks {
				wantFail := c.failed != "" && strings.Contains(check.Name, c.failed)
				if check.Pass == wantFail {
					t.Errorf("%s: pass %v (value %.2f, %s)", check.Name, check.Pass, check.Value, check.Detail)
				}
			}
			if soakPassed(checks) != (c.failed == "") {
				t.Errorf("passed %v", soakPassed(checks))
			}
		})
	}
}

func TestParseBudget(t *testing.T) {
	calls, window, err := parseBudget("6000/60s")
	if err != nil || calls != 6000 || window != time.Minute {
		t.Errorf("6000/60s: %v %v %v", calls, window, err)
	}
	for _, bad := range []string{"", "6000", "x/60s", "6000/x", "0/60s", "10/0s"} {
		if _, _, err := parseBudget(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
