package httpx

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/assetregistry/registry/pkg/apperr"
)

// RequestIDHeader carries the request id to the client and between hops.
const RequestIDHeader = "X-Request-Id"

// WithRequestInfo starts the per-request record. The gateway passes
// trustIncoming=false so every public request gets a fresh, unique id; the
// services behind it adopt the gateway's id so one id follows a request
// through every hop and log line.
func WithRequestInfo(trustIncoming bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get(RequestIDHeader)
			if !trustIncoming || !ValidRequestID(id) {
				id = NewRequestID()
			}
			r.Header.Set(RequestIDHeader, id)
			info := &RequestInfo{ID: id, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
			w.Header().Set(RequestIDHeader, id)
			next.ServeHTTP(w, r.WithContext(ContextWithRequestInfo(r.Context(), info)))
		})
	}
}

// Recover turns a panic into a 500 problem; the stack goes to the log via
// the recorded error, never to the client.
func Recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				err := apperr.Wrap(apperr.KindInternal, "", fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
				WriteProblem(r.Context(), err, w)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// Chain applies middleware so that the first one listed is the outermost.
func Chain(h http.Handler, middleware ...func(http.Handler) http.Handler) http.Handler {
	for i := len(middleware) - 1; i >= 0; i-- {
		h = middleware[i](h)
	}
	return h
}
