package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// The soak's pass marks.
const (
	// soakRSSGrowthMax is how much a process's resident set may grow
	// between the end of the warm-up and the end of the run.
	soakRSSGrowthMax = 0.10
	// soakP99RatioMax bounds the well-behaved clients' p99 beside the
	// noisy client, as a multiple of their p99 without it.
	soakP99RatioMax = 1.5
)

// SoakSample is what the soak recorded in one sampling interval.
type SoakSample struct {
	AtS   float64 `json:"at_s"`  // end of the interval, seconds since the paced load began
	Phase string  `json:"phase"` // "quiet" or "noisy"
	// The well-behaved clients' calls that ended in the interval.
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	PerSec   float64 `json:"req_per_s"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	// Behind counts the calls the pacer could not hand to a free client
	// (the load generator, not the registry, fell short).
	Behind int `json:"behind,omitempty"`
	// The noisy client's calls: answered 2xx, refused with 429, anything
	// else (a failure to connect included).
	NoisyOK    int `json:"noisy_ok,omitempty"`
	NoisyLimit int `json:"noisy_429,omitempty"`
	NoisyOther int `json:"noisy_other,omitempty"`
	// RSSMiB is every process's resident set at the end of the interval
	// (a datastore's is the sum over its processes without shared memory).
	RSSMiB map[string]float64 `json:"rss_mib"`
	// CacheMiB is what each process's bounded caches said they held at the
	// end of the interval (registry_cache_bytes; a process without one is
	// left out): a cache filling up to its bound as the data it covers
	// grows is no leak, and the RSS check takes it off the resident set.
	CacheMiB    map[string]float64 `json:"cache_mib,omitempty"`
	LoadAverage float64            `json:"load_average_1m"`
}

// soakFigures are what the verdict is made of.
type soakFigures struct {
	WarmupS  float64 // samples before it do not count for the resident sets
	Samples  []SoakSample
	QuietP99 time.Duration // the well-behaved clients' p99 before the noisy client began
	NoisyP99 time.Duration // and beside it
	Errors   int           // the well-behaved clients' failed calls, the whole paced load
	// Writes acknowledged (2xx with an id) and found in the database at
	// the end.
	WritesAcked, WritesFound int
	// WritesInFeed is how many acknowledged writes' created events the
	// change feed delivered to its follower.
	WritesInFeed int
	NoisyLimited int // 429s the noisy client got
}

// SoakCheck is one line of the verdict.
type SoakCheck struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit string  `json:"limit"`
	Pass  bool    `json:"pass"`
	// Detail says what the value is made of.
	Detail string `json:"detail,omitempty"`
}

// judgeSoak checks every process's resident set, the p99 beside the noisy
// client, the well-behaved clients' errors and that nothing acknowledged
// was lost.
func judgeSoak(f soakFigures) []SoakCheck {
	var checks []SoakCheck
	for _, name := range soakProcesses(f.Samples) {
		checks = append(checks, uncachedRSSCheck(name, f.Samples, f.WarmupS))
	}
	p99 := SoakCheck{Name: "p99 beside the noisy client ÷ quiet p99", Limit: fmt.Sprintf("≤ %.1f", soakP99RatioMax),
		Detail: fmt.Sprintf("%.1f ms ÷ %.1f ms", ms(f.NoisyP99), ms(f.QuietP99))}
	if f.QuietP99 > 0 && f.NoisyP99 > 0 {
		p99.Value = float64(f.NoisyP99) / float64(f.QuietP99)
		p99.Pass = p99.Value <= soakP99RatioMax
	} else {
		p99.Detail += " (a phase without a call)"
	}
	checks = append(checks, p99,
		SoakCheck{Name: "well-behaved clients' errors", Value: float64(f.Errors), Limit: "0", Pass: f.Errors == 0},
		SoakCheck{Name: "acknowledged writes missing from the database", Value: float64(f.WritesAcked - f.WritesFound), Limit: "0",
			Pass: f.WritesAcked > 0 && f.WritesFound == f.WritesAcked, Detail: fmt.Sprintf("%d found of %d", f.WritesFound, f.WritesAcked)},
		SoakCheck{Name: "acknowledged writes missing from the change feed", Value: float64(f.WritesAcked - f.WritesInFeed), Limit: "0",
			Pass: f.WritesAcked > 0 && f.WritesInFeed == f.WritesAcked, Detail: fmt.Sprintf("%d delivered of %d", f.WritesInFeed, f.WritesAcked)},
		// Without a single 429 the noisy client never went past its
		// budget and the p99 check above compared nothing.
		SoakCheck{Name: "noisy client refused (429)", Value: float64(f.NoisyLimited), Limit: "> 0", Pass: f.NoisyLimited > 0})
	return checks
}

// soakPassed is whether every check passed.
func soakPassed(checks []SoakCheck) bool {
	return len(checks) > 0 && !slices.ContainsFunc(checks, func(c SoakCheck) bool { return !c.Pass })
}

// soakProcesses are the processes any sample saw, sorted.
func soakProcesses(samples []SoakSample) []string {
	seen := map[string]bool{}
	for _, s := range samples {
		for name := range s.RSSMiB {
			seen[name] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// rssSeries is a process's resident set in the samples after the warm-up,
// oldest first (0 where a sample did not find it), and what its bounded
// caches held in the same samples.
func rssSeries(samples []SoakSample, name string, warmupS float64) (rss, caches []float64) {
	for _, s := range samples {
		if s.AtS >= warmupS {
			rss = append(rss, s.RSSMiB[name])
			caches = append(caches, s.CacheMiB[name])
		}
	}
	return rss, caches
}

// uncachedRSSCheck is rssCheck of a process's resident set less what its
// bounded caches held: a cache's growth is judged by the cache's own bound,
// not as the process's. A sample where the process was gone stays 0.
func uncachedRSSCheck(name string, samples []SoakSample, warmupS float64) SoakCheck {
	rss, caches := rssSeries(samples, name, warmupS)
	if !slices.ContainsFunc(caches, func(mib float64) bool { return mib > 0 }) {
		return rssCheck(name, rss)
	}
	uncached := make([]float64, len(rss))
	for i := range rss {
		if rss[i] > 0 {
			uncached[i] = rss[i] - caches[i]
		}
	}
	c := rssCheck(name, uncached)
	c.Detail = fmt.Sprintf("less its bounded caches (%.1f → %.1f MiB of a resident set of %.1f → %.1f): %s",
		caches[0], caches[len(caches)-1], rss[0], rss[len(rss)-1], c.Detail)
	return c
}

// rssCheck says whether a resident set stayed flat: its trend over the
// samples after the warm-up grows it by at most soakRSSGrowthMax. The
// trend is the median of the slopes between every two samples (Theil–Sen),
// so neither a garbage collector's saw-tooth nor one spike reads as
// growth, and a steady climb does whatever the noise around it. A process
// that was gone in any sample fails: a crash looks flat.
func rssCheck(name string, series []float64) SoakCheck {
	c := SoakCheck{Name: "RSS growth after warm-up: " + name, Limit: fmt.Sprintf("≤ %.0f %%", soakRSSGrowthMax*100)}
	if len(series) < 2 {
		c.Detail = fmt.Sprintf("%d samples after the warm-up, too few", len(series))
		return c
	}
	if slices.Contains(series, 0) {
		c.Detail = "gone in a sample (exited, or restarted)"
		return c
	}
	start, end := trend(series)
	growth := end/start - 1
	c.Value = growth * 100
	c.Pass = growth <= soakRSSGrowthMax
	c.Detail = fmt.Sprintf("trend %.1f → %.1f MiB; samples %.1f → %.1f, peak %.1f", start, end, series[0], series[len(series)-1], slices.Max(series))
	return c
}

// trend is the Theil–Sen line through the series (x = its index): its
// values at the first and the last sample.
func trend(series []float64) (start, end float64) {
	var slopes []float64
	for i := range series {
		for j := i + 1; j < len(series); j++ {
			slopes = append(slopes, (series[j]-series[i])/float64(j-i))
		}
	}
	slope := median(slopes)
	intercepts := make([]float64, len(series))
	for i, y := range series {
		intercepts[i] = y - slope*float64(i)
	}
	start = median(intercepts)
	return start, start + slope*float64(len(series)-1)
}

// printSoakVerdict writes the verdict as a table.
func printSoakVerdict(w io.Writer, checks []SoakCheck) {
	fmt.Fprintf(w, "\n%s %10s %8s %-5s %s\n", pad("check", 58), "value", "limit", "", "detail")
	for _, c := range checks {
		result := "pass"
		if !c.Pass {
			result = "FAIL"
		}
		fmt.Fprintf(w, "%s %10.2f %8s %-5s %s\n", pad(c.Name, 58), c.Value, c.Limit, result, c.Detail)
	}
	if soakPassed(checks) {
		fmt.Fprintln(w, "\nsoak: passed")
	} else {
		fmt.Fprintln(w, "\nsoak: FAILED")
	}
}
