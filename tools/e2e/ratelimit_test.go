package e2e

import (
	"regexp"
	"strconv"
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
	gw := gateway()
	rw := readWrite(t)
	r := testkit.Expect(t, gw.Do(t, "GET", "/organizations?limit=1", rw, nil), 200)
	name, quota, window, remaining, reset := rateLimit(t, r)
	if name != "default" || quota < 1000 || window < 1 || remaining >= quota || reset > window {
		t.Errorf("default budget: %q q=%d w=%d r=%d t=%d", name, quota, window, remaining, reset)
	}
	rateLimit(t, testkit.Expect(t, gw.Do(t, "GET", "/nothing/here", rw, nil), 404))

	var wg sync.WaitGroup
	statuses := make(chan int, 50)
	for range 50 {
		wg.Go(func() { statuses <- gw.Do(t, "GET", "/organizations?limit=1", rw, nil).Status })
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
	testkit.Expect(t, gw.Do(t, "GET", "/organizations?limit=1", rw, nil), 200)
}
