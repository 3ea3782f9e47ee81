package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/telemetry"
	"github.com/assetregistry/registry/tools/testkit"
)

// upstream stands in for a service: it records what the gateway forwarded
// and serves a small OpenAPI document.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []*http.Request
	bodies []string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi.json" {
			_ = json.NewEncoder(w).Encode(map[string]any{
				"openapi": "3.1.0",
				"paths": map[string]any{
					"/organizations": map[string]any{}, "/organization/find": map[string]any{}, "/people": map[string]any{},
				},
				"components": map[string]any{"schemas": map[string]any{"Problem": map[string]any{}}},
			})
			return
		}
		var body []byte
		if strings.HasSuffix(r.URL.Path, "/batch") { // other tests' bodies may be slow on purpose
			body, _ = io.ReadAll(r.Body)
		}
		u.mu.Lock()
		u.seen = append(u.seen, r.Clone(r.Context()))
		u.bodies = append(u.bodies, string(body))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id")) // as services do
		if cost := r.Header.Get("Test-Cost"); cost != "" {           // what a large answer declares
			w.Header().Set(httpx.CostHeader, cost)
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) last(t *testing.T) *http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		t.Fatal("nothing reached the service")
	}
	return u.seen[len(u.seen)-1]
}

// lastBody is the body of the last request the service got.
func (u *upstream) lastBody(t *testing.T) string {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		t.Fatal("nothing reached the service")
	}
	return u.bodies[len(u.bodies)-1]
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.seen)
}

type fixture struct {
	client   testkit.Client
	issuer   *testkit.Issuer
	upstream *upstream
	gateway  *Gateway
}

func newGateway(t *testing.T, mutate func(*Config), prepare ...func(*Gateway)) fixture {
	t.Helper()
	issuer := testkit.NewIssuer(t, "https://registry.test")
	up := newUpstream(t)
	parties := up.URL
	cfg := Config{OIDC: auth.Config{Issuer: issuer.URL, Audience: issuer.Audience, Leeway: testkit.Leeway}, Upstreams: map[string]*string{"parties": &parties}}
	if mutate != nil {
		mutate(&cfg)
	}
	g, url := start(t, cfg, prepare...)
	return fixture{client: testkit.Client{BaseURL: url}, issuer: issuer, upstream: up, gateway: g}
}

