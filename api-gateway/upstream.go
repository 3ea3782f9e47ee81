package gateway

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/peer"
)

// UpstreamConfig bounds how long the gateway waits on the services behind
// it, by kind of request, and when it stops calling one that is down.
//
// An ordinary call (JSON) must have the header of its answer within
// Timeout: a few seconds past the services' own request.timeout, so a
// service that is slow but working answers itself, and one that is frozen
// costs its callers that long and no longer. An upload or a download has
// no total: it may take as long as its size and the client's pace need,
// but the service may not stay silent (no byte taken or given) for
// IdleTimeout. The answer's body of any call is bounded the same way.
// Time the gateway spends waiting on the client (a slow upload, a client
// that reads its download slowly) never counts: that is the client's pace,
// which the body deadlines (http.body-timeout, http.upload-min-rate) bound.
type UpstreamConfig struct {
	Timeout     time.Duration
	IdleTimeout time.Duration
	// RouteTimeouts and RouteIdleTimeouts override the two by resource
	// (its catalog name: organizations, compliance, documents, history).
	RouteTimeouts     Durations
	RouteIdleTimeouts Durations
	Breaker           peer.BreakerConfig
}

// RegisterFlags adds the upstream.* flags (env UPSTREAM_TIMEOUT, ...).
func (c *UpstreamConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Timeout, "upstream.timeout", 20*time.Second,
		"how long a service may take to start answering an ordinary (JSON) call, not counting time spent waiting on the client; then 503 with Retry-After. Keep it a few seconds above the services' request.timeout")
	fs.DurationVar(&c.IdleTimeout, "upstream.idle-timeout", 30*time.Second,
		"how long a service may stay silent (no byte taken or given) during an upload, a download or any answer's body; then 503 (or the answer is cut). Uploads and downloads have no total bound")
	fs.Var(&c.RouteTimeouts, "upstream.route-timeouts", "upstream.timeout of particular resources, <resource>=<duration>,... (compliance=40s)")
	fs.Var(&c.RouteIdleTimeouts, "upstream.route-idle-timeouts", "upstream.idle-timeout of particular resources, <resource>=<duration>,... (documents=2m)")
	c.Breaker.RegisterFlags(fs, "upstream", "a service behind the gateway")
}

// Validate says what is wrong with the configuration, at start.
func (c UpstreamConfig) Validate() error {
	if c.Timeout <= 0 || c.IdleTimeout <= 0 {
		return errors.New("gateway: upstream.timeout and upstream.idle-timeout must be positive")
	}
	known := map[string]bool{}
	for _, r := range catalog.Resources() {
		known[r.Name] = true
	}
	for _, routes := range []Durations{c.RouteTimeouts, c.RouteIdleTimeouts} {
		for name, d := range routes {
			if !known[name] {
				return fmt.Errorf("gateway: upstream.route-*: %q is no resource of the registry", name)
			}
			if d <= 0 {
				return fmt.Errorf("gateway: upstream.route-*: %s=%s must be positive", name, d)
			}
		}
	}
	return nil
}

// deadlines are the bounds of a request to resource: the total to the
// answer's header (0: none, an upload) and the longest silence.
func (c UpstreamConfig) deadlines(resource string, upload bool) (total, idle time.Duration) {
	total, idle = c.Timeout, c.IdleTimeout
	if d, ok := c.RouteTimeouts[resource]; ok {
		total = d
	}
	if d, ok := c.RouteIdleTimeouts[resource]; ok {
		idle = d
	}
	if upload {
		total = 0 // bounded by progress, not by its size over the client's pace
	}
	return total, idle
}

// Durations is a flag of <name>=<duration> pairs, comma-separated.
type Durations map[string]time.Duration

func (d *Durations) String() string {
	if d == nil {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(*d)) {
		parts = append(parts, k+"="+(*d)[k].String())
	}
	return strings.Join(parts, ",")
}

func (d *Durations) Set(s string) error {
	m := Durations{}
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		dur, err := time.ParseDuration(strings.TrimSpace(value))
		if !ok || err != nil {
			return fmt.Errorf("%q is not <resource>=<duration>", part)
		}
		m[strings.TrimSpace(name)] = dur
	}
	*d = m
	return nil
}

