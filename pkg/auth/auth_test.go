package auth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/golang-jwt/jwt/v5"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/tools/testkit"
)

const audience = "https://registry.example"

func TestVerify(t *testing.T) {
	iss, v := newVerifier(t)
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	with := func(mutate func(jwt.MapClaims)) jwt.MapClaims {
		c := iss.Claims("client-1", auth.ScopeRead)
		mutate(c)
		return c
	}
	valid := iss.Sign(t, with(func(jwt.MapClaims) {}))
	parts := strings.Split(valid, ".")

	tests := []struct {
		name  string
		token string
		ok    bool
	}{
		{"valid", valid, true},
		{"audience with trailing slash", iss.Sign(t, with(func(c jwt.MapClaims) { c["aud"] = audience + "/" })), true},
		{"audience among several", iss.Sign(t, with(func(c jwt.MapClaims) { c["aud"] = []string{"other", audience} })), true},
		{"expired", iss.Sign(t, with(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Minute).Unix() })), false},
		{"expired within leeway", iss.Sign(t, with(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-10 * time.Second).Unix() })), true},
		{"no expiry", iss.Sign(t, with(func(c jwt.MapClaims) { delete(c, "exp") })), false},
		{"not yet valid", iss.Sign(t, with(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(5 * time.Minute).Unix() })), false},
		{"wrong audience", iss.Sign(t, with(func(c jwt.MapClaims) { c["aud"] = "https://elsewhere.example" })), false},
		{"wrong issuer", iss.Sign(t, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })), false},
		{"no subject", iss.Sign(t, with(func(c jwt.MapClaims) { delete(c, "sub") })), false},
		{"subject too long to be every write's actor", iss.Sign(t, with(func(c jwt.MapClaims) { c["sub"] = strings.Repeat("s", auth.MaxSubjectLen+1) })), false},
		{"lifetime of exactly the maximum", iss.Sign(t, with(func(c jwt.MapClaims) { c["exp"] = c["iat"].(int64) + int64(auth.DefaultMaxTokenLifetime/time.Second) })), true},
		{"lifetime over the maximum", iss.Sign(t, with(func(c jwt.MapClaims) {
			c["exp"] = c["iat"].(int64) + int64(auth.DefaultMaxTokenLifetime/time.Second) + 1
		})), false},
		{"issued long ago, expiring later", iss.Sign(t, with(func(c jwt.MapClaims) { c["iat"] = time.Now().Add(-30 * 24 * time.Hour).Unix() })), false},
		{"no iat", iss.Sign(t, with(func(c jwt.MapClaims) { delete(c, "iat") })), false},
		{"iat in the future", iss.Sign(t, with(func(c jwt.MapClaims) { c["iat"] = time.Now().Add(5 * time.Minute).Unix() })), false},
		{"unsigned", testkit.Unsigned(t, with(func(jwt.MapClaims) {})), false},
		{"tampered payload", parts[0] + "." + tamper(parts[1]) + "." + parts[2], false},
		{"unknown key", testkit.SignWith(t, otherKey, "unknown-kid", with(func(jwt.MapClaims) {})), false},
		{"known kid, other key", testkit.SignWith(t, otherKey, iss.KeyID, with(func(jwt.MapClaims) {})), false},
		{"HMAC with the public key as secret", hmacWithPublicKey(t, iss, with(func(jwt.MapClaims) {})), false},
		{"garbage", "not.a.token", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.Verify(t.Context(), tt.token)
			if tt.ok {
				if err != nil || p.Subject != "client-1" || !p.HasScope(auth.ScopeRead) {
					t.Fatalf("p = %+v, err = %v", p, err)
				}
				return
			}
			if !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("err = %v, want invalid token", err)
			}
		})
	}
	longest := strings.Repeat("s", auth.MaxSubjectLen)
	if p, err := v.Verify(t.Context(), iss.Sign(t, with(func(c jwt.MapClaims) { c["sub"] = longest }))); err != nil || p.Subject != longest {
		t.Errorf("a subject of the longest length: %+v, %v", p, err)
	}
}