// start runs a gateway of cfg until the test ends and returns its URL;
// prepare changes the gateway before it serves a call.
func start(t *testing.T, cfg Config, prepare ...func(*Gateway)) (*Gateway, string) {
	t.Helper()
	g, err := New(withDefaults(cfg), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	for _, p := range prepare {
		p(g)
	}
	srv := httptest.NewServer(g.Handler)
	t.Cleanup(srv.Close)
	return g, srv.URL
}

// withDefaults gives what a test's Config leaves out the flags' defaults.
func withDefaults(cfg Config) Config {
	var defaults Config
	defaults.RegisterFlags(flag.NewFlagSet("defaults", flag.PanicOnError))
	if cfg.Upstream.Timeout == 0 {
		cfg.Upstream.Timeout = defaults.Upstream.Timeout
	}
	if cfg.Upstream.IdleTimeout == 0 {
		cfg.Upstream.IdleTimeout = defaults.Upstream.IdleTimeout
	}
	if cfg.RateLimit.Probes.Quota == 0 {
		cfg.RateLimit.Probes = defaults.RateLimit.Probes
	}
	if cfg.RateLimit.Items.Quota == 0 {
		cfg.RateLimit.Items = defaults.RateLimit.Items
	}
	return cfg
}

func TestForwarding(t *testing.T) {
	// Not parallel: it installs the process's tracer provider, and with it
	// every handler built afterwards makes spans.
	spans := tracetest.NewInMemoryExporter()
	shutdown, err := telemetry.SetupTracing(t.Context(), "api-gateway", spans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	f := newGateway(t, nil)
	rw := f.issuer.ReadWrite(t)
	r := testkit.Expect(t, f.client.Do(t, "GET", "/organizations/?country=no", rw, nil, "X-Request-Id", "client-chosen"), 200)
	got := f.upstream.last(t)
	if got.URL.Path != "/organizations/" || got.URL.RawQuery != "country=no" {
		t.Errorf("forwarded %s?%s, want the client's own path and query", got.URL.Path, got.URL.RawQuery)
	}
	if got.Header.Get("Authorization") != "Bearer "+rw {
		t.Error("the caller's token was not passed on; services verify it again")
	}
	id := got.Header.Get("X-Request-Id")
	if id == "" || id == "client-chosen" || r.Header.Get("X-Request-Id") != id {
		t.Errorf("request id: forwarded %q, answered %q", id, r.Header.Get("X-Request-Id"))
	}
	traceparent := got.Header.Get("Traceparent")
	var server, client bool
	for deadline := time.Now().Add(5 * time.Second); !(server && client) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // the server span ends just after the answer is sent
		_ = otel.GetTracerProvider().(*sdktrace.TracerProvider).ForceFlush(t.Context())
		for _, s := range spans.GetSpans() {
			server = server || s.SpanKind == trace.SpanKindServer && strings.Contains(traceparent, s.SpanContext.TraceID().String())
			client = client || s.SpanKind == trace.SpanKindClient && strings.Contains(traceparent, s.SpanContext.SpanID().String())
		}
	}
	if !server || !client {
		t.Errorf("traceparent %q does not continue the gateway's spans (%d recorded)", traceparent, len(spans.GetSpans()))
	}
	testkit.Expect(t, f.client.Do(t, "POST", "/organization/find", f.issuer.ReadOnly(t), map[string]any{}), 200)
	if f.upstream.last(t).URL.Path != "/organization/find" {
		t.Error("the singular find path was not routed")
	}
}

func TestAuthAndRouting(t *testing.T) {
	t.Parallel()
	f := newGateway(t, nil)
	ro := f.issuer.ReadOnly(t)
	tests := []struct {
		name, method, path, token string
		status                    int
	}{
		{"no token", "GET", "/organizations", "", 401},
		{"no token, unknown path", "GET", "/nowhere", "", 401},
		{"invalid token", "GET", "/people", "x.y.z", 401},
		{"unknown path", "GET", "/nowhere", ro, 404},
		{"prefix is matched by segment", "GET", "/organizationsx", ro, 404},
		{"service not deployed", "GET", "/assets", ro, 404},
		{"read-only token writes", "DELETE", "/people/1", ro, 403},
		{"read-only token creates by find", "POST", "/people/find?create=true", ro, 403},
		{"read-only token finds", "POST", "/people/find?create=false", ro, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.upstream.count()
			testkit.Expect(t, f.client.Do(t, tt.method, tt.path, tt.token, nil), tt.status)
			if forwarded := f.upstream.count() > before; forwarded != (tt.status == 200) {
				t.Errorf("forwarded = %v for status %d", forwarded, tt.status)
			}
		})
	}
}

func TestServiceDownIs503(t *testing.T) {
	t.Parallel()
	f := newGateway(t, func(c *Config) {
		dead := "http://127.0.0.1:1"
		c.Upstreams["parties"] = &dead
	})
	r := testkit.Expect(t, f.client.Do(t, "GET", "/people", f.issuer.ReadOnly(t), nil), 503)
	if r.Header.Get("Retry-After") == "" || strings.Contains(string(r.Raw), "127.0.0.1") {
		t.Errorf("503: Retry-After %q, body %s", r.Header.Get("Retry-After"), r.Raw)
	}
	// The problem names the service that is not up (make run starts some
	// after the first call's), never its address.
	if detail, _ := r.JSON()["detail"].(string); !strings.Contains(detail, "the parties service is unavailable") {
		t.Errorf("503's detail %q does not name the parties service", detail)
	}
	ready := f.client.Do(t, "GET", "/readyz", "", nil)
	if ready.Status != 200 || ready.JSON()["checks"].(map[string]any)["parties"] != "unavailable" {
		t.Errorf("readyz = %d %s: a down service is reported but must not take the gateway out", ready.Status, ready.Raw)
	}
}

