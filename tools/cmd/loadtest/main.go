// Command loadtest starts a private registry (the real binaries, as make run
// does, on free ports) and drives it through the gateway with a mix of the
// calls integrations make, then reports throughput, latency percentiles
// and the memory of each process. `make bench` runs it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/devinfra"
	"github.com/assetregistry/registry/tools/devstack"
)

func main() {
	bin := flag.String("bin", "bin", "directory with the built binaries")
	duration := flag.Duration("duration", 20*time.Second, "how long to measure")
	workers := flag.Int("workers", 16, "concurrent clients")
	people := flag.Int("people", 2000, "people to seed before measuring")
	flag.Parse()
	if err := run(*bin, *duration, *workers, *people); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(bin string, duration time.Duration, workers, seedPeople int) error {
	dir, err := devinfra.MkdirTemp("loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	stack, err := devstack.Start(ctx, devstack.Options{Dir: dir, BinDir: bin, Ephemeral: true, Database: "registry"})
	if err != nil {
		return err
	}
	defer stack.Stop() //nolint:errcheck // best effort at exit
	creds, err := stack.EnsureClients(ctx, filepath.Join(dir, "registry.env"))
	if err != nil {
		return err
	}
	c := &client{base: stack.RegistryURL, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}}
	if c.token, err = fetchToken(creds); err != nil {
		return err
	}

	fmt.Printf("seeding %d people and %d organizations...\n", seedPeople, seedPeople/10)
	orgs, err := seed(c, seedPeople, workers)
	if err != nil {
		return err
	}

	fmt.Printf("measuring %s with %d workers...\n", duration, workers)
	dbBefore, err := databaseTransactions(ctx, stack.DatabaseURL)
	if err != nil {
		return err
	}
	cacheBefore := cacheResults(stack.MetricsURLs["parties"])
	stats := newStats()
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for n := 0; time.Now().Before(deadline); n++ {
				op, method, path, body, want := pick(rng, w, n, seedPeople, orgs)
				start := time.Now()
				status, err := c.do(method, path, body)
				stats.record(op, time.Since(start), err == nil && slices.Contains(want, status))
			}
		})
	}
	wg.Wait()
	total := stats.print(duration)
	dbAfter, err := databaseTransactions(ctx, stack.DatabaseURL)
	if err != nil {
		return err
	}
	cacheAfter := cacheResults(stack.MetricsURLs["parties"])
	fmt.Printf("\ndatabase transactions per request: %.2f\n", float64(dbAfter-dbBefore)/float64(total))
	hits, lookups := cacheAfter["hit"]-cacheBefore["hit"], 0.0
	for result, n := range cacheAfter {
		lookups += n - cacheBefore[result]
	}
	if lookups > 0 {
		fmt.Printf("find cache: %.0f lookups, %.0f%% hits\n", lookups, 100*hits/lookups)
	}
	printMemory(stack.Pids)
	return nil
}

// pick chooses the next call: mostly reads and finds (as integrations
// check before they write), some find-or-creates and links.
func pick(rng *rand.Rand, worker, n, seeded int, orgs []string) (op, method, path string, body any, want []int) {
	i := rng.IntN(seeded)
	org := orgs[rng.IntN(len(orgs))]
	switch r := rng.IntN(100); {
	case r < 40:
		return "find person (hit)", "POST", "/people/find", person(i), []int{200}
	case r < 60:
		return "get organization", "GET", "/organizations/" + org, nil, []int{200}
	case r < 70:
		return "list people", "GET", fmt.Sprintf("/people?limit=50&last_name=Last%d", i), nil, []int{200}
	case r < 75:
		return "list organizations", "GET", "/organizations?limit=100", nil, []int{200}
	case r < 90:
		return "find-or-create person", "POST", "/people/find?create=true",
			map[string]any{"first_name": fmt.Sprintf("New%d", worker), "last_name": fmt.Sprintf("Person%d", n), "date_of_birth": "1990-01-01"}, []int{200, 201}
	default:
		return "find organization", "POST", "/organizations/find",
			map[string]any{"registration_number": fmt.Sprintf("REG%d", rng.IntN(len(orgs))), "country": "no"}, []int{200}
	}
}

func person(i int) map[string]any {
	return map[string]any{"first_name": fmt.Sprintf("First%d", i), "last_name": fmt.Sprintf("Last%d", i), "date_of_birth": "1980-01-01"}
}

