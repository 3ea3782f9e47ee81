package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Results are a run: written to results.json and printed as the table.
type Results struct {
	Started     time.Time     `json:"started"`
	Seconds     float64       `json:"seconds"`
	CPUs        int           `json:"cpus"`
	Concurrency int           `json:"concurrency"`
	WarmupS     float64       `json:"warmup_s"`
	DurationS   float64       `json:"duration_s"`
	Rounds      int           `json:"rounds"`
	Rows        []RowResult   `json:"rows"`
	Goals       []GoalValue   `json:"goals"`
	Import      *ImportResult `json:"import,omitempty"`
	// ComplianceLag is measured once, after the rows, when the compliance
	// rows ran.
	ComplianceLag *ComplianceLag `json:"compliance_lag,omitempty"`
	// ComplianceRoll is measured after the lag, outside QUICK=1.
	ComplianceRoll *ComplianceRoll `json:"compliance_roll,omitempty"`
}

// RowResult is a row over all rounds.
type RowResult struct {
	Name    string      `json:"name"`
	Via     string      `json:"via"`
	Limit   string      `json:"limit,omitempty"`
	Clients int         `json:"clients,omitempty"` // when the row runs a number of its own, not the run's
	Samples []RowSample `json:"samples"`           // one per round
	// RatioToLimit is req/s divided by the limit row's req/s of the same
	// round, one per round.
	RatioToLimit []float64 `json:"ratio_to_limit,omitempty"`
	// PerCore is how many of the row's requests one core of each process
	// serves per second (1000 ÷ its CPU ms per request, median of the
	// rounds), and under "all" one core of the registry and its
	// datastores together (the load generator left out): the rates a
	// capacity model sizes replicas and cores by. CPU time per request
	// hardly depends on how busy the machine is, so these hold where the
	// row's req/s, which is bounded by the machine, does not.
	PerCore map[string]float64 `json:"per_core,omitempty"`
}

// perCoreAll is PerCore's key for the registry and its datastores together.
const perCoreAll = "all"

// GoalValue is a goal's ratio in each round.
type GoalValue struct {
	Goal
	Values []float64 `json:"values"`
	Met    bool      `json:"met"` // in every round
}

func newResults(o Options, rows []Row, started time.Time) *Results {
	r := &Results{Started: started.UTC(), CPUs: runtime.NumCPU(), Concurrency: o.Load.Concurrency,
		WarmupS: o.Load.Warmup.Seconds(), DurationS: o.Load.Duration.Seconds(), Rounds: o.Rounds}
	for _, row := range rows {
		r.Rows = append(r.Rows, RowResult{Name: row.Name, Via: row.Via, Limit: row.Limit, Clients: row.Clients})
	}
	return r
}

func (r *Results) add(i int, s RowSample) { r.Rows[i].Samples = append(r.Rows[i].Samples, s) }

func (r *Results) row(name string) *RowResult {
	for i := range r.Rows {
		if r.Rows[i].Name == name {
			return &r.Rows[i]
		}
	}
	return nil
}