func TestIssuerDownMakesGatewayUnready(t *testing.T) {
	t.Parallel()
	f := newGateway(t, func(c *Config) { c.OIDC.Issuer = "http://127.0.0.1:1" })
	r := f.client.Do(t, "GET", "/readyz", "", nil)
	reasons, _ := r.JSON()["reasons"].(map[string]any)
	if r.Status != 503 || reasons["oidc"] != "the issuer http://127.0.0.1:1 cannot be reached (connection refused)" {
		t.Errorf("readyz = %d %s, want 503 saying why the issuer cannot be used", r.Status, r.Raw)
	}
	testkit.Expect(t, f.client.Do(t, "GET", "/people", "a.b.c", nil), 503)
}

// Two Authorization headers are refused before anything is forwarded: the
// gateway and the service might each read a different one.
func TestTwoAuthorizationHeadersAreABadRequest(t *testing.T) {
	t.Parallel()
	f := newGateway(t, nil)
	req, err := http.NewRequest("GET", f.client.BaseURL+"/people", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Authorization", "Bearer "+f.issuer.ReadOnly(t))
	req.Header.Add("Authorization", "Bearer "+f.issuer.ReadWrite(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 400 || body["type"] != httpx.ProblemTypePrefix+"bad-request" ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_request"`) {
		t.Errorf("%d %v (WWW-Authenticate %q), want a 400 bad-request problem with an invalid_request challenge",
			resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
	}
	if n := f.upstream.count(); n != 0 {
		t.Errorf("%d requests reached the service", n)
	}
}

// The start-time check: an issuer that publishes another spelling of
// itself (here with the trailing slash) stops the gateway, naming both; one
// that is down does not (its keys load once it answers).
func TestCheckIssuer(t *testing.T) {
	t.Parallel()
	f := newGateway(t, nil)
	if err := f.gateway.CheckIssuer(t.Context(), log.NewNopLogger()); err != nil {
		t.Errorf("the test issuer: %v", err)
	}
	slash := newGateway(t, nil)
	slash.issuer.DiscoveredIssuer = slash.issuer.URL + "/"
	err := slash.gateway.CheckIssuer(t.Context(), log.NewNopLogger())
	if !errors.Is(err, auth.ErrIssuerMismatch) || !strings.Contains(err.Error(), fmt.Sprintf("%q, but oidc.issuer is %q", slash.issuer.URL+"/", slash.issuer.URL)) {
		t.Errorf("an issuer publishing a trailing slash: %v, want a refusal naming both values", err)
	}
	down := newGateway(t, func(c *Config) { c.OIDC.Issuer = "http://127.0.0.1:1" })
	if err := down.gateway.CheckIssuer(t.Context(), log.NewNopLogger()); err != nil {
		t.Errorf("an issuer that is down: %v, want the gateway to start", err)
	}
}

func TestDocs(t *testing.T) {
	t.Parallel()
	f := newGateway(t, nil)
	for _, path := range []string{"/docs", "/docs/organizations", "/docs/people/", "/docs/people/swagger-ui.css", "/openapi.json", "/openapi/organizations.json"} {
		r := f.client.Do(t, "GET", path, "", nil)
		if r.Status != 200 {
			t.Errorf("GET %s = %d", path, r.Status)
		}
		checkDocumentationHeaders(t, path, r)
	}
	checkDocumentationHeaders(t, "/docs/nothing", f.client.Do(t, "GET", "/docs/nothing", "", nil))
	testkit.Expect(t, f.client.Do(t, "GET", "/docs/assets", "", nil), 404) // service not deployed
	orgs := f.client.Do(t, "GET", "/openapi/organizations.json", "", nil).JSON()
	paths := orgs["paths"].(map[string]any)
	if len(paths) != 2 || paths["/people"] != nil {
		t.Errorf("organizations document paths = %v", paths)
	}
	merged := f.client.Do(t, "GET", "/openapi.json", "", nil).JSON()
	if len(merged["paths"].(map[string]any)) != 3 || merged["servers"] == nil {
		t.Errorf("merged document = %v", merged)
	}
}

// The passport check page answers without a token, whole in one file: it
// loads nothing (no src, no stylesheet), runs its own inline script alone
// and may fetch from the registry only.
func TestVerifyPage(t *testing.T) {
	t.Parallel()
	f := newGateway(t, nil)
	r := testkit.Expect(t, f.client.Do(t, "GET", "/verify", "", nil), 200)
	checkDocumentationHeaders(t, "/verify", r)
	page := string(r.Raw)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || strings.Contains(page, "src=") || strings.Contains(page, "<link") ||
		!strings.Contains(page, `"Ed25519"`) || !strings.Contains(page, "verifyPassport") {
		t.Errorf("the page: %s, %.200s", r.Header.Get("Content-Type"), page)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
}

// checkDocumentationHeaders: a documentation answer lets a browser load
// nothing from another host, run no inline script but the page's own, and
// sniff no content type.
func checkDocumentationHeaders(t *testing.T, path string, r testkit.Response) {
	t.Helper()
	if r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options = %q", path, r.Header.Get("X-Content-Type-Options"))
	}
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		strings.Contains(csp, "http") || strings.Contains(csp, "*") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
		t.Errorf("%s: Content-Security-Policy = %q", path, csp)
	}
	if path != "/docs/organizations" && path != "/verify" {
		return
	}
	// The page's inline scripts, and only they, are allowed by hash.
	scripts := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllStringSubmatch(string(r.Raw), -1)
	if len(scripts) == 0 {
		t.Fatalf("%s: no inline script to check", path)
	}
	for _, m := range scripts {
		sum := sha256.Sum256([]byte(m[1]))
		if hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, hash) {
			t.Errorf("%s: an inline script's hash %s is not in %q", path, hash, csp)
		}
	}
}

func TestOneRequestIDHeader(t *testing.T) {
	t.Parallel()
	f := newGateway(t, nil)
	r := f.client.Do(t, "GET", "/people", f.issuer.ReadOnly(t), nil)
	if ids := r.Header.Values("X-Request-Id"); len(ids) != 1 {
		t.Errorf("X-Request-Id = %v, want exactly one", ids)
	}
}

// A service whose API document defines a shared component name differently
// from another's stops the gateway at start, naming the component.
func TestCheckDocumentsRefusesDisagreement(t *testing.T) {
	saved := catalog.Services
	t.Cleanup(func() { catalog.Services = saved })
	catalog.Services = append(slices.Clone(saved), catalog.Service{
		Deployable: catalog.Deployable{Name: "other", Port: 8199, MetricsPort: 9199},
		Resources:  []catalog.Resource{{Name: "others", Prefixes: []string{"/others"}}},
	})
	serveDoc := func(problemType string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]any{
				"openapi": "3.1.0", "paths": map[string]any{},
				"components": map[string]any{"schemas": map[string]any{"Problem": map[string]any{"type": problemType}}},
			})
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	issuer := testkit.NewIssuer(t, "https://registry.test")
	for _, tt := range []struct {
		name      string
		other     string
		wantError bool
	}{
		{"same definition", "object", false},
		{"different definition", "string", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parties, other := serveDoc("object"), serveDoc(tt.other)
			g, err := New(withDefaults(Config{OIDC: auth.Config{Issuer: issuer.URL, Audience: issuer.Audience, Leeway: testkit.Leeway}, Upstreams: map[string]*string{"parties": &parties, "other": &other}}), log.NewNopLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			err = g.CheckDocuments(t.Context(), time.Second, log.NewNopLogger())
			if tt.wantError != (err != nil) {
				t.Fatalf("err = %v, want error: %v", err, tt.wantError)
			}
			if err != nil && !strings.Contains(err.Error(), "schemas/Problem") {
				t.Errorf("the error does not name the component: %v", err)
			}
		})
	}
}

