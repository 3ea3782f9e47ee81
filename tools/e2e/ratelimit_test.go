package e2e

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
)

// limitedClient has a budget of its own (limitedBudget, set by the
// operator's RATE_LIMIT_CLIENTS in TestMain), small enough to spend here.
const (
	limitedClient = "e2e-limited"
	limitedBudget = "5/3600s"
)

var (
	policyHeader = regexp.MustCompile(`^"([^"]+)";q=(\d+);w=(\d+)$`)
	stateHeader  = regexp.MustCompile(`^"([^"]+)";r=(\d+);t=(\d+)$`)
)

// rateLimit reads the two headers of an answer: the policy's name, quota
// and window, the requests remaining and the seconds until the reset.
func rateLimit(t *testing.T, r testkit.Response) (name string, quota, window, remaining, reset int) {
	t.Helper()
	p := policyHeader.FindStringSubmatch(r.Header.Get("RateLimit-Policy"))
	s := stateHeader.FindStringSubmatch(r.Header.Get("RateLimit"))
	if p == nil || s == nil || p[1] != s[1] {
		t.Fatalf("%d: RateLimit-Policy %q, RateLimit %q: want the structured-field form, one policy name",
			r.Status, r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"))
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	return p[1], n(p[2]), n(p[3]), n(s[2]), n(s[3])
}

// Every authenticated answer says where its client's budget stands; the
// default budget lets a burst of 50 concurrent calls through; a client
// with a small budget of its own gets a 429 problem with Retry-After.
func TestRateLimitsThroughGateway(t *testing.T) {
	t.Parallel()
	gw := gateway()
	// A client of its own on the default budget: the suite's read-write
	// client spends its budget in the tests running beside this one, and
	// the burst below needs 50 calls of it.
	ownID := unique("e2e-default-budget")
	ownSecret, err := stack.NewClient(t.Context(), ownID, "registry:read")
	if err != nil {
		t.Fatal(err)
	}
	own := token(t, ownID, ownSecret)
	r := testkit.Expect(t, gw.Do(t, "GET", "/organizations?limit=1", own, nil), 200)
	name, quota, window, remaining, reset := rateLimit(t, r)
	if name != "default" || quota < 1000 || window < 1 || remaining >= quota || reset > window {
		t.Errorf("default budget: %q q=%d w=%d r=%d t=%d", name, quota, window, remaining, reset)
	}
	rateLimit(t, testkit.Expect(t, gw.Do(t, "GET", "/nothing/here", own, nil), 404))

	var wg sync.WaitGroup
	statuses := make(chan int, 50)
	for range 50 {
		wg.Go(func() { statuses <- gw.Do(t, "GET", "/organizations?limit=1", own, nil).Status })
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Errorf("a burst of 50: %d, want every call through", s)
		}
	}

	secret, err := stack.NewClient(t.Context(), limitedClient, "registry:read")
	if err != nil {
		t.Fatal(err)
	}
	limited := token(t, limitedClient, secret)
	for i := range 5 {
		r := testkit.Expect(t, gw.Do(t, "GET", "/organizations?limit=1", limited, nil), 200)
		name, quota, window, remaining, _ := rateLimit(t, r)
		if name != limitedClient || quota != 5 || window != 3600 || remaining != 4-i {
			t.Errorf("call %d: %q q=%d w=%d r=%d, want the client's own budget counting down", i, name, quota, window, remaining)
		}
	}
	r = testkit.Expect(t, gw.Do(t, "GET", "/organizations?limit=1", limited, nil), 429)
	if p := r.JSON(); p["type"] != httpx.ProblemTypePrefix+"rate-limited" || p["instance"] != "/organizations" {
		t.Errorf("429: %s", r.Raw)
	}
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 3600 {
		t.Errorf("429: Retry-After %q, want seconds up to the window", r.Header.Get("Retry-After"))
	}
	if _, _, _, remaining, _ := rateLimit(t, r); remaining != 0 {
		t.Errorf("429 with r=%d", remaining)
	}
	// The others' budgets are their own.
	testkit.Expect(t, gw.Do(t, "GET", "/organizations?limit=1", own, nil), 200)
}

// itemsClient has a budget of batch items of its own (itemsBudget, set by
// the operator's RATE_LIMIT_CLIENT_ITEMS in TestMain), the smallest that
// holds a full batch.
const (
	itemsClient = "e2e-items"
	itemsBudget = "1000/3600s"
)

// A batch costs one request and its items: through the real gateway and
// assets service, a client with an item budget of 1,000 (refilled by one
// every 3.6 s) gets a batch of 600 items answered (each item's own outcome
// inside), a second of 600 refused with 429 before the service sees it,
// and a batch of the 400 left answered.
func TestBatchItemsThroughGateway(t *testing.T) {
	t.Parallel()
	secret, err := stack.NewClient(t.Context(), itemsClient, "registry:read", "registry:write")
	if err != nil {
		t.Fatal(err)
	}
	tok := token(t, itemsClient, secret)
	batch := func(n int) string { return `{"items":[` + strings.TrimSuffix(strings.Repeat(`{},`, n), ",") + `]}` }
	post := func(n int, status int) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gateway().Do(t, "POST", "/assets/batch", tok, batch(n), "Content-Type", "application/json"), status)
	}
	// itemsLeft reads the item budget, the second of the answer's two.
	itemsLeft := func(r testkit.Response) int {
		t.Helper()
		p, s := r.Header.Values("RateLimit-Policy"), r.Header.Values("RateLimit")
		if len(p) != 2 || len(s) != 2 || !strings.HasPrefix(p[0], `"default";`) || !strings.HasPrefix(s[0], `"default";`) ||
			p[1] != `"`+itemsClient+`:items";q=1000;w=3600` {
			t.Fatalf("%d: RateLimit-Policy %q, RateLimit %q: want the request budget, then the client's item budget", r.Status, p, s)
		}
		m := stateHeader.FindStringSubmatch(s[1])
		if m == nil || m[1] != itemsClient+":items" {
			t.Fatalf("RateLimit %q", s[1])
		}
		n, _ := strconv.Atoi(m[2])
		return n
	}

	r := post(600, 200)
	var results []map[string]any
	if err := json.Unmarshal(r.Raw, &results); err != nil || len(results) != 600 || results[0]["status"] != float64(422) {
		t.Fatalf("the batch's answer: %v %.200s", err, r.Raw)
	}
	if left := itemsLeft(r); left != 400 {
		t.Errorf("after 600 items: %d left, want 400", left)
	}
	r = post(600, 429)
	if left := itemsLeft(r); left < 400 || left >= 600 || r.Header.Get("Retry-After") == "" {
		t.Errorf("600 items more: %d left, Retry-After %q; want 400 (and what refilled since), under 600", left, r.Header.Get("Retry-After"))
	}
	post(400, 200)
}
