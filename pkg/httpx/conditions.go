package httpx

import (
	"context"
	"net/http"
)

// WithConditions puts r's read conditions into ctx (a go-kit ServerBefore),
// for the encoder's 304.
func WithConditions(ctx context.Context, r *http.Request) context.Context {
	return ContextWithConditions(ctx, Conditions{Method: r.Method, IfNoneMatch: r.Header.Get("If-None-Match")})
}
