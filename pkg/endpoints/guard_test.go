package endpoints_test

import (
	"context"
	"testing"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// The caller a write records and the owner rule judges: a peer's token
// carries its integration's subject and never makes it an admin.
func TestCallerOf(t *testing.T) {
	caller := func(p auth.Principal) context.Context {
		ctx := httpx.ContextWithRequestInfo(context.Background(), &httpx.RequestInfo{ID: "req-1"})
		return auth.WithPrincipal(ctx, p)
	}
	cases := []struct {
		name string
		ctx  context.Context
		want model.Caller
	}{
		{"a client", caller(auth.Principal{Subject: "a", Scopes: []string{auth.ScopeWrite}}), model.Caller{Subject: "a", RequestID: "req-1"}},
		{"an admin", caller(auth.Principal{Subject: "b", Scopes: []string{auth.ScopeAdmin}}), model.Caller{Subject: "b", Admin: true, RequestID: "req-1"}},
		{"a client through a peer", caller(auth.Principal{Subject: "svc-x", OnBehalfOf: "a", Scopes: []string{auth.ScopeInternal}}),
			model.Caller{Subject: "a", RequestID: "req-1"}},
		{"a peer holding admin for another client", caller(auth.Principal{Subject: "svc-x", OnBehalfOf: "b",
			Scopes: []string{auth.ScopeInternal, auth.ScopeAdmin}}), model.Caller{Subject: "b", RequestID: "req-1"}},
		{"no caller", context.Background(), model.Caller{}},
	}
	for _, c := range cases {
		if got := endpoints.CallerOf(c.ctx); got != c.want {
			t.Errorf("%s: CallerOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}
