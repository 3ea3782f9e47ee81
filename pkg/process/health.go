package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/singleflight"
)

// CheckTimeout bounds one readiness check unless the check names its own
// bound: a dependency that has not answered by then is reported as not
// answering, and the other checks are not held up by it (each runs on its
// own).
const CheckTimeout = 2 * time.Second

// SnapshotAge is how long /readyz answers from one round of checks before
// a caller starts the next. /readyz needs no token, so without it every
// call would probe every dependency (the gateway's: every service behind
// it): a caller could multiply its own load onto the whole registry.
// Within this age every caller shares the last round, and callers that
// come while a round runs wait for that round rather than start their own.
const SnapshotAge = time.Second

// HealthCheck is a readiness check of one dependency. /readyz shows a failing
// check as "unavailable" and says what it saw under "reasons": the probe's
// own ReadinessReason() when its error has that method, otherwise what can
// be said without the error's text (no answer in time, connection refused).
// Error texts are never shown: they can name internal hosts, and /readyz
// needs no token.
type HealthCheck struct {
	Name string
	// Optional checks are reported but do not fail readiness: the find
	// cache being down makes the service slower, not unable to serve.
	Optional bool
	// Timeout bounds this check alone; 0 means CheckTimeout.
	Timeout time.Duration
	Probe   func(context.Context) error
}

// HTTPCheck probes a dependency that has readiness of its own: it wants a
// 200 from url (its /readyz, say).
func HTTPCheck(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return statusError{url: url, status: resp.StatusCode}
		}
		return nil
	}
}

// statusError is a dependency that answered its readiness check with
// another status than 200.
type statusError struct {
	url    string
	status int
}

func (e statusError) Error() string { return fmt.Sprintf("%s answered %d", e.url, e.status) }

func (e statusError) ReadinessReason() string { return fmt.Sprintf("answered %d", e.status) }

// Health serves /healthz and /readyz.
type Health struct {
	checks   []HealthCheck
	draining atomic.Bool
	maxAge   time.Duration

	rounds singleflight.Group
	mu     sync.Mutex
	last   *snapshot
}

// snapshot is the outcome of one round of checks.
type snapshot struct {
	at      time.Time // when the round ended
	ready   bool      // every required check passed
	results map[string]string
	reasons map[string]string
}

// NewHealth returns the probes over checks.
func NewHealth(checks ...HealthCheck) *Health {
	return &Health{checks: checks, maxAge: SnapshotAge}
}

// WithSnapshotAge sets how long one round of checks answers /readyz
// (SnapshotAge by default); tests that count probes make it long.
func (h *Health) WithSnapshotAge(age time.Duration) *Health {
	h.maxAge = age
	return h
}

// Healthz answers 200 while the process runs.
func (h *Health) Healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Readyz answers 200 when every required dependency answers, else 503. Its
// body lists every check, says what a failing one saw, and when the round
// it reports ran (checked_at). Draining after SIGTERM shows at once.
func (h *Health) Readyz(w http.ResponseWriter, _ *http.Request) {
	s := h.current()
	results := s.results
	ready := s.ready
	if h.draining.Load() {
		results = make(map[string]string, len(s.results)+1)
		for k, v := range s.results {
			results[k] = v
		}
		results["shutdown"] = "draining"
		ready = false
	}
	status, code := "ready", http.StatusOK
	if !ready {
		status, code = "not ready", http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "5")
	}
	body := map[string]any{"status": status, "checks": results, "checked_at": s.at.UTC().Format(time.RFC3339Nano)}
	if len(s.reasons) > 0 {
		body["reasons"] = s.reasons
	}
	writeJSON(w, code, body)
}

// current is the last round's outcome while it is recent, else the outcome
// of a new round, which every caller arriving meanwhile shares.
func (h *Health) current() snapshot {
	if s := h.recent(); s != nil {
		return *s
	}
	v, _, _ := h.rounds.Do("round", func() (any, error) {
		if s := h.recent(); s != nil {
			return s, nil // a round ended while this caller waited for the lock
		}
		s := h.round()
		h.mu.Lock()
		h.last = s
		h.mu.Unlock()
		return s, nil
	})
	return *v.(*snapshot)
}

func (h *Health) recent() *snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last != nil && time.Since(h.last.at) < h.maxAge {
		return h.last
	}
	return nil
}

// round runs every check at once, each with its own deadline, so that one
// dependency that hangs is reported as such and the others as what they
// are. It runs apart from any caller's request: a caller that leaves does
// not cut short the round the others wait for.
func (h *Health) round() *snapshot {
	type outcome struct {
		check  HealthCheck
		reason string
		err    error
	}
	outcomes := make(chan outcome, len(h.checks))
	for _, c := range h.checks {
		go func() {
			reason, err := runCheck(c)
			outcomes <- outcome{c, reason, err}
		}()
	}
	s := &snapshot{ready: true, results: map[string]string{}, reasons: map[string]string{}}
	for range h.checks {
		o := <-outcomes
		if o.err == nil {
			s.results[o.check.Name] = "ok"
			continue
		}
		s.results[o.check.Name] = "unavailable"
		if o.reason != "" {
			s.reasons[o.check.Name] = o.reason
		}
		if !o.check.Optional {
			s.ready = false
		}
	}
	s.at = time.Now()
	return s
}

// runCheck runs one check within its deadline and says what it saw. A
// probe that does not heed its context is not waited for past the
// deadline.
func runCheck(c HealthCheck) (reason string, err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = CheckTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Probe(ctx) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		return "", nil
	}
	return describe(err, timeout), err
}

// describe says what a failed check saw without the error's text, which
// may name internal hosts.
func describe(err error, timeout time.Duration) string {
	var reasoned interface{ ReadinessReason() string }
	var timedOut interface{ Timeout() bool }
	var dns *net.DNSError
	switch {
	case errors.As(err, &reasoned):
		return reasoned.ReadinessReason()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &timedOut) && timedOut.Timeout():
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dns):
		return "its address does not resolve"
	}
	return ""
}

// Mount adds the probes to mux; limit, when given, stands in front of
// /readyz (the gateway's per-address budget).
func (h *Health) Mount(mux *http.ServeMux, limit ...func(http.Handler) http.Handler) {
	mux.HandleFunc("GET /healthz", h.Healthz)
	var readyz http.Handler = http.HandlerFunc(h.Readyz)
	for _, l := range limit {
		readyz = l(readyz)
	}
	mux.Handle("GET /readyz", readyz)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