// tamper changes one claim of a base64url payload without re-signing.
func tamper(payload string) string {
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	changed := strings.Replace(string(raw), `"client-1"`, `"client-2"`, 1)
	return base64.RawURLEncoding.EncodeToString([]byte(changed))
}

// withSignatureChanged is token with one bit of its signature flipped.
// Replacing the signature's last characters does not always change it:
// the last character of its encoding carries bits that decoding drops.
func withSignatureChanged(t *testing.T, token string) string {
	t.Helper()
	dot := strings.LastIndexByte(token, '.')
	signature, err := base64.RawURLEncoding.DecodeString(token[dot+1:])
	if err != nil || len(signature) == 0 {
		t.Fatalf("token %q: signature %x, %v", token, signature, err)
	}
	signature[0] ^= 1
	return token[:dot+1] + base64.RawURLEncoding.EncodeToString(signature)
}

func hmacWithPublicKey(t *testing.T, iss *testkit.Issuer, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header["kid"] = iss.KeyID
	s, err := tok.SignedString(iss.Key.PublicKey.N.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The maximum lifetime is configurable; 0 is the default, a negative one is
// refused at start.
func TestMaxTokenLifetime(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	cfg := auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway}
	cfg.MaxTokenLifetime = time.Hour
	v := following(t, cfg)
	lived := func(d time.Duration) string {
		c := iss.Claims("client-1", auth.ScopeRead)
		c["exp"] = time.Now().Add(d).Unix()
		c["iat"] = time.Now().Unix()
		return iss.Sign(t, c)
	}
	if _, err := v.Verify(t.Context(), lived(time.Hour)); err != nil {
		t.Errorf("a token living the maximum: %v", err)
	}
	_, err := v.Verify(t.Context(), lived(2*time.Hour))
	if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), "exceeds the 1h0m0s") {
		t.Errorf("a token living twice the maximum: err = %v, want invalid token naming the limit", err)
	}
	cfg.MaxTokenLifetime = -time.Second
	if _, err := auth.NewVerifier(cfg); err == nil {
		t.Error("a negative maximum lifetime was accepted")
	}
}

func TestVerifierReportsUnreachableIssuerAsUnavailable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	v, err := auth.NewVerifier(auth.Config{Issuer: srv.URL, Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), "x.y.z"); !errors.Is(err, auth.ErrUnavailable) {
		t.Fatalf("err = %v, want unavailable", err)
	}
	err = v.Ready(t.Context())
	if err == nil {
		t.Fatal("Ready must fail while the issuer is unreachable")
	}
	// /readyz (pkg/server) shows this reason; it names the issuer and the
	// kind of failure.
	var r interface{ ReadinessReason() string }
	if !errors.As(err, &r) || r.ReadinessReason() != "the issuer "+srv.URL+" cannot be reached (connection refused)" {
		t.Errorf("Ready: %v, want a readiness reason saying the issuer refuses connections", err)
	}
	// Start does not stop the process for an issuer that is down: the keys
	// load on first use once it answers.
	if err := v.Start(t.Context(), log.NewNopLogger()); err != nil {
		t.Errorf("Start with the issuer down: %v, want nil", err)
	}
}

// An issuer whose discovery document names another issuer than the
// configured one (the trailing slash of an issuer such as Hydra) stops the
// process at start, with both values named; every token would fail the iss
// check otherwise.
func TestStartRefusesAnIssuerThatDiscoveryContradicts(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	iss.DiscoveredIssuer = iss.URL + "/"
	v := following(t, auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway})
	err := v.Start(t.Context(), log.NewNopLogger())
	if !errors.Is(err, auth.ErrIssuerMismatch) || !strings.Contains(err.Error(), fmt.Sprintf("names issuer %q, but oidc.issuer is %q", iss.URL+"/", iss.URL)) {
		t.Fatalf("Start: %v, want a refusal naming both issuers", err)
	}
	// Had it started anyway (its issuer was down at start), calls are 503
	// and /readyz says why.
	if _, err := v.Verify(t.Context(), iss.ReadOnly(t)); !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("Verify: %v, want unavailable", err)
	}
	var r interface{ ReadinessReason() string }
	if err := v.Ready(t.Context()); !errors.As(err, &r) || !strings.Contains(r.ReadinessReason(), "set oidc.issuer (OIDC_ISSUER) to exactly") {
		t.Errorf("Ready: %v, want the mismatch as the reason", err)
	}
}

