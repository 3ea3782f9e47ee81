package idp

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/process"
)

const (
	formContentType = "application/x-www-form-urlencoded"
	maxFormBytes    = 64 << 10
	basicRealm      = `Basic realm="asset-registry-idp"`
)

var (
	tokensIssued = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "idp_tokens_issued_total",
		Help: "Access tokens issued, by client.",
	}, []string{"client_id"})
	tokenErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "idp_token_errors_total",
		Help: "Token requests refused, by OAuth error code.",
	}, []string{"error"})
)

// discovery is the OpenID Provider metadata the IdP publishes.
type discovery struct {
	Issuer             string   `json:"issuer"`
	TokenEndpoint      string   `json:"token_endpoint"`
	JWKSURI            string   `json:"jwks_uri"`
	TokenValidityURI   string   `json:"registry_token_validity_uri"` // auth.TokenValidityMember
	GrantTypes         []string `json:"grant_types_supported"`
	TokenEndpointAuth  []string `json:"token_endpoint_auth_methods_supported"`
	Scopes             []string `json:"scopes_supported"`
	ResponseTypes      []string `json:"response_types_supported"`
	SubjectTypes       []string `json:"subject_types_supported"`
	IDTokenSigningAlgs []string `json:"id_token_signing_alg_values_supported"`
}

func newDiscovery(issuer string) discovery {
	base := strings.TrimSuffix(issuer, "/")
	return discovery{
		Issuer:            issuer,
		TokenEndpoint:     base + "/oidc/token",
		JWKSURI:           base + "/.well-known/jwks.json",
		TokenValidityURI:  base + tokenValidityPath,
		GrantTypes:        []string{GrantClientCredentials},
		TokenEndpointAuth: []string{"client_secret_basic", "client_secret_post"},
		// The internal scope is the services' own; integrations are not
		// told of it.
		Scopes: []string{ScopeRead, ScopeWrite},
		// OpenID Discovery requires the member; there is no authorization
		// endpoint, so no response type is supported.
		ResponseTypes:      []string{},
		SubjectTypes:       []string{"public"},
		IDTokenSigningAlgs: []string{"RS256"},
	}
}

// newHandler routes the IdP's public paths inside the shared HTTP stack
// (request ids, tracing, metrics, access log).
func newHandler(svc *tokenService, validity *validityList, keys *Keys, health *process.Health, logger log.Logger) (http.Handler, error) {
	meta, err := json.Marshal(newDiscovery(svc.issuer))
	if err != nil {
		return nil, err
	}
	r := httpx.NewRouter()
	r.Handle(http.MethodPost, "/oidc/token", serveToken(svc))
	r.Handle(http.MethodGet, "/.well-known/openid-configuration", serveDocument(meta))
	r.Handle(http.MethodGet, "/.well-known/jwks.json", serveDocument(keys.jwks))
	r.Handle(http.MethodGet, tokenValidityPath, http.HandlerFunc(validity.serve))
	public := http.NewServeMux()
	health.Mount(public)
	return process.Stack(logger, "idp", false, public, r), nil
}

// serveDocument serves fixed JSON. Verifiers may cache it briefly: the keys
// only change when the IdP restarts with another key, and verifiers refetch
// the JWKS when a token names a kid they do not know.
func serveDocument(doc []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(doc)
	}
}

// tokenValidityPath serves the token validity list (pkg/auth, validity.go;
// kept in memory by validity.go here).
const tokenValidityPath = "/oidc/token-validity"

func serveToken(svc *tokenService) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := decodeTokenRequest(w, r)
		var resp tokenResponse
		if err == nil {
			req.Source = svc.throttle.source(r)
			resp, err = svc.token(r.Context(), req)
		}
		if err != nil {
			writeTokenError(r.Context(), w, err)
			return
		}
		tokensIssued.WithLabelValues(req.ClientID).Inc()
		writeJSON(w, http.StatusOK, resp)
	}
}

