package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/tools/testkit"
)

// frozen is a service that takes calls and never answers them (a process
// stopped with SIGSTOP, as far as its callers can tell), or answers as
// mode says.
type frozen struct {
	reached atomic.Int32
	mode    atomic.Value // "hang", "404", "503", "ok"
}

func (f *frozen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.reached.Add(1)
	switch f.mode.Load() {
	case "hang":
		// net/http notices a closed connection only once the body is read
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // the gateway gave up and closed the connection
	case "404":
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(404)
		_, _ = io.WriteString(w, `{"status":404}`)
	case "503":
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(503)
		_, _ = io.WriteString(w, `{"status":503}`)
	default:
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}
}

func frozenGateway(t *testing.T, service *frozen, upstream UpstreamConfig) fixture {
	t.Helper()
	return newGateway(t, func(c *Config) {
		serviceAt(t, service)(c)
		c.Upstream = upstream
	})
}

// A call to a service that does not answer is a 503 problem with
// Retry-After once its deadline has passed, not a wait for as long as the
// client cares to hold on.
func TestFrozenServiceIs503(t *testing.T) {
	t.Parallel()
	service := &frozen{}
	service.mode.Store("hang")
	f := frozenGateway(t, service, UpstreamConfig{Timeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
	f.client.HTTP = &http.Client{Timeout: 30 * time.Second} // before, the gateway waited 60 s: a client error here
	rw := f.issuer.ReadWrite(t)
	for _, call := range []struct{ method, path, contentType, body string }{
		{"GET", "/people", "", ""},
		{"POST", "/organizations", "application/json", `{"name":"x"}`},
		{"POST", "/organizations", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc\r\n--b--\r\n"},
	} {
		t.Run(call.method+" "+call.contentType, func(t *testing.T) {
			var body io.Reader
			if call.body != "" {
				body = strings.NewReader(call.body)
			}
			req, err := http.NewRequest(call.method, f.client.BaseURL+call.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+rw)
			if call.contentType != "" {
				req.Header.Set("Content-Type", call.contentType)
			}
			resp, err := f.client.HTTP.Do(req)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" ||
				!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
				t.Errorf("%d %v: %s", resp.StatusCode, resp.Header, raw)
			}
		})
	}
}

// After breaker-failures timeouts in a row a service's calls are answered
// 503 at once without reaching it; answers of any status (a 4xx, a 503 of
// its own) and clients that leave never open the breaker; after
// breaker-open-for one probe finds the service back and the calls go
// through again.
func TestUpstreamBreaker(t *testing.T) {
	// Not parallel: the breaker metrics of "parties" are the process's,
	// moved by every other test's gateway whose upstream fails.
	service := &frozen{}
	f := frozenGateway(t, service, UpstreamConfig{Timeout: 200 * time.Millisecond, IdleTimeout: time.Second,
		// open long enough that the checks below meet it open, not half-open
		Breaker: peer.BreakerConfig{Failures: 3, OpenFor: 2 * time.Second}})
	ro := f.issuer.ReadOnly(t)
	reaches := func(want int) bool {
		before := service.reached.Load()
		r := f.client.Do(t, "GET", "/people", ro, nil)
		if r.Status != want {
			t.Errorf("status %d, want %d: %s", r.Status, want, r.Raw)
		}
		return service.reached.Load() > before
	}
	for _, answer := range []struct {
		mode   string
		status int
	}{{"404", 404}, {"503", 503}} {
		service.mode.Store(answer.mode)
		for range 5 {
			if !reaches(answer.status) {
				t.Fatalf("a call was refused after %d answers: an answer is no failure", answer.status)
			}
		}
	}
	service.mode.Store("hang")
	for range 5 { // clients that give up before the deadline
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "GET", f.client.BaseURL+"/people", nil)
		req.Header.Set("Authorization", "Bearer "+ro)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		cancel()
	}
	opened := testutil.ToFloat64(upstreamBreakers.Opened.WithLabelValues("parties"))
	for i := range 3 {
		if !reaches(503) {
			t.Fatalf("call %d was refused: clients that left must not count, and the breaker opens after 3 timeouts", i+1)
		}
	}
	if reaches(503) {
		t.Fatal("after three timeouts in a row the call still reached the service")
	}
	r := f.client.Do(t, "GET", "/people", ro, nil)
	if r.Status != 503 || r.Header.Get("Retry-After") == "" || r.JSON()["type"] != httpx.ProblemTypePrefix+"unavailable" {
		t.Errorf("refused: %d %v %s", r.Status, r.Header, r.Raw)
	}
	if got := testutil.ToFloat64(upstreamBreakers.Opened.WithLabelValues("parties")); got != opened+1 {
		t.Errorf("gateway_upstream_breaker_opened_total rose by %v, want 1", got-opened)
	}
	if got := testutil.ToFloat64(upstreamBreakers.State.WithLabelValues("parties")); got == 0 {
		t.Error("gateway_upstream_breaker_state says closed while calls are refused")
	}

	service.mode.Store("ok")
	deadline := time.Now().Add(10 * time.Second)
	for f.client.Do(t, "GET", "/people", ro, nil).Status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("the breaker did not close after the service came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 3 {
		if !reaches(200) {
			t.Fatal("a call was refused after the probe found the service back")
		}
	}
}

// An upload's or a download's time is its size over the client's pace: a
// client slower than the idle deadline between its bytes is neither cut
// nor counted against the service, so many slow clients never open the
// breaker. A service that stays silent that long is cut.
func TestTransfersAreBoundedByProgress(t *testing.T) {
	// Not parallel: it reads the breaker state of "parties", which any
	// other test's gateway with a failing upstream sets.
	service := &frozen{}
	service.mode.Store("ok")
	f := frozenGateway(t, service, UpstreamConfig{Timeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond,
		Breaker: peer.BreakerConfig{Failures: 1, OpenFor: time.Hour}})
	rw := f.issuer.ReadWrite(t)
	for i := range 3 {
		body, w := io.Pipe()
		go func() {
			fmt.Fprint(w, "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n")
			for range 4 { // 4 × 250 ms: longer than both deadlines, in total and between bytes
				time.Sleep(250 * time.Millisecond)
				fmt.Fprint(w, strings.Repeat("x", 100))
			}
			fmt.Fprint(w, "\r\n--b--\r\n")
			w.Close()
		}()
		req, _ := http.NewRequest("POST", f.client.BaseURL+"/organizations", body)
		req.Header.Set("Authorization", "Bearer "+rw)
		req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("slow upload %d: %d %s", i+1, resp.StatusCode, raw)
		}
	}
	if got := testutil.ToFloat64(upstreamBreakers.State.WithLabelValues("parties")); got != 0 {
		t.Errorf("slow clients moved the breaker (state %v)", got)
	}

	// A download whose service falls silent mid-body is cut: the client
	// sees a broken answer (what it had of it may not even have been
	// flushed), not one that never ends.
	silent := newGateway(t, func(c *Config) {
		serviceAt(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			_, _ = io.WriteString(w, strings.Repeat("x", 100))
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}))(c)
		c.Upstream = UpstreamConfig{Timeout: time.Minute, IdleTimeout: 100 * time.Millisecond}
	})
	req, _ := http.NewRequest("GET", silent.client.BaseURL+"/organizations/1/file", nil)
	req.Header.Set("Authorization", "Bearer "+silent.issuer.ReadOnly(t))
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	var got []byte
	if err == nil {
		got, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	var timeout interface{ Timeout() bool }
	if err == nil || len(got) > 100 || errors.As(err, &timeout) && timeout.Timeout() {
		t.Errorf("read %d bytes, err %v: want the answer cut by the gateway", len(got), err)
	}
}