func TestStartLoadsTheKeys(t *testing.T) {
	_, v := newVerifier(t)
	if err := v.Start(t.Context(), log.NewNopLogger()); err != nil {
		t.Fatal(err)
	}
	if err := v.Ready(t.Context()); err != nil {
		t.Fatalf("Ready after Start: %v", err)
	}
}

func TestScopeFor(t *testing.T) {
	tests := []struct {
		method, target, scope string
	}{
		{"GET", "/organizations", auth.ScopeRead},
		{"HEAD", "/people/1", auth.ScopeRead},
		{"POST", "/organizations", auth.ScopeWrite},
		{"PATCH", "/people/1", auth.ScopeWrite},
		{"DELETE", "/people/1", auth.ScopeWrite},
		{"POST", "/people/find", auth.ScopeRead},
		{"POST", "/people/find/", auth.ScopeRead},
		{"POST", "/people/find?create=false", auth.ScopeRead},
		{"POST", "/people/find?create=true", auth.ScopeWrite},
		{"POST", "/people/find?create=yes", auth.ScopeWrite},
		{"POST", "/people/find?create=false&create=true", auth.ScopeWrite},
		{"POST", "/organization/find/", auth.ScopeRead},
		{"PUT", "/asset_types/1/thumbnail", auth.ScopeWrite},
	}
	for _, tt := range tests {
		if got := auth.ScopeFor(httptest.NewRequest(tt.method, tt.target, nil)); got != tt.scope {
			t.Errorf("%s %s needs %s, want %s", tt.method, tt.target, got, tt.scope)
		}
	}
}

func TestMiddleware(t *testing.T) {
	iss, v := newVerifier(t)
	h := auth.Authenticate(v)(auth.RequireScope(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(auth.Subject(r.Context())))
	})))
	tests := []struct {
		name, method, authz string
		secondAuthz         string // a second Authorization header
		status              int
		challenge           string
	}{
		{"no header", "GET", "", "", 401, `Bearer realm="asset-registry"`},
		{"basic scheme", "GET", "Basic dXNlcjpwdw==", "", 401, `Bearer realm="asset-registry"`},
		{"invalid token", "GET", "Bearer nope", "", 401, `error="invalid_token"`},
		{"read token reads", "GET", "Bearer " + iss.ReadOnly(t), "", 200, ""},
		{"lowercase scheme", "GET", "bearer " + iss.ReadOnly(t), "", 200, ""},
		{"read token cannot write", "POST", "Bearer " + iss.ReadOnly(t), "", 403, `error="insufficient_scope"`},
		{"write-only token cannot read", "GET", "Bearer " + iss.Token(t, "w", auth.ScopeWrite), "", 403, `scope="registry:read"`},
		{"read-write token writes", "POST", "Bearer " + iss.ReadWrite(t), "", 200, ""},
		{"two valid tokens in two headers", "GET", "Bearer " + iss.ReadOnly(t), "Bearer " + iss.ReadWrite(t), 400, `error="invalid_request"`},
		{"a valid token and a bad one", "GET", "Bearer " + iss.ReadOnly(t), "Bearer nope", 400, `error="invalid_request"`},
		{"the same token twice", "GET", "Bearer " + iss.ReadOnly(t), "Bearer " + iss.ReadOnly(t), 400, `error="invalid_request"`},
		{"a bearer token and basic credentials", "GET", "Bearer " + iss.ReadOnly(t), "Basic dXNlcjpwdw==", 400, `error="invalid_request"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/organizations", nil)
			if tt.authz != "" {
				r.Header.Set("Authorization", tt.authz)
			}
			if tt.secondAuthz != "" {
				r.Header.Add("Authorization", tt.secondAuthz)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status {
				t.Fatalf("status = %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if got := w.Header().Get("WWW-Authenticate"); !strings.Contains(got, tt.challenge) {
				t.Errorf("WWW-Authenticate = %q, want it to contain %q", got, tt.challenge)
			}
		})
	}
}
