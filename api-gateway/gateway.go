// Package gateway is the registry's public front door: it verifies bearer
// tokens, enforces the read/write scope, routes each public path to the
// service that owns it, and serves the interactive API documentation.
package gateway

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/logging"
	"github.com/assetregistry/registry/pkg/problem"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/reqinfo"
	"github.com/assetregistry/registry/pkg/server"
)

// Resource is one public resource with the service that owns it; the list
// is pkg/catalog's, so a new service is routed by its catalog entry.
type Resource = catalog.OwnedResource

// Config of the gateway.
type Config struct {
	Server    server.Config
	OIDC      auth.Config
	Log       logging.Config
	Upstreams map[string]*string
	RateLimit RateLimitConfig
	// DocsStartupWait bounds how long the start waits for services' API
	// documents to check that they agree.
	DocsStartupWait time.Duration
}

// RegisterFlags adds every flag (upstream.parties ↔ UPSTREAM_PARTIES, ...).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Server.RegisterFlags(fs, ":8080", ":9090")
	c.OIDC.RegisterFlags(fs)
	c.Log.RegisterFlags(fs)
	c.RateLimit.RegisterFlags(fs)
	fs.DurationVar(&c.DocsStartupWait, "docs.startup-wait", 30*time.Second,
		"at start, how long to wait for the services' API documents, which must agree on shared components")
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
	Health   *server.Health
	docs     *docs
	verifier *auth.Verifier
	close    func()
}

// CheckIssuer is the start-time check of the token issuer (auth.Verifier.Start):
// an issuer whose discovery document names another issuer than oidc.issuer
// stops the gateway; one that cannot be reached yet is logged and retried.
func (g *Gateway) CheckIssuer(ctx context.Context, logger log.Logger) error {
	return g.verifier.Start(ctx, logger)
}

// Close stops the background key refresh.
func (g *Gateway) Close() { g.close() }

// New builds the gateway's handler and health checks.
func New(cfg Config, logger log.Logger) (*Gateway, error) {
	verifier, err := auth.NewVerifier(cfg.OIDC)
	if err != nil {
		return nil, err
	}
	upstreams := map[string]*url.URL{}
	for name, raw := range cfg.Upstreams {
		if raw == nil || *raw == "" {
			continue
		}
		u, err := url.Parse(*raw)
		if err != nil || u.Scheme == "" || u.Host == "" {
			verifier.Close()
			return nil, fmt.Errorf("gateway: upstream.%s %q is not an absolute URL", name, *raw)
		}
		upstreams[name] = u
	}
	proxies := map[string]http.Handler{}
	checks := []server.Check{{Name: "oidc", Probe: verifier.Ready}}
	for name, u := range upstreams {
		proxies[name] = newProxy(u)
		checks = append(checks, server.Check{Name: name, Optional: true, Probe: server.HTTPCheck(u.JoinPath("/readyz").String())})
	}
	health := server.NewHealth(checks...)

	public := http.NewServeMux()
	health.Mount(public)
	docs := newDocs(upstreams)
	docs.Mount(public)

	routed := route(proxies)
	limited := newRateLimiter(cfg.RateLimit).Middleware(auth.RequireScope(routed))
	protected := auth.Authenticate(verifier)(routeOrNotFound(proxies, limited))
	return &Gateway{
		Handler:  process.Stack(logger, "api-gateway", false, public, protected),
		Health:   health,
		docs:     docs,
		verifier: verifier,
		close:    verifier.Close,
	}, nil
}

// resourceFor returns the resource whose prefix owns path.
func resourceFor(path string) (Resource, string, bool) {
	for _, r := range catalog.Resources() {
		for _, p := range r.Prefixes {
			if path == p || strings.HasPrefix(path, p+"/") {
				return r, p, true
			}
		}
	}
	return Resource{}, "", false
}

// routeOrNotFound answers 404 for paths no configured service owns before
// any scope check, so an unknown path is a 404 for every caller.
func routeOrNotFound(proxies map[string]http.Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, prefix, ok := resourceFor(r.URL.Path)
		if _, configured := proxies[res.Service]; !ok || !configured {
			problem.Write(r.Context(), apperr.New(apperr.KindNotFound, "no resource at "+reqinfo.From(r.Context()).Path), w)
			return
		}
		reqinfo.From(r.Context()).SetRoute(prefix + "/*")
		next.ServeHTTP(w, r)
	})
}

func route(proxies map[string]http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, _, _ := resourceFor(r.URL.Path)
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