// The gateway's readiness never depends on a service behind it, and its
// body names exactly the ones that failed, each with what its check saw;
// the others are reported as they are (before, one service that hung
// used up a shared deadline and every check after it read unavailable).
func TestReadyzNamesOnlyTheFailedUpstream(t *testing.T) {
	t.Parallel()
	hung := &frozen{}
	hung.mode.Store("hang")
	hungSrv := httptest.NewServer(hung)
	t.Cleanup(hungSrv.Close)
	f := newGateway(t, func(c *Config) {
		for _, name := range []string{"assets", "actions", "documents", "events"} {
			c.Upstreams[name] = &f0(t).URL
		}
		c.Upstreams["assets"] = &hungSrv.URL
	})
	r := f.client.Do(t, "GET", "/readyz", "", nil)
	if r.Status != 200 {
		t.Fatalf("readyz = %d %s: a service down must not take the gateway out", r.Status, r.Raw)
	}
	checks, _ := r.JSON()["checks"].(map[string]any)
	reasons, _ := r.JSON()["reasons"].(map[string]any)
	for _, name := range []string{"parties", "actions", "documents", "events", "oidc"} {
		if checks[name] != "ok" {
			t.Errorf("checks.%s = %v, want ok: %s", name, checks[name], r.Raw)
		}
	}
	if checks["assets"] != "unavailable" || !strings.HasPrefix(fmt.Sprint(reasons["assets"]), "no answer within") {
		t.Errorf("assets: %v (%v), want unavailable, no answer: %s", checks["assets"], reasons["assets"], r.Raw)
	}
	if len(reasons) != 1 {
		t.Errorf("reasons name %v, want assets alone", reasons)
	}
}

