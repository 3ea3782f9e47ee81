// Package gateway is the registry's public front door: it verifies bearer
// tokens, enforces the read/write scope, routes each public path to the
// service that owns it, and serves the interactive API documentation.
package gateway

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// Resource is one public resource with the service that owns it; the list
// is pkg/catalog's, so a new service is routed by its catalog entry.
type Resource = catalog.OwnedResource

// Config of the gateway.
type Config struct {
	Server    process.ServerConfig
	OIDC      auth.Config
	Log       telemetry.LogConfig
	Upstreams map[string]*string
	// Upstream bounds the calls to the services: deadlines by kind of
	// request, breakers.
	Upstream  UpstreamConfig
	RateLimit RateLimitConfig
	// DocsStartupWait bounds how long the start waits for services' API
	// documents to check that they agree.
	DocsStartupWait time.Duration
	// UploadMaxSize is the largest file an upload (a multipart/form-data
	// body) may carry through the gateway; the body may hold
	// httpx.UploadFormOverhead more. Other bodies are JSON, limited to
	// httpx.MaxJSONBody.
	UploadMaxSize int64

	// wrapVerifier, in tests, stands around the token verifier (to count
	// the signatures checked).
	wrapVerifier func(auth.TokenVerifier) auth.TokenVerifier
}

// DefaultLogFlushInterval is the gateway's log.flush-interval: its lines
// reach the output at most this late.
const DefaultLogFlushInterval = 50 * time.Millisecond

// DefaultUploadMaxSize is the documents service's own default limit
// (documents.max-size), so that by default the gateway refuses exactly
// what the service would.
const DefaultUploadMaxSize = 100 << 20

// RegisterFlags adds every flag (upstream.parties ↔ UPSTREAM_PARTIES, ...).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Server.RegisterFlags(fs, ":8080", ":9090")
	c.OIDC.RegisterFlags(fs)
	// Every call is an access-log line: the gateway writes them in batches
	// (one system call for many lines) rather than one by one.
	c.Log.FlushInterval = DefaultLogFlushInterval
	c.Log.RegisterFlags(fs)
	c.RateLimit.RegisterFlags(fs)
	c.Upstream.RegisterFlags(fs)
	fs.DurationVar(&c.DocsStartupWait, "docs.startup-wait", 30*time.Second,
		"at start, how long to wait for the services' API documents, which must agree on shared components")
	fs.Int64Var(&c.UploadMaxSize, "upload.max-size", DefaultUploadMaxSize,
		"largest file an upload (multipart/form-data body) may carry, in bytes; keep it at the documents service's documents.max-size (over it: 413)")
	c.Upstreams = map[string]*string{}
	// Each upstream is optional, so the gateway can front a partial
	// installation (a service without a URL leaves its paths unrouted).
	for _, s := range catalog.Names() {
		c.Upstreams[s] = fs.String("upstream."+s, "", "base URL of the "+s+" service; empty leaves its paths unrouted")
	}
}

// Gateway is the gateway's HTTP stack and probes.
type Gateway struct {
	Handler  http.Handler
	Health   *process.Health
	docs     *docs
	verifier *auth.Verifier
	limiter  *rateLimiter // nil when limits are off
}

// CheckIssuer is the start-time check of the token issuer (auth.Verifier.Start):
// an issuer whose discovery document names another issuer than oidc.issuer
// stops the gateway; one that cannot be reached yet is logged and retried.
func (g *Gateway) CheckIssuer(ctx context.Context, logger log.Logger) error {
	return g.verifier.Start(ctx, logger)
}

// Close stops the background key refresh and closes the limiter's Redis
// connections.
func (g *Gateway) Close() {
	g.verifier.Close()
	if g.limiter != nil {
		_ = g.limiter.Close()
	}
}

