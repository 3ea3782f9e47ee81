package peer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/tools/testkit"
)

// seen is what the peer learned about a call.
type seen struct {
	RequestID, TraceParent, Subject, Caller string
}

// newPeer is a service's internal API behind the real token check and
// scope rule.
func newPeer(t *testing.T, issuer *testkit.Issuer) (*httptest.Server, chan seen) {
	t.Helper()
	verifier, err := auth.NewVerifier(auth.Config{Issuer: issuer.URL, Audience: issuer.Audience, Leeway: testkit.Leeway})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(verifier.Close)
	calls := make(chan seen, 10)
	r := httpx.NewRouter(auth.RequireScope)
	r.Handle("POST", "/internal/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.PrincipalFrom(r.Context())
		calls <- seen{RequestID: r.Header.Get(httpx.RequestIDHeader), TraceParent: r.Header.Get("traceparent"),
			Subject: auth.Subject(r.Context()), Caller: p.Subject}
		_ = json.NewEncoder(w).Encode(map[string]string{"ok": "yes"})
	}))
	r.Handle("POST", "/internal/slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	r.Handle("POST", "/internal/fail/{status}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("status") {
		case "404":
			httpx.WriteProblem(r.Context(), apperr.NotFound("document", "x"), w)
		case "422":
			httpx.WriteProblem(r.Context(), apperr.Invalid(apperr.FieldError{Field: "kind", Message: "unknown"}), w)
		case "500":
			httpx.WriteProblem(r.Context(), apperr.New(apperr.KindInternal, ""), w)
		}
	}))
	srv := httptest.NewServer(httpx.WithRequestInfo(true)(auth.Authenticate(verifier)(r)))
	t.Cleanup(srv.Close)
	return srv, calls
}

func clients(t *testing.T, issuer *testkit.Issuer, url string) *peer.Clients {
	t.Helper()
	token := issuer.Token(t, "svc-assets", auth.ScopeInternal)
	cs, err := peer.NewClients(peer.Config{
		URLs:        map[string]*string{"documents": &url},
		Timeout:     300 * time.Millisecond,
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token}),
	}, issuer.URL, issuer.Audience)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestCallCarriesIdentityRequestIDAndTrace(t *testing.T) {
	issuer := testkit.NewIssuer(t, "https://registry.test")
	srv, calls := newPeer(t, issuer)
	docs := clients(t, issuer, srv.URL).Get("documents")

	otel.SetTextMapPropagator(propagation.TraceContext{})
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "caller")
	defer span.End()
	ctx = httpx.ContextWithRequestInfo(ctx, &httpx.RequestInfo{ID: "req-123"})
	ctx = auth.WithPrincipal(ctx, auth.Principal{Subject: "integration-1"})

	var out map[string]string
	if err := docs.Call(ctx, "POST", "/internal/echo", map[string]int{"n": 1}, &out); err != nil || out["ok"] != "yes" {
		t.Fatalf("call: %v, %v", out, err)
	}
	got := <-calls
	if got.RequestID != "req-123" || got.Caller != "svc-assets" || got.Subject != "integration-1" {
		t.Errorf("the peer saw %+v", got)
	}
	if got.TraceParent == "" || got.TraceParent[3:35] != span.SpanContext().TraceID().String() {
		t.Errorf("traceparent %q does not continue trace %s", got.TraceParent, span.SpanContext().TraceID())
	}
}

func TestIntegrationTokensCannotCallInternalPaths(t *testing.T) {
	issuer := testkit.NewIssuer(t, "https://registry.test")
	srv, _ := newPeer(t, issuer)
	req, _ := http.NewRequest("POST", srv.URL+"/internal/echo", nil)
	req.Header.Set("Authorization", "Bearer "+issuer.ReadWrite(t))
	req.Header.Set(peer.OnBehalfOfHeader, "someone-else")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("an integration's token on an internal path: %d, want 403", resp.StatusCode)
	}
}

func TestFailuresBecomeKinds(t *testing.T) {
	issuer := testkit.NewIssuer(t, "https://registry.test")
	srv, _ := newPeer(t, issuer)
	docs := clients(t, issuer, srv.URL).Get("documents")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	gone := clients(t, issuer, closed.URL).Get("documents")
	tests := []struct {
		name   string
		client *peer.Client
		path   string
		kind   apperr.Kind
	}{
		{"not found passes through", docs, "/internal/fail/404", apperr.KindNotFound},
		{"invalid passes through", docs, "/internal/fail/422", apperr.KindInvalid},
		{"a failing peer is unavailable", docs, "/internal/fail/500", apperr.KindUnavailable},
		{"a slow peer is unavailable, not a hang", docs, "/internal/slow", apperr.KindUnavailable},
		{"an unreachable peer is unavailable", gone, "/internal/echo", apperr.KindUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.client.Call(t.Context(), "POST", tt.path, nil, nil)
			if !apperr.Is(err, tt.kind) {
				t.Errorf("err = %v, want kind %v", err, tt.kind)
			}
		})
	}
}

func TestConfiguration(t *testing.T) {
	url := "http://127.0.0.1:1"
	if _, err := peer.NewClients(peer.Config{URLs: map[string]*string{"documents": &url}}, "http://idp", "aud"); err == nil {
		t.Error("peers without a machine identity were accepted")
	}
	cs, err := peer.NewClients(peer.Config{URLs: map[string]*string{"documents": new(string)}}, "http://idp", "aud")
	if err != nil || cs.Get("documents") != nil {
		t.Errorf("an unconfigured peer: %v, %v", cs.Get("documents"), err)
	}
}

