package httpx

import (
	"context"
	"net/http"
)

// WithConditions puts r's conditions into ctx (a go-kit ServerBefore), for
// the encoder (304) and for writes that check If-Match (412).
func WithConditions(ctx context.Context, r *http.Request) context.Context {
	return ContextWithConditions(ctx, Conditions{
		Method: r.Method, IfMatch: r.Header.Get("If-Match"), IfNoneMatch: r.Header.Get("If-None-Match"),
	})
}

// WithReadConditions is WithConditions for an operation that takes no
// If-Match: only If-None-Match (304) reaches it.
func WithReadConditions(ctx context.Context, r *http.Request) context.Context {
	return ContextWithConditions(ctx, Conditions{Method: r.Method, IfNoneMatch: r.Header.Get("If-None-Match")})
}