// New builds the gateway's handler and health checks.
func New(cfg Config, logger log.Logger) (*Gateway, error) {
	if err := cfg.Upstream.Validate(); err != nil {
		return nil, err
	}
	limiter, err := newRateLimiter(cfg.RateLimit, logger)
	if err != nil {
		return nil, err
	}
	verifier, err := auth.NewVerifier(cfg.OIDC)
	if err != nil {
		if limiter != nil {
			_ = limiter.Close()
		}
		return nil, err
	}
	upstreams := map[string]*url.URL{}
	for name, raw := range cfg.Upstreams {
		if raw == nil || *raw == "" {
			continue
		}
		u, err := url.Parse(*raw)
		if err != nil || u.Scheme == "" || u.Host == "" {
			(&Gateway{verifier: verifier, limiter: limiter}).Close()
			return nil, fmt.Errorf("gateway: upstream.%s %q is not an absolute URL", name, *raw)
		}
		upstreams[name] = u
	}
	proxies := map[string]http.Handler{}
	checks := []process.HealthCheck{{Name: "oidc", Probe: verifier.Ready}}
	for name, u := range upstreams {
		proxies[name] = newServiceProxy(name, newProxy(u), cfg.Upstream, logger)
		// Optional, each on its own: one service down must not take the
		// gateway (and every other service's paths) out of its load
		// balancer; the body names it. A service's own round of checks
		// takes up to process.CheckTimeout, so its answer is waited for a
		// little longer.
		checks = append(checks, process.HealthCheck{Name: name, Optional: true, Timeout: process.CheckTimeout + time.Second,
			Probe: process.HTTPCheck(u.JoinPath("/readyz").String())})
	}
	var gate auth.Gate
	if limiter != nil {
		// Optional: the limit fails open, so Redis being down must not
		// take the gateway out of service.
		checks = append(checks, process.HealthCheck{Name: "rate-limit", Optional: true, Probe: limiter.Ready})
		gate = addressGate{limiter}
	}
	health := process.NewHealth(checks...)

	public := http.NewServeMux()
	// /readyz needs no token: besides its snapshot (process.Health), each
	// source address has a budget of calls to it.
	health.Mount(public, limiter.Probes)
	docs := newDocs(upstreams)
	docs.Mount(public)
	mountVerify(public)

	uploadMax := cfg.UploadMaxSize
	if uploadMax <= 0 {
		uploadMax = DefaultUploadMaxSize
	}
	routed := limitBodies(uploadMax)(limiter.Items(route(proxies)))
	// Calls without a valid token draw on their address's budget before
	// any signature is checked (the gate); every authenticated call, a 404
	// or 403 included, on its client's budget, and carries its headers.
	var tokens auth.TokenVerifier = verifier
	if cfg.wrapVerifier != nil {
		tokens = cfg.wrapVerifier(verifier)
	}
	protected := auth.AuthenticateGated(tokens, gate)(limiter.Clients(routeOrNotFound(proxies, auth.RequireScope(routed))))
	kept := newPublicCache()
	for _, res := range catalog.Resources() {
		proxy, configured := proxies[res.Service]
		for _, pattern := range res.Anonymous {
			if configured {
				public.Handle(pattern, withoutToken(proxy, protected, gate, kept))
			}
		}
	}
	return &Gateway{
		Handler:  process.Stack(logger, "api-gateway", false, public, protected, cfg.Server.Read),
		Health:   health,
		docs:     docs,
		verifier: verifier,
		limiter:  limiter,
	}, nil
}

// resourceFor returns the resource that answers path: the one whose
// prefix owns it, or one the catalog declares under it (a resource's
// history, answered by the events service).
func resourceFor(path string) (Resource, string, bool) { return catalog.Route(path) }

// resourceOf is resourceFor for a request: a GET of a resource with as_of
// is its history's (catalog.RouteRequest).
func resourceOf(r *http.Request) (Resource, string, bool) {
	return catalog.RouteRequest(r.Method, r.URL.Path, r.URL.RawQuery)
}

