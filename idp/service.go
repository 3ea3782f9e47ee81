package idp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// GrantClientCredentials is the only grant type the IdP supports.
const GrantClientCredentials = "client_credentials"

// tokenRequest is a token request as the transport decoded it.
type tokenRequest struct {
	GrantType    string
	ClientID     string
	ClientSecret string
	Resources    []string     // RFC 8707 resource parameters, in request order
	Scope        *string      // nil when the request names no scope
	Source       netip.Prefix // where it comes from, for the throttle
}

// tokenResponse is RFC 6749 §5.1's successful answer.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// Error is an OAuth 2.0 error answer (RFC 6749 §5.2, RFC 8707 §2).
type Error struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	retryAfter  int    // seconds, for slow_down (429 with Retry-After)
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func oauthError(code, format string, args ...any) *Error {
	return &Error{Code: code, Description: fmt.Sprintf(format, args...)}
}

// accessClaims are the claims of an RFC 9068 access token. jwt marshals a
// one-element aud as an array (jwt.MarshalSingleStringAsArray).
type accessClaims struct {
	jwt.RegisteredClaims
	Scope    string `json:"scope"`
	ClientID string `json:"client_id"`
	// CredentialGeneration is the generation of the secret the token was
	// issued for (see the token validity list): a private claim, since no
	// standard one says "issued under this version of the client".
	CredentialGeneration int64 `json:"credential_generation"`
	// Organization is the id of the organization the client is bound to
	// (the registry's org claim, auth.DefaultOrganizationClaim); absent
	// for a client bound to none.
	Organization string `json:"org,omitempty"`
}

// tokenService issues access tokens for the client credentials grant.
type tokenService struct {
	issuer string
	ttl    time.Duration
	// internalTTL is the lifetime of tokens of the services' own clients
	// (registry:internal): longer, so that they outlast an outage of the
	// identity provider (see DefaultInternalTokenTTL).
	internalTTL time.Duration
	keys        *Keys
	clients     *Clients
	throttle    *throttle
}

// token checks the request in the order that tells a client the most
// without telling an unauthenticated one anything about a client: the grant
// type (public knowledge), then the credentials, then what the
// authenticated client asked for.
func (s *tokenService) token(ctx context.Context, req tokenRequest) (tokenResponse, error) {
	if req.GrantType != GrantClientCredentials {
		return tokenResponse{}, oauthError("unsupported_grant_type", "only the %s grant is supported", GrantClientCredentials)
	}
	// Failed authentications are throttled before the database is asked
	// (see throttle.go); what fails for the database's sake is not counted.
	vouched, err := s.throttle.admit(ctx, req.ClientID, req.ClientSecret, req.Source)
	if err != nil {
		return tokenResponse{}, err
	}
	client, generation, err := s.clients.authenticate(ctx, req.ClientID, req.ClientSecret)
	if errors.Is(err, errBadCredentials) {
		s.throttle.failed(req.ClientID, req.Source)
		if vouched {
			// A remembered secret that no longer holds (rotated out, a
			// leaked one perhaps), from a pair over its budget: refused
			// like the pair, and no longer remembered.
			s.throttle.forget(req.ClientID)
			return tokenResponse{}, s.throttle.refusal(req.ClientID, req.Source)
		}
		return tokenResponse{}, oauthError("invalid_client", "client authentication failed")
	}
	if err != nil {
		return tokenResponse{}, err
	}
	s.throttle.succeeded(client.ID, req.ClientSecret)
	audience, err := audience(client, req.Resources)
	if err != nil {
		return tokenResponse{}, err
	}
	scopes, err := grantedScopes(client, req.Scope)
	if err != nil {
		return tokenResponse{}, err
	}
	now := time.Now().Truncate(time.Second)
	scope := strings.Join(scopes, " ")
	ttl := s.ttl
	if slices.Contains(scopes, ScopeInternal) && s.internalTTL > 0 {
		ttl = s.internalTTL
	}
	token, err := s.keys.sign(accessClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.issuer,
			Subject:   client.ID,
			Audience:  audience,
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ID:        rand.Text(),
		},
		Scope:                scope,
		ClientID:             client.ID,
		CredentialGeneration: generation,
		Organization:         deref(client.OrganizationID),
	})
	if err != nil {
		return tokenResponse{}, err
	}
	return tokenResponse{
		AccessToken: token,
		TokenType:   "Bearer",
		ExpiresIn:   int64(ttl / time.Second),
		Scope:       scope,
	}, nil
}

// audience resolves the requested resources against the client's
// registered ones, giving the registered (canonical) spelling. A client
// with a single resource may leave it out.
func audience(client Client, requested []string) ([]string, error) {
	if len(requested) == 0 {
		if len(client.Resources) != 1 {
			return nil, oauthError("invalid_target", "the resource parameter is required: this client may use several resources")
		}
		return client.Resources, nil
	}
	var aud []string
	for _, r := range requested {
		canonical, err := canonicalResource(r)
		if err != nil {
			return nil, oauthError("invalid_target", "%s", err)
		}
		if !slices.Contains(client.Resources, canonical) {
			return nil, oauthError("invalid_target", "this client may not use resource %q", r)
		}
		if !slices.Contains(aud, canonical) {
			aud = append(aud, canonical)
		}
	}
	return aud, nil
}

// grantedScopes is every scope the client holds when it asks for none, and
// otherwise the requested scopes it holds (RFC 6749 §3.3 lets the server
// grant less than asked; the response's scope says what was granted).
func grantedScopes(client Client, requested *string) ([]string, error) {
	if requested == nil {
		return client.Scopes, nil
	}
	var granted []string
	for _, s := range strings.Fields(*requested) {
		if slices.Contains(client.Scopes, s) && !slices.Contains(granted, s) {
			granted = append(granted, s)
		}
	}
	if len(granted) == 0 {
		return nil, oauthError("invalid_scope", "this client holds none of the requested scopes; it holds %s", strings.Join(client.Scopes, " "))
	}
	return granted, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
