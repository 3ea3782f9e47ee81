// Package httpx is everything HTTP that the gateway and every service share:
// routing with problem-shaped 404 and 405 answers, strict JSON decoding,
// query parsing, response encoding for go-kit servers, RFC 9457 problems
// (the one mapping from error kinds to statuses and type URIs), request ids
// and the per-request facts the logs and metrics read, and ETags with the
// conditions a request carries (If-Match, If-None-Match).
package httpx

import (
	"net/http"
	"path"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Router dispatches on net/http's pattern syntax ("/people/{id}") and keeps
// a method table per path, so a known path with an unknown method gets a 405
// problem with an Allow header instead of the standard library's plain-text
// answer, and an unknown path gets a 404 problem.
type Router struct {
	mux    *http.ServeMux
	paths  map[string]*methodTable
	wrap   []func(http.Handler) http.Handler
	routes []Route
}

// Route is one registered method and pattern, with the rules its handler
// declares (the headers it takes, owner-only; pkg/endpoints).
type Route struct {
	Method  string
	Pattern string
	Rules   []string
}

// Declared is a handler that says which rules it follows, so that the
// route table (and the tests comparing it with the API document) can tell.
type Declared interface {
	Rules() []string
}

type methodTable struct {
	pattern  string
	handlers map[string]http.Handler
}

// NewRouter returns an empty router. Each handler registered later is
// wrapped in wrap (first listed outermost) after routing, so what wrap
// refuses (a scope, say) is refused only for a route that exists: an
// unknown path stays a 404 and an unknown method a 405 for every caller.
func NewRouter(wrap ...func(http.Handler) http.Handler) *Router {
	r := &Router{mux: http.NewServeMux(), paths: map[string]*methodTable{}, wrap: wrap}
	r.mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		WriteProblem(req.Context(), apperr.New(apperr.KindNotFound, "no resource at "+RequestInfoFrom(req.Context()).Path), w)
	})
	return r
}

// Handle registers h for method and pattern, e.g. ("GET", "/people/{id}").
// Patterns are written without a trailing slash; Normalize makes both forms
// of a request path reach them.
func (r *Router) Handle(method, pattern string, h http.Handler) {
	t, ok := r.paths[pattern]
	if !ok {
		t = &methodTable{pattern: pattern, handlers: map[string]http.Handler{}}
		r.paths[pattern] = t
		r.mux.Handle(pattern, t)
	}
	if _, dup := t.handlers[method]; dup {
		panic("httpx: duplicate route " + method + " " + pattern)
	}
	t.handlers[method] = Chain(h, r.wrap...)
	route := Route{Method: method, Pattern: pattern}
	if d, ok := h.(Declared); ok {
		route.Rules = d.Rules()
	}
	r.routes = append(r.routes, route)
}

// Routes lists what was registered, in registration order: the route
// table as the router itself sees it (tests compare it with the API
// document).
func (r *Router) Routes() []Route { return slices.Clone(r.routes) }

// ServeHTTP routes the request.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.mux.ServeHTTP(w, req) }

func (t *methodTable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet // net/http drops the body of a HEAD answer
	}
	h, ok := t.handlers[method]
	RequestInfoFrom(r.Context()).SetRoute(t.pattern)
	trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("http.route", t.pattern))
	if !ok {
		allow := t.allow()
		WriteProblem(r.Context(), apperr.New(apperr.KindMethodNotAllowed,
			r.Method+" is not allowed on "+t.pattern+"; allowed: "+allow).WithHeader("Allow", allow), w)
		return
	}
	h.ServeHTTP(w, r)
}

func (t *methodTable) allow() string {
	methods := make([]string, 0, len(t.handlers)+1)
	for m := range t.handlers {
		methods = append(methods, m)
		if m == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
	}
	slices.Sort(methods)
	return strings.Join(methods, ", ")
}

// Normalize makes a path answer the same with and without a trailing slash,
// and cleans "//" and "/./" segments, without redirecting: clients of this
// API are machines that should not have to follow redirects on writes.
func Normalize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		// A path that begins with "/" (every one net/http hands a server,
		// but "*") is cleaned as it is: path.Clean then answers a clean
		// path without allocating, where "/"+p made a copy on every call.
		rooted := p
		if !strings.HasPrefix(p, "/") {
			rooted = "/" + p
		}
		clean := path.Clean(rooted)
		if clean != p {
			r2 := r.Clone(r.Context())
			r2.URL.Path = clean
			r2.URL.RawPath = ""
			r = r2
		}
		next.ServeHTTP(w, r)
	})
}
