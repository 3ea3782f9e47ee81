//go:build faults

package faults

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/catalog"
)

// The frozen services' rows: each service frozen with SIGSTOP (it keeps its
// connections and takes new ones, and answers nothing, as a process in a
// long pause or on a node cut off does) under the usual load, which calls
// every service. The load's calls routed to the frozen service must be
// 503s with Retry-After, first at the gateway's deadline, then, once those
// failures opened its breaker, at once; calls to the others must keep
// succeeding (their p99 is reported beside the same calls' before the
// freeze); the gateway's /readyz must name the frozen service and no
// other; after SIGCONT the load's calls to it must be answered again
// within 10 s; nothing acknowledged may be lost. Nothing but the load
// calls the frozen service: its breaker opens on the load's own failures,
// as an integration's would open it in production.

// freezeHold is how long a service stays frozen: in the short form, the
// first deadline (which opens the breaker), a stretch open and one
// half-open, and a margin for a busy machine.
func freezeHold() time.Duration {
	if fullFaults() {
		return fullHold
	}
	return upstreamTimeout + 2*breakerOpenFor + 2*time.Second
}

// fullHold is the freeze, and the longest a short one may be
// stretched (openStretch).
const fullHold = 30 * time.Second

// openStretch is how long the breaker must have been open before the
// service is resumed: an open period and a half-open one, so that calls
// are refused while it is open and while its probe waits. A busy machine
// brings the load's calls to the frozen service later, so its breaker
// opens later than the short hold plans for; the freeze then lasts
// until this much of it has been open.
const openStretch = 2 * breakerOpenFor

// quietWindow is how long the load runs before the freeze, once it has
// reached its stride: its calls are the quiet run the others' p99 is
// compared with.
func quietWindow() time.Duration {
	if fullFaults() {
		return 10 * time.Second
	}
	return 3 * time.Second
}

// recoveryGoal is how soon after SIGCONT the frozen service must answer
// the load again, and everything else answer too: its breaker probes
// every breakerOpenFor.
const recoveryGoal = 10 * time.Second

// refusedGoal is how fast a call must be refused once the breaker is open.
const refusedGoal = 50 * time.Millisecond

// gatewayMargin is the gateway's own work on a busy machine beside a
// deadline it enforces: a 503 within upstreamTimeout and this is one at
// the deadline.
const gatewayMargin = time.Second

func TestFrozenServices(t *testing.T) {
	for i, row := range []struct {
		service string
		long    bool
	}{
		// Inside make test assets stands for the five: a peer the other
		// services call, so it checks both the gateway's breaker and the
		// peers'.
		{service: "parties", long: true},
		{service: "documents", long: true},
		{service: "assets"},
		{service: "actions", long: true},
		{service: "events", long: true},
	} {
		t.Run(row.service, func(t *testing.T) {
			if row.long {
				long(t)
			}
			freeze(t, 50+i, row.service)
		})
	}
}

// freezeFigures are what a freeze row measured, printed under the table.
type freezeFigures struct {
	service      string
	hold         time.Duration
	openedAfter  time.Duration // from SIGSTOP to the breaker seen open
	firstSlowest time.Duration // the slowest routed 503 before the breaker opened
	beforeOpen   int
	refused      []time.Duration // routed 503s after it opened, its probes left out
	// probes are the routed calls after it opened that waited the
	// deadline: let through half-open, one at a time.
	probes        int
	others, quiet []time.Duration   // successful calls needing nothing of it, during the freeze and before
	readyz        []string          // what /readyz named unavailable, each distinct answer
	readyzWhy     map[string]string // what it said of each (the first reason seen)
	// failedOpen is how often the gateway's rate limiter let a call
	// through unlimited during the freeze (Redis slower than its
	// rate-limit.timeout): it tells a busy machine from a wrong /readyz.
	failedOpen               float64
	recoveredAfter, allAfter time.Duration
	answered, allReady       bool
}