// A resource's history belongs to the events service (the catalog says
// so); everything else under the resource's prefix stays with its owner.
func TestHistoryGoesToTheEventsService(t *testing.T) {
	t.Parallel()
	events := newUpstream(t)
	f := newGateway(t, func(c *Config) {
		u := events.URL
		c.Upstreams["events"] = &u
	})
	ro := f.issuer.ReadOnly(t)
	id := "0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f"
	tests := []struct {
		path   string
		events bool
	}{
		{"/organizations/" + id + "/history", true},
		{"/organizations/" + id + "/history/", true},
		{"/people/" + id + "/history?limit=5", true},
		{"/organizations/" + id, false},
		{"/organizations/" + id + "/people", false},
		{"/events?after=now", true},
		{"/webhooks", true},
		// A resource as it was, from its history.
		{"/organizations/" + id + "?as_of=2025-03-14T09:26:53Z", true},
		{"/organizations/" + id + "/?as_of=2025-03-14T09:26:53Z", true},
		{"/organizations?as_of=2025-03-14T09:26:53Z", false},
		{"/log/checkpoint", true},
	}
	for _, tt := range tests {
		before, beforeOwner := events.count(), f.upstream.count()
		testkit.Expect(t, f.client.Do(t, "GET", tt.path, ro, nil), 200)
		if got := events.count() > before; got != tt.events || (f.upstream.count() > beforeOwner) == tt.events {
			t.Errorf("%s: reached the events service %v, want %v", tt.path, got, tt.events)
		}
	}
	if got := events.last(t).URL.Path; got != "/log/checkpoint" {
		t.Errorf("forwarded %s", got)
	}
	// A write with as_of is still the owner's (who refuses the parameter).
	before := events.count()
	f.client.Do(t, "DELETE", "/organizations/"+id+"?as_of=2025-03-14T09:26:53Z", f.issuer.ReadWrite(t), nil)
	if events.count() != before {
		t.Error("a DELETE with as_of reached the events service")
	}
}