// Without peer.token-url the service's own tokens come from the token
// endpoint the issuer's discovery document names, asked for with the
// internal scope and the registry as resource and audience.
func TestTokenEndpointFromDiscovery(t *testing.T) {
	var form url.Values
	issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]string{"token_endpoint": "http://" + r.Host + "/oauth2/token"})
		case "/oauth2/token":
			_ = r.ParseForm()
			form = r.PostForm
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"machine-token","token_type":"Bearer","expires_in":300}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer issuer.Close()
	var gotAuth string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer target.Close()
	cs, err := peer.NewClients(peer.Config{URLs: map[string]*string{"documents": &target.URL}, Timeout: 2 * time.Second,
		ClientID: "svc-assets", ClientSecret: "s3cret"}, issuer.URL, "https://registry.test")
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Get("documents").Call(t.Context(), "POST", "/internal/x", nil, nil); err != nil {
		t.Fatal(err)
	}
	if gotAuth != "Bearer machine-token" || form.Get("scope") != auth.ScopeInternal ||
		form.Get("resource") != "https://registry.test" || form.Get("audience") != "https://registry.test" {
		t.Errorf("Authorization %q, token request %v", gotAuth, form)
	}
}

// A peer slower than its callers holds at most peer.max-in-flight of their
// calls; the next is a 503 with Retry-After at once, not a wait.
func TestBulkhead(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.WriteHeader(http.StatusNoContent)
	}))
	defer slow.Close()
	defer close(release)
	url := slow.URL
	cs, err := peer.NewClients(peer.Config{URLs: map[string]*string{"slow": &url}, Timeout: 5 * time.Second, MaxInFlight: 2,
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c := cs.Get("slow")
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- c.Call(t.Context(), "POST", "/internal/x", nil, nil) }()
	}
	time.Sleep(100 * time.Millisecond) // both are in flight
	start := time.Now()
	err = c.Call(t.Context(), "POST", "/internal/x", nil, nil)
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.KindUnavailable || e.Headers["Retry-After"] == "" {
		t.Fatalf("the third call: %v", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("the third call waited %s", waited)
	}
	release <- struct{}{}
	release <- struct{}{}
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("a call in flight: %v", err)
		}
	}
}

// A peer that stops answering: after breaker-failures timeouts in a row
// calls are refused at once, without reaching it; after breaker-open-for
// one probe at a time goes through, and the first answer closes the
// breaker. Answers of any status never open it, and neither do callers
// that left.
func TestBreaker(t *testing.T) {
	var hits, holding atomic.Int32
	var mode atomic.Value // "hang", "404", "503", "hold" (answer when released), "ok"
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch mode.Load() {
		case "hang":
			<-r.Context().Done()
		case "404":
			httpx.WriteProblem(r.Context(), apperr.NotFound("document", "x"), w)
		case "503":
			httpx.WriteProblem(r.Context(), apperr.Unavailable("the database", nil), w)
		case "hold":
			holding.Add(1)
			<-release
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(srv.Close)
	url := srv.URL
	cs, err := peer.NewClients(peer.Config{URLs: map[string]*string{"documents": &url}, Timeout: 200 * time.Millisecond,
		Breaker:     peer.BreakerConfig{Failures: 3, OpenFor: 50 * time.Millisecond},
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c := cs.Get("documents")
	call := func(ctx context.Context) error { return c.Call(ctx, "POST", "/internal/x", nil, nil) }
	reached := func(ctx context.Context) (bool, error) {
		before := hits.Load()
		err := call(ctx)
		return hits.Load() > before, err
	}

	for _, answer := range []string{"404", "503"} {
		mode.Store(answer)
		for range 5 {
			if ok, _ := reached(t.Context()); !ok {
				t.Fatalf("a call was refused after answers %s: an answer is no failure", answer)
			}
		}
	}
	mode.Store("hang")
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	for range 5 {
		_ = call(gone) // the caller left: says nothing about the peer
	}
	if ok, _ := reached(t.Context()); !ok {
		t.Fatal("callers that left opened the breaker")
	}
	for range 2 { // three timeouts in a row with the one above
		if ok, _ := reached(t.Context()); !ok {
			t.Fatal("the breaker opened before three timeouts in a row")
		}
	}
	ok, err := reached(t.Context())
	var e *apperr.Error
	if ok || !errors.As(err, &e) || e.Kind != apperr.KindUnavailable || e.Headers["Retry-After"] == "" {
		t.Fatalf("after three timeouts in a row: reached %v, %v; want a 503 with Retry-After without a call", ok, err)
	}

	// Half-open: one probe at a time.
	mode.Store("hold")
	probe := make(chan error, 1)
	go func() {
		for {
			ok, err := reached(t.Context())
			if ok {
				probe <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	for holding.Load() == 0 { // the probe is at the peer
		time.Sleep(10 * time.Millisecond)
	}
	if ok, _ := reached(t.Context()); ok {
		t.Error("a second call went through while the probe was in flight")
	}
	close(release)
	if err := <-probe; err != nil {
		t.Fatalf("the probe: %v", err)
	}
	mode.Store("ok")
	for range 3 {
		if ok, err := reached(t.Context()); !ok || err != nil {
			t.Fatalf("after the probe was answered: reached %v, %v", ok, err)
		}
	}
}
