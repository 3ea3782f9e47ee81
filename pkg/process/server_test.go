package process_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/process"
)

func listen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// SIGTERM (here: cancelling the context) must let a request that is already
// running finish and be answered, while readiness fails at once.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	health := process.NewHealth()
	health.Mount(mux)
	apiLn, metricsLn := listen(t), listen(t)
	base := "http://" + apiLn.Addr().String()

	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	cfg := process.ServerConfig{ShutdownDelay: 300 * time.Millisecond, ShutdownTimeout: 5 * time.Second}
	go func() { served <- process.Serve(ctx, cfg, log.NewNopLogger(), mux, health, apiLn, metricsLn) }()

	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(body)
	}()
	<-started
	cancel() // SIGTERM

	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("readyz did not fail during shutdown")
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	if got := <-answer; got != "done" {
		t.Fatalf("in-flight request got %q", got)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := http.Get(base + "/readyz"); err == nil {
		t.Fatal("the server still accepts requests after shutdown")
	}
}

func TestReadiness(t *testing.T) {
	down := errors.New("down: dial tcp 10.0.0.7:5432")
	explained := fmt.Errorf("wrapped: %w", reasoned{"the issuer https://idp.example cannot be reached (connection refused)"})
	tests := []struct {
		name    string
		checks  []process.HealthCheck
		status  int
		reasons map[string]any // nil: no reasons member
	}{
		{"all up", []process.HealthCheck{{Name: "db", Probe: ok}}, 200, nil},
		{"required down", []process.HealthCheck{{Name: "db", Probe: func(context.Context) error { return down }}}, 503, nil},
		{"optional down", []process.HealthCheck{{Name: "db", Probe: ok}, {Name: "cache", Optional: true, Probe: func(context.Context) error { return down }}}, 200, nil},
		{"a reason is shown, other errors are not", []process.HealthCheck{
			{Name: "db", Probe: func(context.Context) error { return down }},
			{Name: "oidc", Probe: func(context.Context) error { return explained }},
		}, 503, map[string]any{"oidc": "the issuer https://idp.example cannot be reached (connection refused)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			process.NewHealth(tt.checks...).Mount(mux)
			ln := listen(t)
			srv := &http.Server{Handler: mux}
			go srv.Serve(ln) //nolint:errcheck // closed below
			t.Cleanup(func() { srv.Close() })
			resp, err := http.Get("http://" + ln.Addr().String() + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if got, _ := body["reasons"].(map[string]any); !reflect.DeepEqual(got, tt.reasons) {
				t.Errorf("reasons = %v, want %v", body["reasons"], tt.reasons)
			}
			if tt.status == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
		})
	}
}

// Each check runs on its own, with its own deadline: one that hangs is
// reported as not answering in time, and the others as what they are,
// whatever order they are listed in. (The issue this answers: one frozen
// service used up a shared deadline and every check after it was reported
// unavailable.)
func TestReadinessChecksRunApart(t *testing.T) {
	started := make(chan struct{})
	checks := []process.HealthCheck{
		{Name: "hung", Optional: true, Timeout: 50 * time.Millisecond, Probe: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
		// waits for the next check to have started: listed in order and
		// run one after another, it would never see it and time out
		{Name: "waits", Timeout: time.Minute, Probe: func(ctx context.Context) error {
			select {
			case <-started:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}},
		{Name: "starts", Probe: func(context.Context) error { close(started); return nil }},
		{Name: "refused", Optional: true, Probe: func(context.Context) error {
			return fmt.Errorf("dial tcp 10.0.0.7:6379: %w", syscall.ECONNREFUSED)
		}},
		{Name: "ignores its deadline", Optional: true, Timeout: 50 * time.Millisecond, Probe: func(context.Context) error {
			select {} // a probe that never returns is not waited for
		}},
	}
	status, body := readyz(t, process.NewHealth(checks...))
	if status != 200 {
		t.Errorf("status = %d: only optional checks failed", status)
	}
	wantChecks := map[string]any{"hung": "unavailable", "waits": "ok", "starts": "ok", "refused": "unavailable", "ignores its deadline": "unavailable"}
	if !reflect.DeepEqual(body["checks"], wantChecks) {
		t.Errorf("checks = %v, want %v", body["checks"], wantChecks)
	}
	wantReasons := map[string]any{"hung": "no answer within 50ms", "refused": "connection refused", "ignores its deadline": "no answer within 50ms"}
	if !reflect.DeepEqual(body["reasons"], wantReasons) {
		t.Errorf("reasons = %v, want %v (what each saw, no host names)", body["reasons"], wantReasons)
	}
	if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(body["checked_at"])); err != nil {
		t.Errorf("checked_at = %v: %v", body["checked_at"], err)
	}
}

// /readyz needs no token, so it must not let callers multiply their load
// onto the dependencies: callers share one round of checks, concurrent
// ones included, until the round is older than the snapshot age.
func TestReadyzCallersShareOneRound(t *testing.T) {
	var probes atomic.Int32
	release := make(chan struct{})
	health := process.NewHealth(process.HealthCheck{Name: "db", Probe: func(context.Context) error {
		probes.Add(1)
		<-release
		return nil
	}}).WithSnapshotAge(time.Hour)
	mux := http.NewServeMux()
	health.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/readyz")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("status = %d", resp.StatusCode)
			}
		})
	}
	close(release)
	wg.Wait()
	for range 5 {
		if status, _ := readyz(t, health); status != 200 {
			t.Errorf("status = %d", status)
		}
	}
	if n := probes.Load(); n != 1 {
		t.Errorf("25 calls of /readyz probed the dependency %d times, want once", n)
	}
}