// The log's checkpoint and keys answer a stranger: without a token the
// call reaches the events service as it is, and nothing else of the
// service does; with a bad token it is refused like any call.
func TestAnonymousRoutesNeedNoToken(t *testing.T) {
	t.Parallel()
	events := newUpstream(t)
	f := newGateway(t, func(c *Config) {
		u := events.URL
		c.Upstreams["events"] = &u
	})
	tests := []struct {
		name, method, path, token string
		status                    int
	}{
		{"checkpoint", "GET", "/log/checkpoint", "", 200},
		{"checkpoint, trailing slash", "GET", "/log/checkpoint/", "", 200},
		{"keys", "GET", "/log/keys", "", 200},
		{"keys with a token", "GET", "/log/keys", f.issuer.ReadOnly(t), 200},
		{"keys with a bad token", "GET", "/log/keys", "x.y.z", 401},
		{"a write of the same path", "POST", "/log/checkpoint", "", 401},
		{"a proof", "GET", "/log/inclusion?leaf_index=0", "", 401},
		{"an entry", "GET", "/log/entry?leaf_index=0", "", 401},
		{"the feed", "GET", "/events", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := events.count()
			testkit.Expect(t, f.client.Do(t, tt.method, tt.path, tt.token, nil), tt.status)
			if forwarded := events.count() > before; forwarded != (tt.status == 200) {
				t.Errorf("forwarded = %v for status %d", forwarded, tt.status)
			}
			if tt.status == 200 && tt.token == "" && events.last(t).Header.Get("Authorization") != "" {
				t.Error("an Authorization header reached the service")
			}
		})
	}
}
