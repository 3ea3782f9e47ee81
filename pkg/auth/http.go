package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/problem"
)

const realm = `Bearer realm="asset-registry"`

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the verified caller of the request.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Subject is the caller's sub claim: what created_by and updated_by record.
func Subject(ctx context.Context) string {
	p, _ := PrincipalFrom(ctx)
	return p.Subject
}

// Authenticate lets through only requests with a valid bearer token and
// puts the verified principal in the context.
func Authenticate(v *Verifier) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			raw, ok := bearerToken(r)
			if !ok {
				problem.Write(r.Context(), apperr.New(apperr.KindUnauthenticated,
					"a bearer access token is required (Authorization: Bearer <token>)").
					WithHeader("WWW-Authenticate", realm), w)
				return
			}
			p, err := v.Verify(r.Context(), raw)
			if err != nil {
				problem.Write(r.Context(), verifyError(err), w)
				return
			}
			next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		})
	}
}

func verifyError(err error) error {
	if errors.Is(err, ErrUnavailable) {
		return apperr.Unavailable("token verification", err)
	}
	detail := strings.TrimPrefix(err.Error(), ErrInvalidToken.Error()+": ")
	return apperr.New(apperr.KindUnauthenticated, detail).WithHeader("WWW-Authenticate",
		fmt.Sprintf(`%s, error="invalid_token", error_description=%q`, realm, detail))
}

func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// RequireScope answers 403 unless the token holds the scope the operation
// needs (see ScopeFor). Authenticate must run first.
func RequireScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need := ScopeFor(r)
		if p, _ := PrincipalFrom(r.Context()); !p.HasScope(need) {
			problem.Write(r.Context(), apperr.New(apperr.KindForbidden,
				fmt.Sprintf("this operation needs the %s scope", need)).
				WithHeader("WWW-Authenticate", fmt.Sprintf(`%s, error="insufficient_scope", scope=%q`, realm, need)), w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ScopeFor is the contract's rule, decided by the operation and never by
// its outcome: reads (GET, HEAD) and finds without create=true need
// registry:read; everything else needs registry:write. A find whose create
// flag does not parse is treated as a write, the safer reading.
func ScopeFor(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return ScopeRead
	case http.MethodPost:
		if strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/find") {
			create, err := createFlag(r)
			if err == nil && !create {
				return ScopeRead
			}
		}
	}
	return ScopeWrite
}

func createFlag(r *http.Request) (bool, error) {
	v, ok := r.URL.Query()["create"]
	if !ok {
		return false, nil
	}
	if len(v) != 1 {
		return false, errors.New("create given more than once")
	}
	return httpx.ParseBool(v[0])
}