// errStalled is why a call was cut: the service did not answer within its
// deadline, or stayed silent too long.
var errStalled = errors.New("the service did not answer in time")

// watch bounds one call's waiting on its service. Its clock runs while
// the gateway waits on the service (connecting, sending what it has of the
// body, waiting for the header, reading the answer's body) and stands
// still while it waits on the client (a read of the client's body) or
// writes to it, so a slow client never makes a service look stalled.
type watch struct {
	total, idle time.Duration
	cancel      context.CancelCauseFunc

	mu          sync.Mutex
	timer       *time.Timer
	armed       bool          // the timer is set to fire at due
	due         time.Time     // when it fires, if armed
	running     bool          // the gateway waits on the service now
	since       time.Time     // when the current stretch of waiting began
	spent       time.Duration // waiting before the header, towards total
	quiet       time.Duration // waiting since a byte last moved, towards idle
	headerIn    bool
	clientReads int
	stopped     bool
}

// start sets the clock of a new watch running; the watch lives in its
// call (call.deadlines), one allocation less per call.
func (w *watch) start(total, idle time.Duration, cancel context.CancelCauseFunc) {
	w.total, w.idle, w.cancel, w.running, w.since = total, idle, cancel, true, time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	left := w.left()
	w.timer = time.AfterFunc(left, w.fire)
	w.armed, w.due = true, w.since.Add(left)
}

// add counts the stretch of waiting up to now.
func (w *watch) add(now time.Time) {
	if !w.running {
		return
	}
	d := now.Sub(w.since)
	w.quiet += d
	if !w.headerIn {
		w.spent += d
	}
	w.since = now
}

// left is the time to the earliest bound still ahead, the clock running.
func (w *watch) left() time.Duration {
	left := w.idle - w.quiet
	if w.total > 0 && !w.headerIn {
		left = min(left, w.total-w.spent)
	}
	return max(left, 0)
}

// arm makes the timer fire no later than the earliest bound still ahead,
// if the clock runs (w.since is now). A timer that will fire sooner is
// left as it is, and so is one set while the clock stands: fire then
// finds no bound reached and sets it again. So a call's many stretches of
// waiting (the header, each read of the answer's body) cost no timer
// operation each, only the call's first and last.
func (w *watch) arm() {
	if w.stopped {
		w.timer.Stop()
		w.armed = false
		return
	}
	if !w.running {
		return
	}
	due := w.since.Add(w.left())
	if w.armed && !w.due.After(due) {
		return
	}
	w.armed, w.due = true, due
	w.timer.Reset(due.Sub(w.since))
}

func (w *watch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if w.stopped {
		return
	}
	w.add(time.Now())
	if w.running && (w.quiet >= w.idle || w.total > 0 && !w.headerIn && w.spent >= w.total) {
		w.stopped = true
		w.cancel(errStalled)
		return
	}
	w.arm()
}

// set moves the clock: running or standing, and whether a byte moved.
func (w *watch) set(running, moved bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.add(now)
	if moved {
		w.quiet = 0
	}
	if running && !w.running {
		w.since = now
	}
	w.running = running
	w.arm()
}

// clientRead brackets a read of the client's body.
func (w *watch) clientRead(start bool, n int) {
	w.mu.Lock()
	if start {
		w.clientReads++
	} else {
		w.clientReads--
	}
	running := !start && w.clientReads == 0 && !w.headerIn
	w.mu.Unlock()
	w.set(running, n > 0)
}

// header: the answer's header arrived; from now on only reads of its body
// wait on the service.
func (w *watch) header() {
	w.mu.Lock()
	w.add(time.Now())
	w.headerIn = true
	w.mu.Unlock()
	w.set(false, true)
}

func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
}

// clientBody is the client's body as the proxy sends it on: the clock
// stands still while a read of it waits for the client.
type clientBody struct {
	io.ReadCloser
	w *watch
}