func seed(c *client, people, workers int) ([]string, error) {
	orgs := make([]string, people/10)
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if _, err := c.must("POST", "/people", person(i), 201); err != nil {
					errs <- err
					return
				}
				if i < len(orgs) {
					body, err := c.must("POST", "/organizations", map[string]any{
						"name": fmt.Sprintf("Org %d", i), "registration_number": fmt.Sprintf("REG%d", i), "organization_type": "private", "country": "no"}, 201)
					if err != nil {
						errs <- err
						return
					}
					orgs[i] = body["id"].(string)
				}
			}
		})
	}
	for i := range people {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	return orgs, <-errs
}

type client struct {
	base, token string
	http        *http.Client
}

func (c *client) do(method, path string, body any) (int, error) {
	status, _, err := c.send(method, path, body)
	return status, err
}

func (c *client) must(method, path string, body any, want int) (map[string]any, error) {
	status, raw, err := c.send(method, path, body)
	if err != nil {
		return nil, err
	}
	if status != want {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, status, raw)
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

func (c *client) send(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

func fetchToken(c devstack.Credentials) (string, error) {
	resp, err := http.PostForm(c.AuthURL+"/oidc/token", url.Values{
		"grant_type": {"client_credentials"}, "client_id": {c.ClientID}, "client_secret": {c.ClientSecret}, "resource": {c.Resource},
	})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.AccessToken == "" {
		return "", fmt.Errorf("token: %d %v", resp.StatusCode, err)
	}
	return body.AccessToken, nil
}

type stats struct {
	mu     sync.Mutex
	lat    map[string][]time.Duration
	failed map[string]int
}

func newStats() *stats { return &stats{lat: map[string][]time.Duration{}, failed: map[string]int{}} }

func (s *stats) record(op string, d time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat[op] = append(s.lat[op], d)
	if !ok {
		s.failed[op]++
	}
}

func (s *stats) print(duration time.Duration) int {
	ops := make([]string, 0, len(s.lat))
	total := 0
	for op, l := range s.lat {
		ops = append(ops, op)
		total += len(l)
	}
	sort.Strings(ops)
	fmt.Printf("\n%-24s %8s %8s %9s %9s %9s %7s\n", "operation", "calls", "req/s", "p50 ms", "p95 ms", "p99 ms", "failed")
	for _, op := range ops {
		l := s.lat[op]
		slices.Sort(l)
		fmt.Printf("%-24s %8d %8.0f %9.2f %9.2f %9.2f %7d\n", op, len(l), float64(len(l))/duration.Seconds(),
			ms(l, 0.50), ms(l, 0.95), ms(l, 0.99), s.failed[op])
	}
	fmt.Printf("%-24s %8d %8.0f\n", "all", total, float64(total)/duration.Seconds())
	return total
}

// databaseTransactions counts the registry database's committed and rolled
// back transactions: how much work reached PostgreSQL.
func databaseTransactions(ctx context.Context, databaseURL string) (int64, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
	return n, err
}

// cacheResults reads find_cache_requests_total by result from /metrics.
func cacheResults(metricsURL string) map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get(metricsURL)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "find_cache_requests_total{") {
			continue
		}
		_, rest, _ := strings.Cut(line, `result="`)
		result, value, _ := strings.Cut(rest, `"} `)
		var v float64
		fmt.Sscanf(value, "%g", &v)
		out[result] += v
	}
	return out
}

func ms(sorted []time.Duration, q float64) float64 {
	return float64(sorted[int(float64(len(sorted)-1)*q)].Microseconds()) / 1000
}

// printMemory reports resident and peak resident memory of each process.
func printMemory(pids map[string]int) {
	fmt.Printf("\n%-12s %10s %10s\n", "process", "RSS MiB", "peak MiB")
	names := make([]string, 0, len(pids))
	for n := range pids {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pids[name]))
		if err != nil {
			continue
		}
		var rss, hwm float64
		for _, line := range strings.Split(string(raw), "\n") {
			var kb float64
			if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kb); err == nil {
				rss = kb / 1024
			}
			if _, err := fmt.Sscanf(line, "VmHWM: %f kB", &kb); err == nil {
				hwm = kb / 1024
			}
		}
		fmt.Printf("%-12s %10.1f %10.1f\n", name, rss, hwm)
	}
}