// The issuer's and the database's own answers, shown as the probe gives
// them, and a service behind that is not ready by its status.
func TestHTTPCheckSaysWhatItSaw(t *testing.T) {
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	t.Cleanup(notReady.Close)
	_, body := readyz(t, process.NewHealth(process.HealthCheck{Name: "parties", Optional: true, Probe: process.HTTPCheck(notReady.URL + "/readyz")}))
	if want := map[string]any{"parties": "answered 503"}; !reflect.DeepEqual(body["reasons"], want) {
		t.Errorf("reasons = %v, want %v", body["reasons"], want)
	}
}

// readyz calls health's /readyz and returns its status and body.
func readyz(t *testing.T, health *process.Health) (int, map[string]any) {
	t.Helper()
	w := httptest.NewRecorder()
	health.Readyz(w, httptest.NewRequest("GET", "/readyz", nil))
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	return w.Code, body
}

func ok(context.Context) error { return nil }

// reasoned is a probe error that says why, for /readyz.
type reasoned struct{ reason string }

func (r reasoned) Error() string           { return r.reason + ": with the full cause" }
func (r reasoned) ReadinessReason() string { return r.reason }

// The profiler answers on the metrics port only: on the public port the
// same paths reach the API handler like any other path.
func TestProfilerOnlyOnMetricsPort(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, "api")
	})
	apiLn, metricsLn := listen(t), listen(t)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() {
		served <- process.Serve(ctx, process.ServerConfig{ShutdownTimeout: 5 * time.Second}, log.NewNopLogger(), api, nil, apiLn, metricsLn)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	get := func(base, path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	paths := []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline", "/debug/pprof/symbol"}
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			if status, body := get(apiLn.Addr().String(), path); status != http.StatusUnauthorized || body != "api" {
				t.Errorf("public port: %d %.60q, want the API handler's 401", status, body)
			}
			if status, body := get(metricsLn.Addr().String(), path); status != http.StatusOK || body == "" {
				t.Errorf("metrics port: %d %.60q, want the profile", status, body)
			}
		})
	}
	if status, _ := get(metricsLn.Addr().String(), "/metrics"); status != http.StatusOK {
		t.Errorf("metrics port /metrics: %d", status)
	}
}

// Requests net/http answers by itself, before any handler, get problem
// bodies like every other error; a header over the registry's own limit
// (below net/http's) is answered by the stack with the request's path.
func TestUnreadableRequestsGetProblems(t *testing.T) {
	api := http.NewServeMux()
	api.HandleFunc("/plain", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "a handler's own text", 400) })
	ln := listen(t)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	cfg := process.ServerConfig{ShutdownTimeout: 5 * time.Second}
	handler := process.Stack(log.NewNopLogger(), "test", false, api, http.NotFoundHandler(), cfg.Read)
	go func() { served <- process.Serve(ctx, cfg, log.NewNopLogger(), handler, nil, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	netHTTPLimit := process.NetHTTPHeaderLimit(cfg.Read)
	tests := []struct {
		name     string
		request  string
		status   int
		instance string
		detail   string // a part of it
	}{
		{"malformed request line", "GARBAGE\r\n\r\n", 400, "/", "cannot be read as HTTP"},
		{"malformed header field", "GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400, "/", "cannot be read as HTTP"},
		{"missing Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "/", "missing required Host header"},
		{"header over net/http's limit", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", netHTTPLimit+8<<10) + "\r\n\r\n",
			431, "/", "too large"},
		{"header over the registry's limit", "GET /people?x=1 HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", httpx.DefaultMaxHeaderBytes) + "\r\n\r\n",
			431, "/people", "at most 65536"},
		{"a handler's own plain-text answer is left alone", "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n", 400, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second)) // a hung server fails the test instead of hanging it
			if _, err := io.WriteString(conn, tt.request); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.instance == "" {
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || !strings.Contains(string(body), "a handler's own text") {
					t.Errorf("rewritten: %s %s", ct, body)
				}
				return
			}
			var p map[string]any
			if err := json.Unmarshal(body, &p); err != nil || resp.Header.Get("Content-Type") != httpx.ProblemContentType {
				t.Fatalf("not a problem (%v): %s %s", err, resp.Header.Get("Content-Type"), body)
			}
			if p["status"] != float64(tt.status) || p["instance"] != tt.instance || p["request_id"] != resp.Header.Get("X-Request-Id") ||
				p["request_id"] == "" || !strings.Contains(p["detail"].(string), tt.detail) {
				t.Errorf("problem = %s", body)
			}
		})
	}
}