func (r *Results) finish(now time.Time) {
	r.Seconds = math.Round(now.Sub(r.Started).Seconds())
	for i := range r.Rows {
		row := &r.Rows[i]
		if limit := r.row(row.Limit); limit != nil {
			for k, s := range row.Samples {
				row.RatioToLimit = append(row.RatioToLimit, ratio(s.PerSec, limit.Samples[k].PerSec))
			}
		}
	}
	for i := range r.Rows {
		r.Rows[i].PerCore = perCore(r.Rows[i].cpuByProcess())
	}
	for _, g := range Goals {
		row := r.row(g.Row)
		of := r.row(g.Of)
		if row == nil || (g.Of != "" && of == nil) {
			continue // a goal whose rows were not run
		}
		v := GoalValue{Goal: g, Met: true}
		for k, s := range row.Samples {
			var x float64
			switch {
			case g.Metric == "rss":
				x = s.PeakRSSMiB[g.Process]
			case g.Metric == "p99 s":
				x = s.P99.Seconds()
			case g.Metric == "p50 s":
				x = s.P50.Seconds()
			case g.Metric == "p99/p50":
				x = ratio(float64(s.P99), float64(s.P50))
			case g.Metric == "p50" && of != nil:
				x = ratio(float64(s.P50), float64(of.Samples[k].P50))
			case g.Metric == "p99" && of != nil:
				x = ratio(float64(s.P99), float64(of.Samples[k].P99))
			case of != nil:
				x = ratio(s.PerSec*max(g.Items, 1), of.Samples[k].PerSec)
			default:
				x = ratio(s.PerSec*max(g.Items, 1), g.Value)
			}
			v.Values = append(v.Values, x)
			if g.AtLeast > 0 && x < g.AtLeast || g.AtMost > 0 && x > g.AtMost {
				v.Met = false
			}
			// A row that counted no request measured nothing: its 0 would
			// meet every "at most" goal.
			if s.Requests == 0 || of != nil && of.Samples[k].Requests == 0 {
				v.Met = false
			}
		}
		r.Goals = append(r.Goals, v)
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
}

func (r *Results) write(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// Print writes the table: medians over the rounds with the range beside
// them, so the noise of the shared machine shows.
func (r *Results) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%d rounds × %d rows, %d concurrent clients, %s warm-up + %s measured per row, %d CPUs, %s in all\n",
		r.Rounds, len(r.Rows), r.Concurrency, secs(r.WarmupS), secs(r.DurationS), r.CPUs, secs(r.Seconds))
	for _, row := range r.Rows {
		if row.Clients > 0 && row.Clients != r.Concurrency {
			clients := fmt.Sprintf("%d concurrent clients", row.Clients)
			if row.Clients == 1 {
				clients = "one client"
			}
			fmt.Fprintf(w, "  %s instead: %s\n", clients, row.Name)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s %s %7s %8s %6s %s %-12s %s\n", pad("row", 46), pad("req/s (min–max)", 18), "p50 ms", "p99 ms", "errors", pad("÷ limit (min–max)", 18), "cache hits", "limit")
	for _, row := range r.Rows {
		perSec := collect(row.Samples, func(s RowSample) float64 { return s.PerSec })
		p50 := collect(row.Samples, func(s RowSample) float64 { return ms(s.P50) })
		p99 := collect(row.Samples, func(s RowSample) float64 { return ms(s.P99) })
		errs := 0
		for _, s := range row.Samples {
			errs += s.Errors
		}
		ratios := ""
		if len(row.RatioToLimit) > 0 {
			ratios = fmt.Sprintf("%.2f (%.2f–%.2f)", median(row.RatioToLimit), slices.Min(row.RatioToLimit), slices.Max(row.RatioToLimit))
		}
		fmt.Fprintf(w, "%s %s %7.2f %8.2f %6d %s %-12s %s\n", pad(row.Name, 46),
			pad(fmt.Sprintf("%s (%s–%s)", rate(median(perSec)), rate(slices.Min(perSec)), rate(slices.Max(perSec))), 18),
			median(p50), median(p99), errs, pad(ratios, 18), cacheRates(row.Samples), shorten(row.Limit))
	}
	for _, row := range r.Rows {
		var unchecked float64
		for _, s := range row.Samples {
			unchecked += s.FailOpen
		}
		if unchecked > 0 {
			fmt.Fprintf(w, "%s: %.0f calls whose budget Redis did not check (slower than rate-limit.timeout; the replica's share of the budget checked them)\n", row.Name, unchecked)
		}
	}
	if len(r.Goals) > 0 {
		fmt.Fprintf(w, "\n%s %s %s\n", pad("goal (ratio of the same round)", 52), pad("ratio (min–max)", 22), "met in every round")
		for _, g := range r.Goals {
			met := "no"
			if g.Met {
				met = "yes"
			}
			format := "%.2f (%.2f–%.2f)"
			switch g.Metric {
			case "rss":
				format = "%.0f MiB (%.0f–%.0f)"
			case "p99 s", "p50 s":
				format = "%.3f s (%.3f–%.3f)"
			}
			fmt.Fprintf(w, "%s %s %s\n", pad(g.Name, 52), pad(fmt.Sprintf(format, median(g.Values), slices.Min(g.Values), slices.Max(g.Values)), 22), met)
		}
	}
	r.printCPU(w)
	r.printFiles(w)
	if r.Import != nil {
		r.Import.print(w)
	}
	r.printEvents(w)
	var loads []float64
	for _, row := range r.Rows {
		loads = append(loads, collect(row.Samples, func(s RowSample) float64 { return s.LoadAverage })...)
	}
	if r.ComplianceLag != nil {
		fmt.Fprintf(w, "\n%s (goal: p99 ≤ 2000 ms)\n", r.ComplianceLag)
	}
	if r.ComplianceRoll != nil {
		fmt.Fprintf(w, "\n%s\n", r.ComplianceRoll)
	}
	if len(loads) > 0 {
		fmt.Fprintf(w, "\nmachine load average (1 min) after each row: %.1f–%.1f\n", slices.Min(loads), slices.Max(loads))
	}
}

// printCPU shows where each row's requests spent the machine's CPU: the
// median over the rounds of each process's CPU ms per request, largest
// first, after their sum.
func (r *Results) printCPU(w io.Writer) {
	header := false
	for _, row := range r.Rows {
		byProcess := row.cpuByProcess()
		if len(byProcess) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nCPU ms per request in the measured window (median of the rounds): whole machine = processes\n")
			header = true
		}
		names := slices.Collect(maps.Keys(byProcess))
		slices.SortFunc(names, func(a, b string) int { return cmp.Compare(median(byProcess[b]), median(byProcess[a])) })
		var total float64
		parts := make([]string, 0, len(names))
		for _, name := range names {
			total += median(byProcess[name])
			parts = append(parts, fmt.Sprintf("%s %.3f", name, median(byProcess[name])))
		}
		fmt.Fprintf(w, "%s %.3f = %s\n", pad(row.Name, 46), total, strings.Join(parts, ", "))
	}
	header = false
	for _, row := range r.Rows {
		if len(row.PerCore) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nrequests per second per core (1000 ÷ CPU ms per request): all = the registry and its datastores together, then each process\n")
			header = true
		}
		names := slices.Collect(maps.Keys(row.PerCore))
		names = slices.DeleteFunc(names, func(n string) bool { return n == perCoreAll })
		slices.SortFunc(names, func(a, b string) int { return cmp.Compare(row.PerCore[a], row.PerCore[b]) })
		parts := make([]string, 0, len(names))
		for _, name := range names {
			parts = append(parts, name+" "+rate(row.PerCore[name]))
		}
		fmt.Fprintf(w, "%s all %s: %s\n", pad(row.Name, 46), rate(row.PerCore[perCoreAll]), strings.Join(parts, ", "))
	}
}

