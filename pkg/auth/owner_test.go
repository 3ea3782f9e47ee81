package auth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
)

func TestMayChange(t *testing.T) {
	caller := func(p auth.Principal) context.Context { return auth.WithPrincipal(context.Background(), p) }
	cases := []struct {
		name    string
		ctx     context.Context
		creator string
		allowed bool
	}{
		{"not under the rule", caller(auth.Principal{Subject: "b"}), "a", true},
		{"the creator", auth.RequireOwner(caller(auth.Principal{Subject: "a"})), "a", true},
		{"another client", auth.RequireOwner(caller(auth.Principal{Subject: "b", Scopes: []string{auth.ScopeWrite}})), "a", false},
		{"an admin", auth.RequireOwner(caller(auth.Principal{Subject: "b", Scopes: []string{auth.ScopeAdmin}})), "a", true},
		{"the creator through a peer", auth.RequireOwner(caller(auth.Principal{Subject: "svc-x", OnBehalfOf: "a",
			Scopes: []string{auth.ScopeInternal}})), "a", true},
		{"another client through a peer", auth.RequireOwner(caller(auth.Principal{Subject: "svc-x", OnBehalfOf: "b",
			Scopes: []string{auth.ScopeInternal}})), "a", false},
		// A service's own token never makes its caller an admin.
		{"a peer holding admin for another client", auth.RequireOwner(caller(auth.Principal{Subject: "svc-x", OnBehalfOf: "b",
			Scopes: []string{auth.ScopeInternal, auth.ScopeAdmin}})), "a", false},
		{"no caller", auth.RequireOwner(context.Background()), "a", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := auth.MayChange(c.ctx, "organization", "id-1", c.creator)
			if c.allowed {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *apperr.Error
			if !errors.As(err, &e) || e.Kind != apperr.KindForbidden || e.Code != "not-owner" {
				t.Fatalf("err = %v, want a not-owner 403", err)
			}
		})
	}
}