// f0 is a service whose /readyz answers 200.
func f0(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }))
	t.Cleanup(srv.Close)
	return srv
}

// /readyz answers without a token, so it has a budget per source address
// beside the others; calls over it are 429s that probe nothing.
func TestReadyzLimitedPerAddress(t *testing.T) {
	t.Parallel()
	f := newGateway(t, limited(testkit.RedisURL(t), testkit.RedisPrefix(t), func(c *RateLimitConfig) {
		c.Probes = Budget{"probes", 3, time.Hour}
	}))
	for range 3 {
		testkit.Expect(t, f.client.Do(t, "GET", "/readyz", "", nil), 200)
	}
	for range 5 {
		r := testkit.Expect(t, f.client.Do(t, "GET", "/readyz", "", nil), 429)
		if r.Header.Get("Retry-After") == "" || !strings.HasPrefix(r.Header.Get("RateLimit-Policy"), `"probes";q=3;w=3600`) {
			t.Fatalf("429 headers %v", r.Header)
		}
	}
	testkit.Expect(t, f.client.Do(t, "GET", "/healthz", "", nil), 200)
	testkit.Expect(t, f.client.Do(t, "GET", "/people", f.issuer.ReadOnly(t), nil), 200)
}

func TestUpstreamSettings(t *testing.T) {
	t.Parallel()
	var d Durations
	if err := d.Set("compliance=40s, documents=2m"); err != nil || d["compliance"] != 40*time.Second || d["documents"] != 2*time.Minute {
		t.Fatalf("%v %v", d, err)
	}
	if d.String() != "compliance=40s,documents=2m0s" {
		t.Errorf("String() = %q", d.String())
	}
	for _, bad := range []string{"compliance", "compliance=soon"} {
		if err := new(Durations).Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	valid := UpstreamConfig{Timeout: time.Second, IdleTimeout: time.Second}
	tests := []struct {
		name string
		cfg  UpstreamConfig
		ok   bool
	}{
		{"defaults", valid, true},
		{"no timeout", UpstreamConfig{IdleTimeout: time.Second}, false},
		{"a resource's own", UpstreamConfig{Timeout: time.Second, IdleTimeout: time.Second, RouteTimeouts: Durations{"compliance": time.Minute}}, true},
		{"an unknown resource", UpstreamConfig{Timeout: time.Second, IdleTimeout: time.Second, RouteIdleTimeouts: Durations{"spaceships": time.Minute}}, false},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	cfg := UpstreamConfig{Timeout: time.Second, IdleTimeout: 2 * time.Second,
		RouteTimeouts: Durations{"compliance": time.Minute}, RouteIdleTimeouts: Durations{"documents": time.Hour}}
	for _, tt := range []struct {
		resource    string
		upload      bool
		total, idle time.Duration
	}{
		{"organizations", false, time.Second, 2 * time.Second},
		{"compliance", false, time.Minute, 2 * time.Second},
		{"documents", false, time.Second, time.Hour},
		{"documents", true, 0, time.Hour},
	} {
		if total, idle := cfg.deadlines(tt.resource, tt.upload); total != tt.total || idle != tt.idle {
			t.Errorf("%s (upload %v): %s, %s; want %s, %s", tt.resource, tt.upload, total, idle, tt.total, tt.idle)
		}
	}
}
