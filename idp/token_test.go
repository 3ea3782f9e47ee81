package idp

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestTokenEndpoint checks one contract rule per case.
func TestTokenEndpoint(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	both := []string{ScopeRead, ScopeWrite}
	writerSecret := ti.createClient(t, "writer", both, []string{registry})
	readerSecret := ti.createClient(t, "reader", []string{ScopeRead}, []string{registry + "/"})
	multiSecret := ti.createClient(t, "multi", both, []string{registry, "https://other.example.test/"})

	form := func(id, secret string, kv ...string) url.Values {
		v := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}

	tests := []struct {
		name       string
		call       tokenCall
		wantStatus int
		wantError  string
		wantScope  string   // on success
		wantAud    []string // on success
		wantSub    string   // on success
	}{
		{name: "without scope gets every scope the client holds",
			call:       tokenCall{form: form("writer", writerSecret, "resource", registry)},
			wantStatus: 200, wantScope: "registry:read registry:write", wantAud: []string{registry}, wantSub: "writer"},
		{name: "with scope gets the scope asked for",
			call:       tokenCall{form: form("writer", writerSecret, "resource", registry, "scope", "registry:read")},
			wantStatus: 200, wantScope: "registry:read", wantAud: []string{registry}, wantSub: "writer"},
		{name: "with scopes gets those of them the client holds",
			call:       tokenCall{form: form("reader", readerSecret, "resource", registry, "scope", "registry:write registry:read openid")},
			wantStatus: 200, wantScope: "registry:read", wantAud: []string{registry}, wantSub: "reader"},
		{name: "blank scope counts as none asked for",
			call:       tokenCall{form: form("writer", writerSecret, "resource", registry, "scope", " ")},
			wantStatus: 200, wantScope: "registry:read registry:write", wantAud: []string{registry}, wantSub: "writer"},
		{name: "a scope the client does not hold is invalid_scope",
			call:       tokenCall{form: form("reader", readerSecret, "resource", registry, "scope", "registry:write")},
			wantStatus: 400, wantError: "invalid_scope"},
		{name: "an unknown scope is invalid_scope",
			call:       tokenCall{form: form("writer", writerSecret, "resource", registry, "scope", "admin")},
			wantStatus: 400, wantError: "invalid_scope"},
		{name: "another grant type is unsupported_grant_type",
			call:       tokenCall{form: url.Values{"grant_type": {"password"}, "client_id": {"writer"}, "client_secret": {writerSecret}}},
			wantStatus: 400, wantError: "unsupported_grant_type"},
		{name: "an unsupported grant type is reported before client authentication",
			call:       tokenCall{form: url.Values{"grant_type": {"authorization_code"}, "code": {"x"}}},
			wantStatus: 400, wantError: "unsupported_grant_type"},
		{name: "a missing grant type is invalid_request",
			call:       tokenCall{form: url.Values{"client_id": {"writer"}, "client_secret": {writerSecret}}},
			wantStatus: 400, wantError: "invalid_request"},
		{name: "a repeated parameter is invalid_request",
			call:       tokenCall{form: url.Values{"grant_type": {"client_credentials", "client_credentials"}, "client_id": {"writer"}, "client_secret": {writerSecret}}},
			wantStatus: 400, wantError: "invalid_request"},
		{name: "a resource the client may not use is invalid_target",
			call:       tokenCall{form: form("reader", readerSecret, "resource", "https://other.example.test")},
			wantStatus: 400, wantError: "invalid_target"},
		{name: "a resource with a fragment is invalid_target",
			call:       tokenCall{form: form("writer", writerSecret, "resource", registry+"#x")},
			wantStatus: 400, wantError: "invalid_target"},
		{name: "a relative resource is invalid_target",
			call:       tokenCall{form: form("writer", writerSecret, "resource", "registry.example.test")},
			wantStatus: 400, wantError: "invalid_target"},
		{name: "a resource matches ignoring one trailing slash and aud is the registered spelling",
			call:       tokenCall{form: form("writer", writerSecret, "resource", registry+"/")},
			wantStatus: 200, wantScope: "registry:read registry:write", wantAud: []string{registry}, wantSub: "writer"},
		{name: "a client with one resource may leave it out",
			call:       tokenCall{form: form("reader", readerSecret)},
			wantStatus: 200, wantScope: "registry:read", wantAud: []string{registry}, wantSub: "reader"},
		{name: "a client with several resources must name one",
			call:       tokenCall{form: form("multi", multiSecret)},
			wantStatus: 400, wantError: "invalid_target"},
		{name: "a client with several resources gets the one it names",
			call:       tokenCall{form: form("multi", multiSecret, "resource", "https://other.example.test/")},
			wantStatus: 200, wantScope: "registry:read registry:write", wantAud: []string{"https://other.example.test"}, wantSub: "multi"},
		{name: "a wrong secret is invalid_client",
			call:       tokenCall{form: form("writer", readerSecret, "resource", registry)},
			wantStatus: 401, wantError: "invalid_client"},
		{name: "an unknown client is invalid_client",
			call:       tokenCall{form: form("nobody", writerSecret, "resource", registry)},
			wantStatus: 401, wantError: "invalid_client"},
		{name: "no client credentials is invalid_client",
			call:       tokenCall{form: url.Values{"grant_type": {"client_credentials"}, "resource": {registry}}},
			wantStatus: 401, wantError: "invalid_client"},
		{name: "HTTP Basic client authentication works",
			call:       tokenCall{form: url.Values{"grant_type": {"client_credentials"}, "resource": {registry}}, basic: &[2]string{"writer", writerSecret}},
			wantStatus: 200, wantScope: "registry:read registry:write", wantAud: []string{registry}, wantSub: "writer"},
		{name: "HTTP Basic with a wrong secret is invalid_client",
			call:       tokenCall{form: url.Values{"grant_type": {"client_credentials"}}, basic: &[2]string{"reader", writerSecret}},
			wantStatus: 401, wantError: "invalid_client"},
		{name: "HTTP Basic and a form secret together are invalid_request",
			call:       tokenCall{form: form("writer", writerSecret), basic: &[2]string{"writer", writerSecret}},
			wantStatus: 400, wantError: "invalid_request"},
		{name: "a body that is not form-encoded is invalid_request",
			call:       tokenCall{form: form("writer", writerSecret), contentType: "application/json"},
			wantStatus: 400, wantError: "invalid_request"},
		{name: "a form content type with parameters is accepted",
			call:       tokenCall{form: form("writer", writerSecret, "resource", registry), contentType: "application/x-www-form-urlencoded; charset=utf-8"},
			wantStatus: 200, wantScope: "registry:read registry:write", wantAud: []string{registry}, wantSub: "writer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ti.post(t, tt.call)
			if a.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %v", a.status, tt.wantStatus, a.body)
			}
			if got := a.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", got)
			}
			if tt.wantError != "" {
				checkError(t, a, tt.wantError)
				return
			}
			checkToken(t, ti, a, tt.wantSub, tt.wantScope, tt.wantAud)
		})
	}
}