func (b clientBody) Read(p []byte) (int, error) {
	b.w.clientRead(true, 0)
	n, err := b.ReadCloser.Read(p)
	b.w.clientRead(false, n)
	return n, err
}

// serviceBody is the answer's body as the proxy copies it to the client:
// the clock runs while a read of it waits for the service.
type serviceBody struct {
	io.ReadCloser
	w *watch
}

func (b serviceBody) Read(p []byte) (int, error) {
	b.w.set(true, false)
	n, err := b.ReadCloser.Read(p)
	b.w.set(false, n > 0)
	return n, err
}

// call is one request's passage through an upstream: the client's own
// context, its watch, and the transport's error if there was one.
type call struct {
	client context.Context
	watch  *watch // &deadlines
	// deadlines is the watch, in the call's own allocation.
	deadlines watch
	err       error
	charged   bool // the resource's answers may declare their cost (catalog ChargedBySize)
	service   string
}

type callKey struct{}

func callOf(r *http.Request) *call {
	c, _ := r.Context().Value(callKey{}).(*call)
	return c
}

// stalled reports whether the call was cut by its watch.
func stalled(r *http.Request) bool { return errors.Is(context.Cause(r.Context()), errStalled) }

// serviceProxy is the way to one service: its breaker, then the proxy under
// the call's deadlines.
type serviceProxy struct {
	name string
	// refusal names the service in the 503 of its open breaker: made once,
	// not on every call.
	refusal string
	proxy   http.Handler
	breaker *peer.Breaker
	cfg     UpstreamConfig
}

func newServiceProxy(name string, proxy http.Handler, cfg UpstreamConfig, logger log.Logger) *serviceProxy {
	return &serviceProxy{name: name, refusal: "the " + name + " service", proxy: proxy, cfg: cfg, breaker: peer.NewBreaker(name, cfg.Breaker, upstreamBreakers,
		func(name, from, to string) {
			level.Warn(logger).Log("msg", "upstream breaker changed state", "upstream", name, "from", from, "to", to)
		})}
}

func (u *serviceProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	done, err := u.breaker.Allow(u.refusal)
	if err != nil {
		upstreamRefused.WithLabelValues(u.name).Inc()
		httpx.WriteProblem(r.Context(), err, w)
		return
	}
	res, _, _ := resourceOf(r)
	total, idle := u.cfg.deadlines(res.Name, httpx.IsUpload(r))
	ctx, cancel := context.WithCancelCause(r.Context())
	c := &call{client: r.Context(), charged: res.ChargedBySize, service: u.name}
	c.watch = &c.deadlines
	c.watch.start(total, idle, cancel)
	r = r.WithContext(context.WithValue(ctx, callKey{}, c))
	defer func() {
		c.watch.stop()
		done(u.outcome(r, c))
		cancel(nil)
	}()
	u.proxy.ServeHTTP(w, r)
}

// outcome is what the call says about the service, for its breaker: only
// a deadline missed or a connection that failed is the service's failure;
// a client that left, or whose body was too slow or too large, says
// nothing about it, and any answer (a 4xx, a 503 of its own) is one.
func (u *serviceProxy) outcome(r *http.Request, c *call) peer.Outcome {
	switch {
	case c.client.Err() != nil, bodyError(r) != nil:
		return peer.Ignored
	case stalled(r), c.err != nil:
		return peer.Failed
	}
	return peer.Answered
}

// upstreamBreakers are the gateway's breakers, by upstream (service).
var upstreamBreakers = peer.BreakerMetrics{
	State: promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gateway_upstream_breaker_state",
		Help: "State of the gateway's breaker of calls to a service: 0 closed, 1 half-open (one probe decides), 2 open (calls answered 503 at once).",
	}, []string{"upstream"}),
	Opened: promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_upstream_breaker_opened_total",
		Help: "Times the gateway's breaker of calls to a service opened after consecutive timeouts or connection failures.",
	}, []string{"upstream"}),
}

var upstreamRefused = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "gateway_upstream_refused_total",
	Help: "Calls the gateway answered 503 at once because the breaker of their service was open.",
}, []string{"upstream"})