// withoutToken serves a route that answers without a token (the catalog's
// Anonymous): a call that carries none goes to its service as it is,
// charged to its source address's budget as a call with a bad token would
// be, or, when the service said its answer may be kept for good (a full
// tile of the log), is answered from kept once charged; one that carries a
// token goes the way of every authenticated call (its client's budget and
// headers, a 401 if the token is bad).
func withoutToken(proxy, authenticated http.Handler, gate auth.Gate, kept *publicCache) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			authenticated.ServeHTTP(w, r)
			return
		}
		if gate != nil {
			if err := gate.Refused(r); err != nil {
				httpx.WriteProblem(r.Context(), err, w)
				return
			}
		}
		kept.serve(anonymousCost(w, r, gate), r, proxy)
	})
}

// anonymousCost charges what an answer without a token declares it cost
// beyond its one request (a passport through its link, by its size) to
// the source address's budget, as costly does a client's, and keeps the
// declaration from the caller.
func anonymousCost(w http.ResponseWriter, r *http.Request, gate auth.Gate) http.ResponseWriter {
	if !chargedBySize(r) {
		return w
	}
	charge := func(int) {}
	if g, ok := gate.(addressGate); ok {
		charge = func(cost int) { g.charge(r, cost) }
	}
	return &costWriter{ResponseWriter: w, charge: charge}
}

// routeOrNotFound answers 404 for paths no configured service owns before
// any scope check, so an unknown path is a 404 for every caller.
func routeOrNotFound(proxies map[string]http.Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, prefix, ok := resourceOf(r)
		if _, configured := proxies[res.Service]; !ok || !configured {
			httpx.WriteProblem(r.Context(), apperr.New(apperr.KindNotFound, "no resource at "+httpx.RequestInfoFrom(r.Context()).Path), w)
			return
		}
		route := prefix + "/*"
		switch {
		case res.Query != "":
			route += "?" + res.Query
		case len(res.Under) > 0:
			route += "/" + res.Name
		}
		httpx.RequestInfoFrom(r.Context()).SetRoute(route)
		next.ServeHTTP(w, r)
	})
}

// limitBodies refuses a body over its limit before it is passed on: one
// that says so in Content-Length at once, any other (chunked) as it
// crosses the limit, whatever the service behind would do with it. An
// upload (multipart/form-data) may hold a file of uploadMax bytes and the
// form around it; any other body is JSON, limited by the contract.
func limitBodies(uploadMax int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			limit, what := int64(httpx.MaxJSONBody), "a JSON body"
			upload := httpx.IsUpload(r)
			if upload {
				limit, what = uploadMax+httpx.UploadFormOverhead, "an upload"
			}
			if r.ContentLength > limit {
				httpx.WriteProblem(r.Context(), apperr.New(apperr.KindTooLarge,
					fmt.Sprintf("the request body is larger than %d bytes, the limit of %s", limit, what)), w)
				return
			}
			body := &trackedBody{body: r.Body, limited: http.MaxBytesReader(w, r.Body, limit)}
			r.Body = body
			// A batch is read whole whatever its size, so that its items
			// can be counted against the item budget (Items).
			if !upload && (isBatch(r) || r.ContentLength > 0 && r.ContentLength <= forwardWhole) {
				if err := readWhole(r, body); err != nil {
					httpx.WriteProblem(r.Context(), err, w)
					return
				}
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), trackedBodyKey{}, body)))
			if r.Header.Get("Expect") != "" {
				body.abandon(w)
			}
		})
	}
}

// forwardWhole is the largest JSON body the gateway reads whole before it
// forwards the request. A body the transport has to stream is sent after
// the header, in a write of its own (net/http flushes the header first
// unless the body is already in memory), and the service then waits for
// it in a read of its own: two system calls and a wake-up more on each
// side for every find and create, a small body included. Larger bodies and
// uploads still stream.
const forwardWhole = 64 << 10

