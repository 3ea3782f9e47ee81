//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/devstack"
)

// fault is one thing that goes wrong.
type fault struct {
	name string
	// inject breaks something; heal, after hold, mends it (restarting what
	// was killed, as a supervisor would: the rest of the registry is never
	// restarted).
	inject, heal func(t *testing.T)
	hold         time.Duration
	// unavailable: the load may get 503s with Retry-After; without it,
	// every call of the load must succeed.
	unavailable bool
	// unanswered: calls may get no answer at all (the gateway is down).
	unanswered bool
	// alongside runs during the load instead of inject and heal: clients
	// that misbehave, whose own answers it checks and returns.
	alongside func(t *testing.T) []call
	// observe, when set, runs before the fault and returns a check that
	// runs after it (a metric that must have moved).
	observe func(t *testing.T) func(t *testing.T)
	// needsNoPeer names an op of the load that needs nothing the fault
	// breaks: every one of its calls must succeed.
	needsNoPeer string
	// frozen names the one service the fault stops: only calls routed to
	// it, or that need it as a peer, may be 503s.
	frozen string
	// long: the row runs only under FULL=1 (make faults); another row of
	// its kind stands for it in make test (length_test.go).
	long bool
}

func TestFaults(t *testing.T) {
	skipOnClusters(t)
	// Inside make test (length_test.go) these stand for their kinds:
	// PostgreSQL paused (no request may wait for a silent database), Redis
	// killed under the rate limiter, S3 cut mid-upload, the relay killed
	// amid a backlog after NATS was cut (a service crash and NATS down in
	// one), the slow peer and the gateway down. The identity provider
	// killed is TestIdentityProviderOutage's in make test, which kills it
	// too, after its database, and holds revoked tokens to the rules.
	faults := []fault{
		{name: "slow and oversized clients", alongside: misbehavingClients},
		{long: true, name: "postgres: 200 ms latency (toxiproxy)", inject: addToxic("postgres", "latency", "downstream", `{"latency":200}`),
			heal: removeToxic("postgres", "latency"), hold: 5 * time.Second, unavailable: true},
		{long: true, name: "postgres: connections cut (toxiproxy)", inject: cut("postgres"), heal: restore("postgres"), hold: 4 * time.Second, unavailable: true},
		{name: "postgres: paused (SIGSTOP)", inject: func(t *testing.T) { must(t, stack.Postgres.Signal(syscall.SIGSTOP)) },
			heal: func(t *testing.T) { must(t, stack.Postgres.Signal(syscall.SIGCONT)) }, hold: hangBound + 2*time.Second, unavailable: true},
		{long: true, name: "postgres: killed (SIGKILL), restarted", inject: func(t *testing.T) { must(t, stack.Postgres.Kill()) },
			heal: func(t *testing.T) { must(t, stack.Postgres.Restart(t.Context())) }, hold: 3 * time.Second, unavailable: true},
		{long: true, name: "redis: 500 ms latency (toxiproxy)", inject: addToxic("redis", "latency", "downstream", `{"latency":500}`),
			heal: removeToxic("redis", "latency"), hold: 4 * time.Second},
		{long: true, name: "redis: connections cut (toxiproxy)", inject: cut("redis"), heal: restore("redis"), hold: 4 * time.Second},
		{long: true, name: "redis: killed (SIGKILL), restarted", inject: func(t *testing.T) { must(t, stack.Redis.Kill()) },
			heal: func(t *testing.T) { must(t, stack.Redis.Restart(t.Context())) }, hold: 3 * time.Second},
		// The gateway's rate limiter keeps its budgets in the same Redis:
		// with Redis gone every call is still served (the limit fails
		// open), and the gateway's metric says so.
		{name: "redis: killed under the rate limiter (fails open)", inject: func(t *testing.T) { must(t, stack.Redis.Kill()) },
			heal: func(t *testing.T) { must(t, stack.Redis.Restart(t.Context())) }, hold: 3 * time.Second, observe: failOpenCounted},
		{long: true, name: "s3: connections cut (toxiproxy)", inject: cut("s3"), heal: restore("s3"), hold: 4 * time.Second, unavailable: true},
		{name: "s3: cut after 4 KiB (toxiproxy)", inject: addToxic("s3", "limit_data", "upstream", `{"bytes":4096}`),
			heal: removeToxic("s3", "limit_data"), hold: 4 * time.Second, unavailable: true},
		{long: true, name: "parties: killed (SIGKILL), restarted", inject: kill("parties"), heal: restart("parties"), hold: 3 * time.Second, unavailable: true},
		{long: true, name: "documents: killed (SIGKILL), restarted", inject: kill("documents"), heal: restart("documents"), hold: 3 * time.Second, unavailable: true},
		// NATS down must cost no write: the events wait in the outboxes.
		{long: true, name: "nats: killed (SIGKILL), restarted", inject: func(t *testing.T) { must(t, stack.Nats.Kill()) },
			heal: func(t *testing.T) { must(t, stack.Nats.Restart(t.Context())) }, hold: 4 * time.Second},
		// The relay killed mid-batch: NATS is cut until the outboxes hold a
		// backlog, and parties (its relay) is killed while it publishes it.
		{name: "outbox relay: parties killed (SIGKILL) while publishing a backlog, restarted", inject: func(t *testing.T) {
			cut("nats")(t)
			time.Sleep(3 * time.Second)
			restore("nats")(t)
			time.Sleep(150 * time.Millisecond)
			kill("parties")(t)
		}, heal: restart("parties"), hold: 3 * time.Second, unavailable: true},
		// A peer slow for its callers: the assets service answers the
		// actions service after 2 s (beyond the suite's peer.timeout). Actions
		// that must ask it are 503s with Retry-After within the timeout;
		// actions on assets the actions service remembers ask nobody and
		// never fail, and the rest of the load does not notice.
		{name: "assets: answering the actions service after 2 s (toxiproxy)", inject: addToxic(devstack.ViaPeer+"assets", "latency", "downstream", `{"latency":2000}`),
			heal: removeToxic(devstack.ViaPeer+"assets", "latency"), hold: 5 * time.Second, unavailable: true, needsNoPeer: "create action, known asset"},
		// The identity provider down: no token can be issued meanwhile, but
		// every token issued keeps working, the clients' and the services'
		// own, since each verifier keeps its last token validity list for
		// oidc.token-validity-max-age (24 h) and reads it again once the
		// identity provider is back. Every call of the load must succeed.
		{long: true, name: "idp: killed (SIGKILL), restarted", inject: killIdPOnceTokensHeld, heal: restart("idp"), hold: 4 * time.Second},
		{name: "gateway: stopped (SIGTERM), restarted", inject: func(t *testing.T) { must(t, stack.Processes["api-gateway"].Stop()) },
			heal: restart("api-gateway"), hold: 3 * time.Second, unavailable: true, unanswered: true},
	}
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			if f.long {
				long(t)
			}
			exercise(t, i, f)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func kill(name string) func(*testing.T) {
	return func(t *testing.T) { must(t, stack.Processes[name].Kill()) }
}

func restart(name string) func(*testing.T) {
	return func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		must(t, stack.Processes[name].Restart(ctx))
	}
}