// cpuByProcess is each process's CPU ms per request in every round. A
// process a round left out (under 1 % of the whole) counts as 0 in that
// round.
func (row RowResult) cpuByProcess() map[string][]float64 {
	byProcess := map[string][]float64{}
	for _, s := range row.Samples {
		for name := range s.CPUPerRequestMs {
			byProcess[name] = nil
		}
	}
	for name := range byProcess {
		for _, s := range row.Samples {
			if s.CPUPerRequestMs != nil {
				byProcess[name] = append(byProcess[name], s.CPUPerRequestMs[name])
			}
		}
	}
	return byProcess
}

// perCore turns CPU ms per request into requests per second per core,
// per process and for all of them but the load generator together.
func perCore(byProcess map[string][]float64) map[string]float64 {
	out := map[string]float64{}
	var all float64
	for name, ms := range byProcess {
		m := median(ms)
		if name == "loadgen" || m <= 0 {
			continue
		}
		all += m
		out[name] = math.Round(1000 / m)
	}
	if all == 0 {
		return nil
	}
	out[perCoreAll] = math.Round(1000 / all)
	return out
}

// printFiles shows the rows that move files in MiB/s, with the largest
// resident set the documents service and the gateway reached during each.
func (r *Results) printFiles(w io.Writer) {
	header := false
	for _, row := range r.Rows {
		if len(row.Samples) == 0 || row.Samples[0].Bytes == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\n%s %9s %s %s\n", pad("files", 52), "file", pad("MiB/s (min–max)", 18), "RSS MiB (min–max): documents at start → peak, api-gateway peak")
			header = true
		}
		rate := collect(row.Samples, func(s RowSample) float64 { return s.MiBPerSec })
		start := collect(row.Samples, func(s RowSample) float64 { return s.StartRSSMiB["documents"] })
		docs := collect(row.Samples, func(s RowSample) float64 { return s.PeakRSSMiB["documents"] })
		gateway := collect(row.Samples, func(s RowSample) float64 { return s.PeakRSSMiB["api-gateway"] })
		fmt.Fprintf(w, "%s %9s %s %s → %s, %s\n", pad(row.Name, 52), size(row.Samples[0].Bytes),
			pad(fmt.Sprintf("%.0f (%.0f–%.0f)", median(rate), slices.Min(rate), slices.Max(rate)), 18), span(start), span(docs), span(gateway))
	}
}

// printEvents shows the relay's row in events per second.
func (r *Results) printEvents(w io.Writer) {
	for _, row := range r.Rows {
		if len(row.Samples) == 0 || row.Samples[0].EventsPerSec == 0 {
			continue
		}
		rate := collect(row.Samples, func(s RowSample) float64 { return s.EventsPerSec })
		fmt.Fprintf(w, "\n%s events/s %.0f (%.0f–%.0f)\n", pad(row.Name, 52), median(rate), slices.Min(rate), slices.Max(rate))
	}
}

// span is the range of xs, "a–b" (or "a" when all are equal).
func span(xs []float64) string {
	lo, hi := slices.Min(xs), slices.Max(xs)
	if math.Round(lo) == math.Round(hi) {
		return fmt.Sprintf("%.0f", lo)
	}
	return fmt.Sprintf("%.0f–%.0f", lo, hi)
}

// rate prints a request rate: whole numbers, or two decimals below 10/s
// (uploads of seconds).
func rate(perSec float64) string {
	if perSec < 10 {
		return fmt.Sprintf("%.2f", perSec)
	}
	return fmt.Sprintf("%.0f", perSec)
}

func size(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
}

// shorten keeps the limit column narrow: the row names are above.
func shorten(name string) string {
	if r := []rune(name); len(r) > 34 {
		return string(r[:33]) + "…"
	}
	return name
}

// pad left-aligns s in n columns, counting characters, not bytes.
func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

func cacheRates(samples []RowSample) string {
	var parts []string
	for _, s := range samples {
		if s.CacheHitRate != nil {
			parts = append(parts, fmt.Sprintf("%.0f", 100**s.CacheHitRate))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "/") + "%"
}

func collect(samples []RowSample, f func(RowSample) float64) []float64 {
	out := make([]float64, len(samples))
	for i, s := range samples {
		out[i] = f(s)
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func secs(s float64) string { return (time.Duration(s * float64(time.Second))).String() }
