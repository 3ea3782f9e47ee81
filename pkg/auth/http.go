package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
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

// Subject is the caller's sub claim: what created_by and updated_by
// record. For a service calling on an integration's behalf it is the
// integration's subject, which the service carried along.
func Subject(ctx context.Context) string {
	p, _ := PrincipalFrom(ctx)
	if p.OnBehalfOf != "" {
		return p.OnBehalfOf
	}
	return p.Subject
}

// InternalPrefix starts the paths services call each other on. The gateway
// never routes them, and they need the internal scope.
const InternalPrefix = "/internal/"

// OnBehalfOfHeader carries the original caller's subject on a call between
// services.
const OnBehalfOfHeader = "X-On-Behalf-Of"

// OnBehalfOfOrganizationHeader carries the original caller's organization
// on a call between services: absent for a caller bound to none, and for
// an admin (who sees every row, as a caller bound to none does).
const OnBehalfOfOrganizationHeader = "X-On-Behalf-Of-Organization"

// Organization is the organization whose rows the caller sees: the bound
// organization of the token (or, on a call between services, of the
// original caller), empty when the caller sees every row (bound to none,
// or holding registry:admin in a token of its own).
func Organization(ctx context.Context) string {
	p, _ := PrincipalFrom(ctx)
	if p.OnBehalfOf == "" && p.HasScope(ScopeAdmin) {
		return ""
	}
	return p.Organization
}

// Authenticate lets through only requests with a valid bearer token and
// puts the verified principal in the context.
//
// A request with more than one Authorization header is a 400 with
// error="invalid_request" (RFC 6750 §3.1: more than one way of sending a
// token, and RFC 9110 allows the field once): which of the two a proxy on
// the way, the gateway and the service would each read is not defined, so
// none of them is used, whether or not both are valid.
func Authenticate(v *Verifier) func(http.Handler) http.Handler { return AuthenticateGated(v, nil) }

// Gate limits the calls that come without a valid token, before their
// signatures cost anything: the gateway keeps a budget per source address
// in it. Its errors are answered as they are (a 429 problem, say).
type Gate interface {
	// Admit is asked before the signature of a token the verifier does not
	// remember is checked. An error is the answer; nothing is verified.
	Admit(r *http.Request) error
	// Refused is told that r carried no valid token: none, two, or one that
	// failed verification (not one that could not be checked because the
	// issuer's keys were unavailable). An error is the answer instead of
	// the 400 or 401.
	Refused(r *http.Request) error
}

// TokenVerifier checks tokens for AuthenticateGated: a *Verifier, or
// something around one (a test's counter).
type TokenVerifier interface {
	Verify(ctx context.Context, raw string) (Principal, error)
	Remembered(ctx context.Context, raw string) (Principal, bool)
}