// killIdPOnceTokensHeld kills the identity provider once the services
// hold their own tokens. The one call of the load that asks a peer, an
// action on a new asset, goes with the actions service's own token, which
// it fetches when it first asks one (see docs/auth.md): the row is about
// tokens already issued, so one such action is made first, whichever
// order the load's first second took.
func killIdPOnceTokensHeld(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	name := "idp-held-" + randomHex()
	created := func(path string, body map[string]string) string {
		raw, _ := json.Marshal(body)
		a := c.do(ctx, request{method: "POST", path: path, body: raw, contentType: "application/json", key: "k-" + name + path, create: true})
		if a.status != http.StatusCreated || a.id == "" {
			t.Fatalf("POST %s before the fault: %d %v", path, a.status, a.err)
		}
		return a.id
	}
	typeID := created("/asset_types", map[string]string{"brand": "Held", "model": name})
	assetID := created("/assets", map[string]string{"serial_number": name, "asset_type_id": typeID})
	created("/actions", map[string]string{"asset_id": assetID, "action_type": "repair", "performed_at": "2025-01-01",
		"source_system": "fault", "source_reference": name})
	kill("idp")(t)
}

// cut closes every connection through the datastore's proxy and refuses
// new ones; restore lets them through again.
func cut(datastore string) func(*testing.T) {
	return func(*testing.T) { proxies[datastore].Stop() }
}

