package gateway

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/assetregistry/registry/pkg/httpx"
)

// Budget is a request quota over a window: Quota requests, at most, in
// any Window, refilled steadily (GCRA: one request every Window/Quota),
// and all of it usable at once (the burst is the quota). Name is the
// policy name the RateLimit headers give it.
type Budget struct {
	Name   string
	Quota  int
	Window time.Duration
}

// DefaultBudget lets through what a well-behaved integration and an
// acceptance suite do: thousands of calls a minute from one client, and
// bursts of 50 concurrent calls, with room to spare. It stops a runaway
// loop (tens of thousands a minute) long before the services tire.
var DefaultBudget = Budget{Name: "default", Quota: 6000, Window: time.Minute}

// DefaultItemBudget is each client's budget of batch items: twice what a
// bulk import through the registry command writes at its own pace (about
// 1,100 items a second: an asset and an action per row, some links), and a
// burst of 120 full batches; a loop of full batches (up to 6,000 a minute
// on the request budget alone, six million items) meets it.
var DefaultItemBudget = Budget{Name: "items", Quota: 120000, Window: time.Minute}

// DefaultUnauthenticatedBudget is per source address, for calls with no
// valid token: far more than the 401s a client that lost its token or a
// test suite's checks make, far fewer than a flood of forged tokens.
var DefaultUnauthenticatedBudget = Budget{Name: "unauthenticated", Quota: 600, Window: time.Minute}

// DefaultProbesBudget is per source address, for calls to /readyz: a
// kubelet or load balancer probing every few seconds uses a tenth of it.
var DefaultProbesBudget = Budget{Name: "probes", Quota: 120, Window: time.Minute}

// String is the budget as the flags take it: "6000/60s".
func (b Budget) String() string {
	return fmt.Sprintf("%d/%ds", b.Quota, int(b.Window/time.Second))
}

// ParseBudget reads "<quota>/<window>", the window in whole seconds as a
// Go duration ("60s", "1m", "1h") or a bare number of seconds ("60").
func ParseBudget(name, s string) (Budget, error) {
	q, w, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Budget{}, fmt.Errorf("budget %q: want <quota>/<window>, such as 6000/60s", s)
	}
	quota, err := strconv.Atoi(strings.TrimSpace(q))
	if err != nil || quota < 1 {
		return Budget{}, fmt.Errorf("budget %q: the quota must be a whole number of requests, at least 1", s)
	}
	w = strings.TrimSpace(w)
	window, err := time.ParseDuration(w)
	if secs, numErr := strconv.Atoi(w); numErr == nil {
		window, err = time.Duration(secs)*time.Second, nil
	}
	if err != nil || window < time.Second || window%time.Second != 0 {
		return Budget{}, fmt.Errorf("budget %q: the window must be whole seconds, at least 1 (60, 60s, 1m)", s)
	}
	return Budget{Name: name, Quota: quota, Window: window}, nil
}

// Budgets are the operator's budgets for particular clients, by token
// subject; the policy name of each is the subject.
type Budgets map[string]Budget

// String is the flag form: "importer=60000/60s,nightly-sync=100/1s".
func (b Budgets) String() string {
	var parts []string
	for sub, budget := range b {
		parts = append(parts, sub+"="+budget.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// Set parses the flag form, replacing what was there.
func (b *Budgets) Set(s string) error {
	out := Budgets{}
	for part := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		sub, spec, ok := strings.Cut(part, "=")
		sub = strings.TrimSpace(sub)
		if !ok || sub == "" {
			return fmt.Errorf("client budget %q: want <client>=<quota>/<window>", part)
		}
		if !printableASCII(sub) {
			return fmt.Errorf("client budget %q: the client must be printable ASCII (it names the budget in the RateLimit headers)", part)
		}
		if _, dup := out[sub]; dup {
			return fmt.Errorf("client %q has two budgets", sub)
		}
		budget, err := ParseBudget(sub, spec)
		if err != nil {
			return fmt.Errorf("client %q: %w", sub, err)
		}
		out[sub] = budget
	}
	*b = out
	return nil
}

// budgetValue is a Budget as a flag, keeping its name.
type budgetValue struct{ b *Budget }

func (v budgetValue) String() string {
	if v.b == nil {
		return ""
	}
	return v.b.String()
}

func (v budgetValue) Set(s string) error {
	b, err := ParseBudget(v.b.Name, s)
	if err != nil {
		return err
	}
	*v.b = b
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// sfString is s as a structured-field string (RFC 8941 §3.3.3).
func sfString(s string) string {
	if !strings.ContainsAny(s, `"\`) {
		return `"` + s + `"`
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// policyHeader is the RateLimit-Policy field of the IETF httpapi
// ratelimit-headers draft: `"default";q=6000;w=60`.
func (b Budget) policyHeader() string {
	return sfString(b.Name) + ";q=" + strconv.Itoa(b.Quota) + ";w=" + strconv.Itoa(int(b.Window/time.Second))
}

// stateHeader is the RateLimit field: the requests left now and the
// seconds until the whole quota is available again (rounded up, so a
// client that waits t seconds finds it full).
func (b Budget) stateHeader(remaining int, reset time.Duration) string {
	// Never more than the quota, whatever a replica's leases add up to.
	return sfString(b.Name) + ";r=" + strconv.Itoa(min(max(remaining, 0), b.Quota)) + ";t=" + strconv.Itoa(ceilSeconds(reset))
}

// ceilSeconds is d in whole seconds, rounded up; never negative.
func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}

// Prefixes is the trusted proxies' flag value (httpx.Networks, which the
// identity provider's flag shares).
type Prefixes = httpx.Networks
