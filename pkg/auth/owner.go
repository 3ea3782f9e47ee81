package auth

import (
	"context"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Object-level authorization: every row remembers the client that created
// it (created_by), and an operation that changes or deletes a row declares
// that only that client, or a client holding registry:admin, may do so
// (endpoints.OwnerOnly in a service's transport.go). The declaration puts
// the rule in the request's context; the shared store code checks it where
// it holds the row (store.Updater, store.CheckOwner, refs.DeleteRow), so
// every service applies the same rule without writing it.

type ownerRuleKey struct{}

// RequireOwner returns ctx under the owner rule.
func RequireOwner(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownerRuleKey{}, true)
}

// OwnerRequired reports whether ctx is under the owner rule.
func OwnerRequired(ctx context.Context) bool {
	required, _ := ctx.Value(ownerRuleKey{}).(bool)
	return required
}

// MayChange is the owner rule for a row of resource id that createdBy
// created: nil when ctx is not under the rule, when the caller created the
// row, or when the caller holds registry:admin; else a 403 not-owner
// problem. The caller is the original client of a call between services
// (Subject), and an admin is a client's own token: a service calling a
// peer never passes the admin scope on.
func MayChange(ctx context.Context, resource, id, createdBy string) error {
	if !OwnerRequired(ctx) {
		return nil
	}
	p, _ := PrincipalFrom(ctx)
	if Subject(ctx) == createdBy || (p.OnBehalfOf == "" && p.HasScope(ScopeAdmin)) {
		return nil
	}
	return apperr.NotOwner(resource, id, createdBy)
}