func checkError(t *testing.T, a answer, code string) {
	t.Helper()
	if a.body["error"] != code {
		t.Errorf("error %v, want %s", a.body["error"], code)
	}
	if d, _ := a.body["error_description"].(string); d == "" {
		t.Errorf("no error_description: %v", a.body)
	}
	if _, leaked := a.body["access_token"]; leaked {
		t.Error("an error answer carries an access token")
	}
	wantChallenge := ""
	if code == "invalid_client" {
		wantChallenge = `Basic realm="asset-registry-idp"`
	}
	if got := a.header.Get("WWW-Authenticate"); got != wantChallenge {
		t.Errorf("WWW-Authenticate %q, want %q", got, wantChallenge)
	}
}

// checkToken checks the response and the token's header and claims; the
// signature is checked by TestRegistryVerifierAcceptsTokens.
func checkToken(t *testing.T, ti *testIdP, a answer, sub, scope string, aud []string) {
	t.Helper()
	if a.body["token_type"] != "Bearer" || a.body["scope"] != scope || a.body["expires_in"] != float64(15*60) {
		t.Errorf("response %v, want Bearer, scope %q, expires_in 900", a.body, scope)
	}
	raw, _ := a.body["access_token"].(string)
	var claims jwt.MapClaims
	token, _, err := jwt.NewParser().ParseUnverified(raw, &claims)
	if err != nil {
		t.Fatalf("access token: %v", err)
	}
	if token.Header["alg"] != "RS256" || token.Header["typ"] != "at+jwt" || token.Header["kid"] != ti.keyID(t) {
		t.Errorf("header %v, want RS256, at+jwt and the signing key's kid", token.Header)
	}
	gotAud, _ := claims["aud"].([]any)
	var audStrings []string
	for _, v := range gotAud {
		audStrings = append(audStrings, v.(string))
	}
	if !slices.Equal(audStrings, aud) {
		t.Errorf("aud %v (%T), want the array %v", claims["aud"], claims["aud"], aud)
	}
	iat, exp, nbf := claims["iat"].(float64), claims["exp"].(float64), claims["nbf"].(float64)
	if exp-iat != 15*60 || nbf != iat || time.Since(time.Unix(int64(iat), 0)) > time.Minute {
		t.Errorf("iat %v, nbf %v, exp %v: want now, now, now+15m", iat, nbf, exp)
	}
	if claims["iss"] != ti.issuer || claims["sub"] != sub || claims["client_id"] != sub || claims["scope"] != scope {
		t.Errorf("claims %v, want iss %s, sub and client_id %s, scope %q", claims, ti.issuer, sub, scope)
	}
	if jti, _ := claims["jti"].(string); len(jti) < 16 {
		t.Errorf("jti %q is missing or short", jti)
	}
}

func (ti *testIdP) keyID(t *testing.T) string {
	t.Helper()
	a := ti.get(t, "/.well-known/jwks.json")
	keys, _ := a.body["keys"].([]any)
	if len(keys) == 0 {
		t.Fatal("the JWKS has no keys")
	}
	return keys[0].(map[string]any)["kid"].(string)
}

func TestTokenEndpointAnswersOnlyPost(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	a := ti.get(t, "/oidc/token")
	if a.status != http.StatusMethodNotAllowed || !strings.Contains(a.header.Get("Allow"), "POST") {
		t.Errorf("GET /oidc/token: %d, Allow %q; want 405 with Allow: POST", a.status, a.header.Get("Allow"))
	}
}

// The services' own tokens (registry:internal) live an hour, so that a
// service renewing halfway through goes on through an identity-provider
// outage of half an hour; an integration's live the token TTL.
func TestInternalTokensOutliveAnOutage(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	internal := ti.createClient(t, "svc-actions", []string{ScopeInternal}, []string{registry})
	integration := ti.createClient(t, "integration", []string{ScopeRead}, []string{registry})
	for _, c := range []struct {
		id, secret string
		want       time.Duration
	}{{"svc-actions", internal, DefaultInternalTokenTTL}, {"integration", integration, DefaultTokenTTL}} {
		var claims jwt.RegisteredClaims
		if _, _, err := jwt.NewParser().ParseUnverified(ti.token(t, c.id, c.secret, nil), &claims); err != nil {
			t.Fatal(err)
		}
		if got := claims.ExpiresAt.Sub(claims.IssuedAt.Time); got != c.want {
			t.Errorf("%s: a token for %s, want %s", c.id, got, c.want)
		}
	}
}