func freeze(t *testing.T, i int, name string) {
	hold := freezeHold()
	c := newClient(t)
	l := newLoad(c, tag(i))
	stopLoad := l.run(loadClients, loadPause())
	// The quiet run starts once the load reaches its stride: its first
	// calls (new connections, a token the gateway has not seen) would
	// make the quiet p99 slower than the registry is.
	time.Sleep(time.Second)
	quietFrom := time.Now()
	time.Sleep(quietWindow())

	pid := stack.Processes[name].Pid()
	failedOpen := gatewayMetric(t, "gateway_ratelimit_fail_open_total")
	frozenAt := time.Now()
	must(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // never left stopped, whatever fails
	breaker := watchBreaker(name)
	readyz := watchReadyz(t, name, frozenAt.Add(readyzSettle), frozenAt.Add(hold))
	breaker.waitOpenFor(frozenAt.Add(hold), frozenAt.Add(max(hold, fullHold)))
	must(t, syscall.Kill(pid, syscall.SIGCONT))
	healedAt := time.Now()
	hold = healedAt.Sub(frozenAt).Round(time.Second)
	f := fault{name: fmt.Sprintf("%s: frozen (SIGSTOP) for %s", name, hold), unavailable: true, frozen: name}

	fig := &freezeFigures{service: name, hold: hold, failedOpen: gatewayMetric(t, "gateway_ratelimit_fail_open_total") - failedOpen}
	fig.readyzWhy = <-readyz
	fig.readyz = slices.Sorted(maps.Keys(fig.readyzWhy))
	answeredAt := l.answeredAfter(name, healedAt, healedAt.Add(3*recoveryGoal))
	if fig.answered = !answeredAt.IsZero(); fig.answered {
		fig.recoveredAfter = answeredAt.Sub(healedAt)
	}
	openedAt := breaker.stop()
	recovered := waitRecovered(t, c, l.tag)
	fig.allAfter, fig.allReady = time.Since(healedAt), recovered
	time.Sleep(500 * time.Millisecond)
	calls := stopLoad()

	if !openedAt.IsZero() {
		fig.openedAfter = openedAt.Sub(frozenAt)
	}
	for _, lc := range calls {
		if lc.at.Before(quietFrom) || !lc.at.Before(healedAt) {
			continue
		}
		switch {
		case lc.at.Before(frozenAt):
			if lc.ok() && !needs(lc.request, name) {
				fig.quiet = append(fig.quiet, lc.took)
			}
		case !routedTo(lc.request, name):
			if lc.ok() && !needs(lc.request, name) {
				fig.others = append(fig.others, lc.took)
			}
		case lc.status != 503:
		case openedAt.IsZero() || lc.at.Before(openedAt):
			fig.beforeOpen++
			fig.firstSlowest = max(fig.firstSlowest, lc.took)
		case lc.took >= upstreamTimeout-gatewayMargin:
			fig.probes++
		default:
			fig.refused = append(fig.refused, lc.took)
		}
	}

	if openedAt.IsZero() {
		t.Errorf("the gateway's breaker of %s never opened while it was frozen for %s", name, hold)
	}
	if len(fig.refused) == 0 {
		t.Errorf("no call to %s was refused at once while its breaker was open", name)
	}
	if !fig.answered || fig.recoveredAfter > recoveryGoal {
		t.Errorf("%s answered the load again %s after SIGCONT (answered: %v), want within %s", name, fig.recoveredAfter, fig.answered, recoveryGoal)
	}
	if recovered && fig.allAfter > recoveryGoal {
		t.Errorf("everything answered again (a create, read, find, upload, asset type, asset and action on it) only %s after %s's SIGCONT, want within %s", fig.allAfter, name, recoveryGoal)
	}
	for _, named := range fig.readyz {
		// The rate limiter is named truly when Redis answered it later
		// than its timeout meanwhile (it failed open: a machine too busy,
		// not a wrong /readyz); named without failing open, it is wrong.
		if named == "rate-limit" && fig.failedOpen > 0 {
			continue
		}
		if named != name {
			t.Errorf("/readyz named %q unavailable (%q) while only %s was frozen (the rate limiter failed open %v times meanwhile)",
				named, fig.readyzWhy[named], name, fig.failedOpen)
		}
	}
	if len(fig.readyz) == 0 {
		t.Errorf("/readyz never named %s while it was frozen", name)
	}
	r := checkRow(t, f, c, l, calls, nil, recovered)
	r.frozen = fig
	record(r)
}

// readyzSettle is when, after the freeze, /readyz can first be expected
// to name it: a round started before the freeze serves for a second, and
// the gateway waits 3 s for a service's own answer.
const readyzSettle = 5 * time.Second

// routedTo reports whether the gateway routes the call to service.
func routedTo(r request, service string) bool {
	path, _, _ := strings.Cut(r.path, "?")
	res, _, ok := catalog.Route(path)
	return ok && res.Service == service
}

// needs reports whether a call of the load needs service: it is routed to
// it, or it may ask it as a peer (an action on an asset the actions
// service has not seen yet asks the assets service).
func needs(r request, service string) bool {
	return routedTo(r, service) || r.op == "create action, new asset" && service == "assets"
}

// answeredAfter waits until a call of the load routed to service succeeds
// with its answer after since, or until deadline, and returns when that
// answer came (zero: none came).
func (l *load) answeredAfter(service string, since, deadline time.Time) time.Time {
	for {
		l.mu.Lock()
		var first time.Time
		for _, c := range l.calls {
			if end := c.at.Add(c.took); c.ok() && end.After(since) && routedTo(c.request, service) && (first.IsZero() || end.Before(first)) {
				first = end
			}
		}
		l.mu.Unlock()
		if !first.IsZero() || time.Now().After(deadline) {
			return first
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// breakerWatch reads the gateway's breaker of one service from its
// metrics every 50 ms (it calls nothing of the registry's API, so it
// adds nothing to what opens the breaker) and keeps when it first saw it
// open.
type breakerWatch struct {
	done     chan struct{}
	opened   chan time.Time
	openedAt atomic.Pointer[time.Time]
}

func watchBreaker(service string) *breakerWatch {
	w := &breakerWatch{done: make(chan struct{}), opened: make(chan time.Time, 1)}
	go func() {
		var opened time.Time
		defer func() { w.opened <- opened }()
		for {
			select {
			case <-w.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if state, err := breakerState(service); err == nil && state > 0 && opened.IsZero() {
				opened = time.Now()
				w.openedAt.Store(&opened)
			}
		}
	}()
	return w
}

// waitOpenFor returns at from, or later once the breaker has been open
// for openStretch, or at limit if it has not by then.
func (w *breakerWatch) waitOpenFor(from, limit time.Time) {
	for now := time.Now(); now.Before(limit); now = time.Now() {
		if opened := w.openedAt.Load(); !now.Before(from) && opened != nil && !now.Before(opened.Add(openStretch)) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the watch and returns when the breaker was first seen open
// (zero: never).
func (w *breakerWatch) stop() time.Time {
	close(w.done)
	return <-w.opened
}

// breakerState reads gateway_upstream_breaker_state of service.
func breakerState(service string) (float64, error) {
	resp, err := http.Get(stack.MetricsURLs["api-gateway"])
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	prefix := `gateway_upstream_breaker_state{upstream="` + service + `"} `
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("no %s in the gateway's metrics", strings.TrimSpace(prefix))
}

// watchReadyz reads the gateway's /readyz once a second from from until
// until and sends, at the end, every name it saw unavailable with the
// first reason it gave. It stays 200 throughout, or the test fails.
func watchReadyz(t *testing.T, frozen string, from, until time.Time) <-chan map[string]string {
	out := make(chan map[string]string, 1)
	go func() {
		seen := map[string]string{}
		time.Sleep(time.Until(from))
		for time.Now().Before(until) {
			resp, err := http.Get(stack.RegistryURL + "/readyz")
			if err == nil {
				var body struct {
					Checks  map[string]string `json:"checks"`
					Reasons map[string]string `json:"reasons"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("the gateway's /readyz answered %d while %s was frozen: one service must not take it out", resp.StatusCode, frozen)
				}
				for check, state := range body.Checks {
					if _, ok := seen[check]; state != "ok" && !ok {
						seen[check] = body.Reasons[check]
					}
				}
			}
			time.Sleep(time.Second)
		}
		out <- seen
	}()
	return out
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*99/100]
}

// printFreezeReport prints each freeze row's figures beside the issue's
// goals: first 503s within the deadline, then within 50 ms; the others'
// p99 within 2 × the quiet run's; /readyz naming only the frozen one;
// recovery within 10 s of SIGCONT.
func printFreezeReport() {
	var lines []string
	for _, r := range report {
		f := r.frozen
		if f == nil {
			continue
		}
		ratio := 0.0
		if q := p99(f.quiet); q > 0 {
			ratio = float64(p99(f.others)) / float64(q)
		}
		lines = append(lines, fmt.Sprintf("%s frozen %s: breaker open %s after SIGSTOP; routed 503s before: %d, slowest %s (goal: the deadline, %s, and %s for the gateway: %s); "+
			"refused while open: %d, p99 %s (goal %s: %s), %d half-open probes; others: p99 %s of %d vs quiet %s of %d = %.2f × (goal ≤ 2: %s); "+
			"/readyz named %v; rate limiter failed open %v times; answered again %s after SIGCONT (goal %s: %s), everything %s",
			f.service, f.hold, f.openedAfter.Round(10*time.Millisecond), f.beforeOpen, f.firstSlowest.Round(time.Millisecond), upstreamTimeout, gatewayMargin,
			met(f.beforeOpen > 0 && f.firstSlowest <= upstreamTimeout+gatewayMargin),
			len(f.refused), p99(f.refused).Round(100*time.Microsecond), refusedGoal, met(len(f.refused) > 0 && p99(f.refused) <= refusedGoal), f.probes,
			p99(f.others).Round(time.Millisecond), len(f.others), p99(f.quiet).Round(time.Millisecond), len(f.quiet), ratio, met(ratio > 0 && ratio <= 2),
			f.readyz, f.failedOpen, f.recoveredAfter.Round(10*time.Millisecond), recoveryGoal, met(f.answered && f.recoveredAfter <= recoveryGoal), f.allAfter.Round(10*time.Millisecond)))
	}
	if len(lines) > 0 {
		fmt.Println("\nfrozen services (FULL=1 for the 30 s rows):")
		for _, l := range lines {
			fmt.Println("  " + l)
		}
	}
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