func restore(datastore string) func(*testing.T) {
	return func(t *testing.T) { must(t, proxies[datastore].Start()) }
}

func addToxic(datastore, kind, stream, attributes string) func(*testing.T) {
	return func(t *testing.T) {
		_, err := proxies[datastore].Toxics.AddToxicJson(strings.NewReader(
			fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"attributes":%s}`, kind, kind, stream, attributes)))
		must(t, err)
	}
}

func removeToxic(datastore, kind string) func(*testing.T) {
	return func(t *testing.T) { must(t, proxies[datastore].Toxics.RemoveToxic(context.Background(), kind)) }
}

// exercise runs one fault under the load and checks what the registry did.
func exercise(t *testing.T, i int, f fault) {
	c := newClient(t)
	l := newLoad(c, tag(i))
	stopLoad := l.run(loadClients, loadPause())
	time.Sleep(time.Second) // the load reaches its stride before the fault

	var observed func(*testing.T)
	if f.observe != nil {
		observed = f.observe(t)
	}
	var own []call
	if f.alongside != nil {
		own = f.alongside(t)
	} else {
		f.inject(t)
		time.Sleep(f.hold)
		f.heal(t)
	}
	recovered := waitRecovered(t, c, l.tag)
	time.Sleep(500 * time.Millisecond) // some of the load after recovery too
	calls := stopLoad()
	if observed != nil {
		observed(t)
	}
	record(checkRow(t, f, c, l, calls, own, recovered))
}

// checkRow holds what the load saw during fault f, and what the registry
// holds afterwards, to the rules, and returns the fault's row.
func checkRow(t *testing.T, f fault, c *client, l *load, calls, own []call, recovered bool) row {
	t.Helper()
	if !recovered {
		t.Error("the registry did not recover (a create, read, find and upload all answered) within 90 s of the fault ending")
	}

	r := row{fault: f.name, calls: len(calls) + len(own), statuses: byStatus(append(slices.Clone(calls), own...)), recovered: recovered}
	for _, c := range calls {
		if c.status != 0 {
			r.slowest = max(r.slowest, c.took)
		}
	}
	checkAnswers(t, f, calls)
	if f.needsNoPeer != "" {
		r.unaffected = checkUnaffected(t, f.needsNoPeer, calls)
	}
	acked, retried := retryKeyed(t, c, calls)
	r.retried = retried
	r.lost = checkReadable(t, c, acked)
	r.duplicates = checkCopies(t, c, calls, acked)
	r.halfWritten = checkDocuments(t, l.tag, calls, acked)
	checkOrganizations(t, l.tag, calls, acked)
	events := checkEvents(t)
	r.eventsLost, r.eventsOutOfOrder = events.lost+events.duplicated, events.outOfOrder
	return r
}

// byStatus summarises answers: "201:40 200:31 503:6 refused:2" (refused:
// no connection; none: a connection but no answer).
func byStatus(calls []call) string {
	counts := map[string]int{}
	for _, c := range calls {
		key := strconv.Itoa(c.status)
		switch {
		case c.status == 0 && errors.Is(c.err, syscall.ECONNREFUSED):
			key = "refused"
		case c.status == 0:
			key = "none"
		}
		counts[key]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, counts[k]))
	}
	return strings.Join(parts, " ")
}

// checkAnswers holds every answer of the load to the rules: a problem for
// every failure, 503 with Retry-After only for a dependency that is down,
// never a 500 or any other failure for a valid request, never a hang, and
// always an answer unless the gateway itself is down.
func checkAnswers(t *testing.T, f fault, calls []call) {
	t.Helper()
	var wrong []string
	for _, c := range calls {
		var why string
		switch {
		case c.hung():
			why = fmt.Sprintf("no answer within %s (%v)", hangBound, c.err)
		case c.status == 0 && !f.unanswered:
			why = fmt.Sprintf("no answer: %v", c.err)
		case c.status == 0, c.ok():
		case !c.problem:
			why = fmt.Sprintf("%d without a problem body", c.status)
		case c.status == 503 && !f.unavailable:
			why = "503, though nothing the registry needs is down"
		case c.status == 503 && f.frozen != "" && !needs(c.request, f.frozen):
			why = "503, though it needs nothing of the frozen " + f.frozen
		case c.status == 503 && !c.retryAfter:
			why = "503 without Retry-After"
		case c.status != 503:
			why = fmt.Sprintf("%d for a valid request", c.status)
		}
		if why != "" {
			wrong = append(wrong, fmt.Sprintf("%s %s (%s): %s", c.method, c.path, c.op, why))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d of %d answers break the rules, e.g.:\n  %s", len(wrong), len(calls), strings.Join(wrong[:min(len(wrong), 8)], "\n  "))
	}
}

// checkUnaffected holds the calls of op, which need nothing the fault
// breaks, to succeeding, and says how many there were and their slowest
// and 99th-percentile answers, for the report (speed is not asserted).
func checkUnaffected(t *testing.T, op string, calls []call) string {
	t.Helper()
	var took []time.Duration
	for _, c := range calls {
		if c.op != op {
			continue
		}
		if !c.ok() {
			t.Errorf("%s: %d (%v), though it needs nothing the fault breaks", op, c.status, c.err)
		}
		took = append(took, c.took)
	}
	if len(took) == 0 {
		t.Errorf("no %s in the load: nothing checked", op)
		return ""
	}
	slices.Sort(took)
	return fmt.Sprintf("%s: %d, p99 %s, max %s", op, len(took), took[len(took)*99/100].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
}

// retryKeyed sends every create with an Idempotency-Key that did not
// succeed again, with its key, until it does, as an integration would
// (honouring Retry-After); the registry must answer each retry with the
// first outcome or execute it once. It returns every acknowledged create.
// Each create is retried on its own, one call at a time, as its client
// would; different creates are retried side by side (concurrently).
func retryKeyed(t *testing.T, c *client, calls []call) (acked []call, retried int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var failed []call
	for _, cl := range calls {
		switch {
		case !cl.create:
		case cl.ok():
			acked = append(acked, cl)
		case cl.key != "":
			failed = append(failed, cl)
		}
		// A create without a key that failed: its outcome stays
		// unknown, as it would for a client.
	}
	answers := make([]answer, len(failed))
	concurrently(len(failed), func(i int) { answers[i] = retryUntilDone(t, c, failed[i].request, deadline) })
	for i, cl := range failed {
		if answers[i].ok() {
			acked = append(acked, call{cl.request, answers[i]})
		}
	}
	return acked, len(failed)
}

// retryUntilDone sends r with its key until it succeeds, fails for good,
// or deadline passes, and returns its last answer.
func retryUntilDone(t *testing.T, c *client, r request, deadline time.Time) answer {
	for {
		a := c.do(context.Background(), r)
		if a.ok() {
			return a
		}
		if a.status != 0 && a.status != 409 && a.status != 503 {
			t.Errorf("retrying %s %s with its key: %d", r.method, r.path, a.status)
			return a
		}
		if time.Now().After(deadline) {
			t.Errorf("retrying %s %s with its key: still %d (%v) after 2 minutes", r.method, r.path, a.status, a.err)
			return a
		}
		time.Sleep(time.Second) // Retry-After is 1 s in every answer that carries it
	}
}

// checkWorkers is how many calls the checks after a fault make at once:
// as many as the load's clients. Each check reads one item per call, and
// would otherwise wait for each answer in turn.
const checkWorkers = loadClients

// concurrently calls do(i) for every i below n, from checkWorkers
// goroutines. do may report with t.Errorf, never t.Fatal (which must be
// called from the test's own goroutine).
func concurrently(n int, do func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(checkWorkers, n) {
		wg.Go(func() {
			for i := range next {
				do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// itemPath is where an acknowledged create can be read.
func itemPath(c call) string { return c.path + "/" + c.id }

// checkReadable reads every acknowledged create back; each one missing is
// a lost write.
func checkReadable(t *testing.T, c *client, acked []call) (lost int) {
	t.Helper()
	var missing atomic.Int64
	concurrently(len(acked), func(i int) {
		a := acked[i]
		got := c.do(context.Background(), request{method: "GET", path: itemPath(a)})
		if got.status != 200 {
			missing.Add(1)
			t.Errorf("acknowledged %s %s (%s) reads %d (%v)", a.method, a.path, a.id, got.status, got.err)
		}
	})
	return int(missing.Load())
}

// checkCopies counts what each keyed create made: exactly one, however
// often it was sent. Documents are counted by their content's SHA-256 in
// one query, the others through the API, by what identifies them.
func checkCopies(t *testing.T, c *client, calls, acked []call) (duplicates int) {
	t.Helper()
	var uploads []string
	for _, a := range acked {
		if a.key != "" && a.path == "/documents" {
			uploads = append(uploads, a.target)
		}
	}
	stored := documentsBySHA256(t, uploads)
	var extra atomic.Int64
	concurrently(len(acked), func(i int) {
		a := acked[i]
		if a.key == "" {
			return
		}
		var n int
		var err error
		switch a.path {
		case "/organizations":
			n, err = countList(c, "/organizations?registration_number="+url.QueryEscape(a.target))
		case "/asset_types":
			n, err = countList(c, "/asset_types/by_brand_and_model?brand=Fault&model="+url.QueryEscape(a.target))
		case "/documents":
			n = stored[a.target]
		case "/assets":
			n, err = countList(c, "/assets?serial_number="+url.QueryEscape(a.target))
		case "/actions":
			n, err = countList(c, "/actions?source_system=fault&source_reference="+url.QueryEscape(a.target))
		}
		switch {
		case err != nil:
			t.Errorf("counting the copies of %s with key %s: %v", a.path, a.key, err)
		case n != 1:
			extra.Add(int64(max(n-1, 0)))
			t.Errorf("%s with key %s made %d copies, want 1", a.path, a.key, n)
		}
	})
	return int(extra.Load())
}

// documentsBySHA256 counts the document rows of each content hash.
func documentsBySHA256(t *testing.T, hashes []string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	if len(hashes) == 0 {
		return counts
	}
	rows, err := admin(t).Query(t.Context(), "SELECT sha256, count(*) FROM documents.documents WHERE sha256 = ANY($1) GROUP BY sha256", hashes)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var hash string
		var n int
		if err := rows.Scan(&hash, &n); err != nil {
			t.Fatal(err)
		}
		counts[hash] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}

// countList counts the items of a list the API answers at path.
func countList(c *client, path string) (int, error) {
	req, err := http.NewRequest("GET", stack.RegistryURL+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var list []json.RawMessage
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("%s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return len(list), nil
}

// failOpenCounted checks that the gateway counted the calls it let through
// without their budget while Redis was gone.
func failOpenCounted(t *testing.T) func(*testing.T) {
	before := gatewayMetric(t, "gateway_ratelimit_fail_open_total")
	return func(t *testing.T) {
		if after := gatewayMetric(t, "gateway_ratelimit_fail_open_total"); after <= before {
			t.Errorf("gateway_ratelimit_fail_open_total stayed at %v while Redis was down: the metric does not say the limit failed open", after)
		}
	}
}

// gatewayMetric sums a counter's series on the gateway's metrics port.
func gatewayMetric(t *testing.T, name string) float64 {
	t.Helper()
	return metricSum(t, stack.MetricsURLs["api-gateway"], name, "")
}

// metricSum adds the series of the metric name on a metrics page whose
// line holds want (a label, say; "" for every series).
func metricSum(t *testing.T, metricsURL, name, want string) float64 {
	t.Helper()
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") || !strings.Contains(line, want) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}
