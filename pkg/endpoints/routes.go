package endpoints

import (
	"net/http"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Route is one line of a component's route table: the method and pattern,
// the operation's endpoint (its Service method adapted by New, Guarded or
// ByCaller and the answer adapters), and the server around it (Serve: the
// decoder and the rules). A route names its operation once, where its path,
// decoder and rules stand, and Mount gives every route the same
// middleware, so a new operation cannot be left without it.
type Route struct {
	Method, Pattern string
	endpoint        endpoint.Endpoint
	serve           func(endpoint.Endpoint) http.Handler
}

// On declares the route method pattern: e answers it, decode reads its
// requests and rules are what it declares, as Serve takes them.
func On[Req any](method, pattern string, e endpoint.Endpoint, decode httpx.Decoder[Req], rules ...Rule) Route {
	return Route{Method: method, Pattern: pattern, endpoint: e, serve: func(e endpoint.Endpoint) http.Handler {
		return Serve(e, decode, rules...)
	}}
}

// OnServer declares a route whose server is not Serve's (a download that
// streams its answer): server builds it around e once Mount has wrapped e.
func OnServer(method, pattern string, e endpoint.Endpoint, server func(endpoint.Endpoint) http.Handler) Route {
	return Route{Method: method, Pattern: pattern, endpoint: e, serve: server}
}

// NewRouter is the router of a service's public routes (its components
// Mount theirs on it). The token is verified before it (servicekit); each
// route checks its scope only once routing found it, so an unknown path or
// method is a 404 or 405 whatever the token may do.
func NewRouter() *httpx.Router { return httpx.NewRouter(auth.RequireScope) }

// Mount adds routes to r, in order, each endpoint wrapped in middleware
// first (first listed outermost).
func Mount(r *httpx.Router, routes []Route, middleware ...endpoint.Middleware) {
	for _, route := range routes {
		e := route.endpoint
		for j := len(middleware) - 1; j >= 0; j-- {
			e = middleware[j](e)
		}
		r.Handle(route.Method, route.Pattern, route.serve(e))
	}
}
