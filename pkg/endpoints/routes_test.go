package endpoints_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// A route table mounts each operation at its path with its rules, every
// endpoint inside the middleware in the order given (first outermost), a
// route with a server of its own too.
func TestMount(t *testing.T) {
	var calls []string
	mark := func(name string) endpoint.Middleware {
		return func(next endpoint.Endpoint) endpoint.Endpoint {
			return func(ctx context.Context, req any) (any, error) {
				calls = append(calls, name)
				return next(ctx, req)
			}
		}
	}
	echo := endpoints.New(func(_ context.Context, q string) (string, error) { return "got " + q, nil })
	decode := func(r *http.Request) (string, error) { return r.URL.Query().Get("q"), nil }
	r := httpx.NewRouter()
	endpoints.Mount(r, []endpoints.Route{
		endpoints.On("GET", "/echo", echo, decode),
		endpoints.On("PATCH", "/echo", echo, decode, endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.OnServer("GET", "/raw", echo, func(e endpoint.Endpoint) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				v, _ := e(req.Context(), "raw")
				w.Write([]byte(v.(string)))
			})
		}),
	}, mark("outer"), mark("inner"))

	routes := r.Routes()
	if len(routes) != 3 || routes[1].Method != "PATCH" || !slices.Equal(routes[1].Rules, []string{"If-Match", "owner-only"}) {
		t.Fatalf("routes = %+v", routes)
	}
	for path, want := range map[string]string{"/echo?q=x": `"got x"`, "/raw": "got raw"} {
		calls = nil
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("GET", path, nil).WithContext(
			httpx.ContextWithRequestInfo(context.Background(), &httpx.RequestInfo{})))
		if got := strings.TrimSpace(w.Body.String()); w.Code != 200 || got != want {
			t.Errorf("GET %s = %d %s, want %s", path, w.Code, got, want)
		}
		if !slices.Equal(calls, []string{"outer", "inner"}) {
			t.Errorf("GET %s: middleware ran %v", path, calls)
		}
	}
}