// decodeTokenRequest reads the form of a token request (RFC 6749 §4.4.2)
// and the client's credentials, from the form (client_secret_post) or from
// HTTP Basic (client_secret_basic), never both.
func decodeTokenRequest(w http.ResponseWriter, r *http.Request) (tokenRequest, error) {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != formContentType {
		return tokenRequest{}, oauthError("invalid_request", "the body must be %s", formContentType)
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return tokenRequest{}, oauthError("invalid_request", "the form cannot be read")
	}
	form := r.PostForm
	for _, name := range []string{"grant_type", "client_id", "client_secret", "scope"} {
		if len(form[name]) > 1 {
			return tokenRequest{}, oauthError("invalid_request", "%s is given more than once", name)
		}
	}
	req := tokenRequest{
		GrantType:    form.Get("grant_type"),
		ClientID:     form.Get("client_id"),
		ClientSecret: form.Get("client_secret"),
		Resources:    form["resource"],
	}
	if req.GrantType == "" {
		return tokenRequest{}, oauthError("invalid_request", "grant_type is required")
	}
	// A blank scope is read as none given, as most clients send it.
	if s := form.Get("scope"); strings.TrimSpace(s) != "" {
		req.Scope = &s
	}
	if id, secret, ok := r.BasicAuth(); ok {
		if form.Has("client_secret") {
			return tokenRequest{}, oauthError("invalid_request", "authenticate the client once: with HTTP Basic or with client_secret in the form, not both")
		}
		// RFC 6749 §2.3.1: both parts are form-encoded before Basic encoding.
		id, errID := url.QueryUnescape(id)
		secret, errSecret := url.QueryUnescape(secret)
		if errID != nil || errSecret != nil {
			return tokenRequest{}, oauthError("invalid_client", "the Basic credentials are not form-encoded")
		}
		if form.Has("client_id") && req.ClientID != id {
			return tokenRequest{}, oauthError("invalid_request", "client_id differs from the client in HTTP Basic")
		}
		req.ClientID, req.ClientSecret = id, secret
	}
	return req, nil
}

// writeTokenError answers with an RFC 6749 §5.2 error body. Failures that
// are not the client's become server_error, or temporarily_unavailable when
// the database is down; their details go to the log only.
func writeTokenError(ctx context.Context, w http.ResponseWriter, err error) {
	var e *Error
	status := http.StatusBadRequest
	logged := err
	switch {
	case errors.As(err, &e) && e.Code == "invalid_client":
		status = http.StatusUnauthorized
		w.Header().Set("WWW-Authenticate", basicRealm)
		logged = apperr.New(apperr.KindUnauthenticated, e.Error())
	case errors.As(err, &e) && e.Code == "slow_down":
		// RFC 6749 names no error for this; slow_down is the registered one
		// that says it (RFC 8628 §3.5). Not invalid_client: the
		// credentials were not looked at, and a client that reads
		// invalid_client as "my secret is wrong" would alarm its operator
		// for nothing.
		status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
		logged = apperr.New(apperr.KindRateLimited, e.Error())
	case errors.As(err, &e):
		logged = apperr.New(apperr.KindBadRequest, e.Error())
	case apperr.Is(err, apperr.KindUnavailable):
		status = http.StatusServiceUnavailable
		e = oauthError("temporarily_unavailable", "the identity provider cannot serve right now; retry shortly")
		w.Header().Set("Retry-After", "5")
	default:
		status = http.StatusInternalServerError
		e = oauthError("server_error", "an unexpected error occurred; quote the request id (%s) when reporting it", httpx.RequestInfoFrom(ctx).ID)
	}
	httpx.RequestInfoFrom(ctx).SetErr(logged)
	tokenErrors.WithLabelValues(e.Code).Inc()
	writeJSON(w, status, e)
}

// writeJSON sends v; token answers must never be cached (RFC 6749 §5.1).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