// AuthenticateGated is Authenticate with a gate in front of the signature
// check; a nil gate admits everything. A token verified before (the
// verifier's cache, no signature check) passes the gate unasked, so an
// integration behind the same address as a flood of bad tokens keeps
// working while its token is remembered.
func AuthenticateGated(v TokenVerifier, gate Gate) func(http.Handler) http.Handler {
	refuse := func(w http.ResponseWriter, r *http.Request, problem error) {
		if gate != nil {
			if err := gate.Refused(r); err != nil {
				problem = err
			}
		}
		httpx.WriteProblem(r.Context(), problem, w)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.Header.Values("Authorization")) > 1 {
				refuse(w, r, apperr.New(apperr.KindBadRequest,
					"the request has more than one Authorization header; send exactly one").
					WithHeader("WWW-Authenticate", realm+`, error="invalid_request"`))
				return
			}
			raw, ok := bearerToken(r)
			if !ok {
				refuse(w, r, apperr.New(apperr.KindUnauthenticated,
					"a bearer access token is required (Authorization: Bearer <token>)").
					WithHeader("WWW-Authenticate", realm))
				return
			}
			p, known := v.Remembered(r.Context(), raw)
			if !known {
				if gate != nil {
					if err := gate.Admit(r); err != nil {
						httpx.WriteProblem(r.Context(), err, w)
						return
					}
				}
				var err error
				if p, err = v.Verify(r.Context(), raw); err != nil {
					if errors.Is(err, ErrUnavailable) {
						httpx.WriteProblem(r.Context(), verifyError(err), w)
						return
					}
					refuse(w, r, verifyError(err))
					return
				}
			}
			if p.HasScope(ScopeInternal) {
				p.OnBehalfOf = onBehalfOf(r.Header.Get(OnBehalfOfHeader))
				p.Organization = ""
				if org := r.Header.Get(OnBehalfOfOrganizationHeader); p.OnBehalfOf != "" && isUUID(org) {
					p.Organization = strings.ToLower(org)
				}
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

// AdminOnlyRule is what a handler declares (httpx.Declared; the rule
// endpoints.AdminOnly) when its operation also needs registry:admin: an
// operator's setting, such as an inspection plan.
const AdminOnlyRule = "admin-only"

// AnonymousRule is what a handler declares (the rule endpoints.Anonymous)
// when its operation answers without a token: what a stranger must be able
// to fetch to check the registry's evidence offline, such as the log's
// checkpoint and keys. Such a route is served before authentication
// (servicekit mounts it beside the probes), so no scope is asked of it.
const AnonymousRule = "anonymous"

// RequireScope answers 403 unless the token holds the scope the operation
// needs (see ScopeFor) and, for a handler that declares AdminOnlyRule,
// registry:admin too. Authenticate must run first.
func RequireScope(next http.Handler) http.Handler {
	adminOnly := false
	if d, ok := next.(httpx.Declared); ok {
		if slices.Contains(d.Rules(), AnonymousRule) {
			return next
		}
		adminOnly = slices.Contains(d.Rules(), AdminOnlyRule)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		for _, need := range []string{ScopeFor(r), ScopeAdmin} {
			if need == ScopeAdmin && !adminOnly {
				break
			}
			if !p.HasScope(need) || (need == ScopeAdmin && p.OnBehalfOf != "") {
				httpx.WriteProblem(r.Context(), apperr.New(apperr.KindForbidden,
					fmt.Sprintf("this operation needs the %s scope", need)).
					WithHeader("WWW-Authenticate", fmt.Sprintf(`%s, error="insufficient_scope", scope=%q`, realm, need)), w)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// RequireOrganization refuses a write (an operation needing
// registry:write, see ScopeFor) from a token that belongs to no
// organization, with a 403 organization-required: the operator's setting
// tenancy.require-organization, for an installation where every
// integration that writes must be bound to an organization, so that what it
// creates is owned. A token holding registry:admin, and a service's own
// (registry:internal, acting for a caller whose write was let through where
// it came in), may write unbound; a token without registry:write is left
// to RequireScope's 403. Authenticate must run first.
func RequireOrganization(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		if p.Organization == "" && ScopeFor(r) == ScopeWrite && p.HasScope(ScopeWrite) &&
			!p.HasScope(ScopeAdmin) && !p.HasScope(ScopeInternal) {
			refusal := apperr.New(apperr.KindForbidden, "this registry accepts writes only from clients that belong to an organization, "+
				"and this client belongs to none: the operator binds it to its organization (idp client bind), after which its new tokens may write")
			refusal.Code = "organization-required"
			httpx.WriteProblem(r.Context(), refusal, w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ScopeFor is the contract's rule, decided by the operation and never by
// its outcome: reads (GET, HEAD) and finds without create=true need
// registry:read; everything else needs registry:write. A find whose create
// flag does not parse is treated as a write, the safer reading. Internal
// paths need the internal scope, whatever the method.
func ScopeFor(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, InternalPrefix) {
		return ScopeInternal
	}
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

// onBehalfOf accepts a subject as tokens carry them: short, printable.
func onBehalfOf(v string) string {
	if len(v) > 255 {
		return ""
	}
	for _, c := range v {
		if c < 0x21 || c == 0x7f {
			return ""
		}
	}
	return v
}