// readWhole reads r's body (its Content-Length, or to its end when it has
// none, within the limit) and puts it back in memory. A body too slow is
// the 408 it would have been in the proxy; one over its limit the 413; one
// that ends early is the client's mistake or departure.
func readWhole(r *http.Request, body *trackedBody) error {
	var buf []byte
	var err error
	if r.ContentLength >= 0 {
		buf = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, buf)
	} else {
		buf, err = io.ReadAll(body)
	}
	if err != nil {
		if p := httpx.BodyProblem(errors.Join(err, body.failure())); p != nil {
			return p
		}
		return apperr.BadRequest("the request body ended before its Content-Length")
	}
	r.Body = io.NopCloser(bytes.NewReader(buf))
	body.whole = buf
	return nil
}

// wholeBody is the body readWhole read, for the proxy to forward from
// memory (the ReverseProxy wraps the body it gets in a reader net/http
// does not know to be in memory, so it would still flush the header
// first).
func wholeBody(r *http.Request) ([]byte, bool) {
	if b, ok := r.Context().Value(trackedBodyKey{}).(*trackedBody); ok && b.whole != nil {
		return b.whole, true
	}
	return nil, false
}

// trackedBody records how far a body was read and why it ended. The
// proxy reads it on the transport's goroutine, which may still be reading
// when the answer is given (a service that answers before the body
// ends), so reads are serialised.
type trackedBody struct {
	body    io.ReadCloser // the client's
	limited io.Reader     // body, up to the gateway's limit

	whole []byte // the body, when readWhole read it before forwarding

	mu             sync.Mutex
	started, ended bool
	err            error // the first error other than io.EOF
}

type trackedBodyKey struct{}

var errAbandoned = errors.New("the request was answered before its body ended")

func (b *trackedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return 0, cmp.Or(b.err, io.EOF)
	}
	n, err := b.limited.Read(p)
	b.started = true
	if err != nil {
		b.ended = true
		if !errors.Is(err, io.EOF) {
			b.err = err
		}
	}
	return n, err
}

func (b *trackedBody) Close() error { return b.body.Close() }

// abandon covers what net/http does not, after a client's 100-continue:
// answered before its body ended (the gateway's limit, or a service that
// refused the body early), net/http closes the connection at once, and
// the client's next write meets a reset instead of the answer. Without
// 100-continue net/http marks such a body abandoned itself and lingers.
// abandon sends the answer, then reads on past a limit of zero through
// net/http's own ResponseWriter, which marks the body abandoned the same
// way. It runs on the handler's goroutine, as that mark must.
func (b *trackedBody) abandon(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
	b.mu.Lock()
	defer b.mu.Unlock()
	var maxBytes *http.MaxBytesError
	if !b.started || (b.ended && !errors.As(b.err, &maxBytes)) {
		return // never started (no 100 Continue went out) or read to its end
	}
	_, _ = http.MaxBytesReader(unwrapWriter(w), b.body, 0).Read(make([]byte, 1))
	b.ended, b.err = true, cmp.Or(b.err, errAbandoned)
}

func (b *trackedBody) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// bodyError is why the client's body could not be read to its end, if it
// could not: over its limit or too slow. When the body was too slow,
// net/http also cancels the request's context, so the proxy reports the
// cancellation, not the cause.
func bodyError(r *http.Request) error {
	if b, ok := r.Context().Value(trackedBodyKey{}).(*trackedBody); ok {
		return b.failure()
	}
	return nil
}

// unwrapWriter finds net/http's own ResponseWriter under the middleware's
// wrappers (they unwrap, as http.ResponseController expects).
func unwrapWriter(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

func route(proxies map[string]http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, _, _ := resourceOf(r)
		proxies[res.Service].ServeHTTP(w, r)
	})
}

// resourceNames lists the resources whose service is configured.
func resourceNames(upstreams map[string]*url.URL) []string {
	var names []string
	for _, r := range catalog.Resources() {
		if _, ok := upstreams[r.Service]; ok {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return names
}
