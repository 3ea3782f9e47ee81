// RequestInfo carries per-request facts that several layers need (the
// request id, the path as the client sent it, the matched route and the error
// that ended the request) through the context, so the error encoder, the
// access log and the metrics agree without passing them around by hand.

package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// RequestInfo is shared by pointer: inner layers fill in Route and Err for the outer
// middleware that logs and measures the request.
type RequestInfo struct {
	ID       string // request id, also sent as X-Request-Id
	Path     string // the path as the client sent it (before normalisation)
	RawQuery string // the query as the client sent it, for pagination links

	mu    sync.Mutex
	route string
	err   error
}

type requestInfoKey struct{}

// ContextWithRequestInfo returns a context carrying info.
func ContextWithRequestInfo(ctx context.Context, info *RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, info)
}

// RequestInfoFrom returns the request's info, or an empty one outside a request.
func RequestInfoFrom(ctx context.Context) *RequestInfo {
	if info, ok := ctx.Value(requestInfoKey{}).(*RequestInfo); ok {
		return info
	}
	return &RequestInfo{}
}

// SetRoute records the path pattern that matched ("/people/{id}"): bounded
// cardinality for metric labels.
func (i *RequestInfo) SetRoute(route string) {
	i.mu.Lock()
	i.route = route
	i.mu.Unlock()
}

// Route returns the matched path pattern, or "unmatched".
func (i *RequestInfo) Route() string {
	if route, ok := i.MatchedRoute(); ok {
		return route
	}
	return "unmatched"
}

// MatchedRoute returns the matched path pattern, if any matched yet.
func (i *RequestInfo) MatchedRoute() (string, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.route, i.route != ""
}

// SetErr records the error that produced the response, for the access log.
func (i *RequestInfo) SetErr(err error) {
	i.mu.Lock()
	i.err = err
	i.mu.Unlock()
}

// Err returns the recorded error.
func (i *RequestInfo) Err() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.err
}

// NewRequestID returns a fresh random request id (128 bits, hex).
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidRequestID reports whether an incoming id is safe to adopt: short, printable
// and free of anything that could forge log lines or headers.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
