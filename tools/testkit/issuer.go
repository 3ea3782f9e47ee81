// An OIDC issuer for tests: a real RSA key, a real
// discovery document and JWKS over HTTP, and tokens with whatever claims a
// test needs, so services are tested with their real token verification.

package testkit

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// Issuer serves /.well-known/openid-configuration and a JWKS.
type Issuer struct {
	URL      string
	Audience string
	Key      *rsa.PrivateKey
	KeyID    string
	// DiscoveredIssuer, when set before the first verifier asks, is the
	// issuer the discovery document names instead of URL: a misconfigured
	// verifier, as when URL lacks the trailing slash an issuer publishes.
	DiscoveredIssuer string
	keys             jwkset.Storage // what the JWKS serves

	mu       sync.Mutex
	validity map[string]int64 // client id → lowest generation that stands; nil: no list
	down     bool             // the list answers 503
	age      int              // the list's Age header, in seconds (0: none)
	reads    int              // requests for the list
}

// NewIssuer starts an issuer whose tokens are for audience.
func NewIssuer(t testing.TB, audience string) *Issuer {
	t.Helper()
	key := takeIssuerKey(t)
	t.Cleanup(func() { returnIssuerKey(key) })
	store := jwkset.NewMemoryStorage()
	iss := &Issuer{Audience: audience, keys: store}
	iss.publish(t, key, "test-key-1")
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss.URL = srv.URL
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		issuer := iss.URL
		if iss.DiscoveredIssuer != "" {
			issuer = iss.DiscoveredIssuer
		}
		doc := map[string]string{"issuer": issuer, "jwks_uri": iss.URL + "/jwks.json"}
		iss.mu.Lock()
		if iss.validity != nil {
			doc[tokenValidityMember] = iss.URL + "/token-validity"
		}
		iss.mu.Unlock()
		_ = json.NewEncoder(w).Encode(doc)
	})
	mux.HandleFunc("GET /token-validity", func(w http.ResponseWriter, _ *http.Request) {
		iss.mu.Lock()
		defer iss.mu.Unlock()
		iss.reads++
		if iss.validity == nil || iss.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if iss.age > 0 {
			w.Header().Set("Age", strconv.Itoa(iss.age))
		}
		clients := map[string]int64{}
		for id, generation := range iss.validity {
			clients[clientKey(id)] = generation
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"clients": clients})
	})
	mux.HandleFunc("GET /jwks.json", func(w http.ResponseWriter, r *http.Request) {
		raw, _ := store.JSONPublic(r.Context())
		_, _ = w.Write(raw)
	})
	return iss
}

// PublishValidity makes the issuer publish a token validity list (in its
// discovery document, for verifiers that start after this call) saying,
// for each client id, the lowest credential_generation of its tokens that
// stand; clients left out have no token that stands. Tokens then need the
// claim: see Generation.
func (i *Issuer) PublishValidity(clients map[string]int64) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.validity = maps.Clone(clients)
	if i.validity == nil {
		i.validity = map[string]int64{}
	}
}

// ValidityDown makes the token validity list answer 503 (down) or serve
// again.
func (i *Issuer) ValidityDown(down bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.down = down
}

// ValidityAge makes the token validity list say it was read from the
// issuer's database seconds ago (the Age header of an identity provider
// serving it from memory while its database is away).
func (i *Issuer) ValidityAge(seconds int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.age = seconds
}

// ValidityReads is how many times the token validity list was asked for.
func (i *Issuer) ValidityReads() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.reads
}

// Generation returns claims issued under a credential generation.
func Generation(claims jwt.MapClaims, generation int64) jwt.MapClaims {
	claims[credentialGenerationClaim] = generation
	return claims
}

// The token validity list as the registry's identity provider publishes it
// (pkg/auth's validity.go): the discovery member that names it, the claim
// of a token's generation, and the key of a client in the list, the
// unpadded base64url SHA-256 of its id.
const (
	tokenValidityMember       = "registry_token_validity_uri"
	credentialGenerationClaim = "credential_generation"
)

func clientKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Rotate replaces the signing key with a new one under a new key id; the
// JWKS stops serving the old key, as after a rotation without overlap.
// Verifiers notice at their next refresh (a token with the new key id
// triggers one).
func (i *Issuer) Rotate(t testing.TB) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if err := i.keys.KeyReplaceAll(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	i.publish(t, key, i.KeyID+"-next")
}

// issuerKeys holds the keys of issuers whose tests have ended, for the
// next issuer: generating a 2048-bit key costs about 70 ms of CPU, a sixth
// of what starting a service costs a test. A key belongs to one live
// issuer at a time, so two issuers that exist together never sign alike.
var issuerKeys struct {
	mu   sync.Mutex
	free []*rsa.PrivateKey
}

func takeIssuerKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	issuerKeys.mu.Lock()
	if n := len(issuerKeys.free); n > 0 {
		key := issuerKeys.free[n-1]
		issuerKeys.free = issuerKeys.free[:n-1]
		issuerKeys.mu.Unlock()
		return key
	}
	issuerKeys.mu.Unlock()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func returnIssuerKey(key *rsa.PrivateKey) {
	issuerKeys.mu.Lock()
	defer issuerKeys.mu.Unlock()
	issuerKeys.free = append(issuerKeys.free, key)
}

func (i *Issuer) publish(t testing.TB, key *rsa.PrivateKey, kid string) {
	t.Helper()
	jwk, err := jwkset.NewJWKFromKey(key.Public(), jwkset.JWKOptions{
		Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.AlgRS256, USE: jwkset.UseSig},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := i.keys.KeyWrite(context.Background(), jwk); err != nil {
		t.Fatal(err)
	}
	i.Key, i.KeyID = key, kid
}

// Leeway is the clock skew a verifier that trusts a test issuer allows
// (auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: Leeway}).
const Leeway = 30 * time.Second

// The scopes of the registry's tokens, as the contract names them.
const (
	scopeRead  = "registry:read"
	scopeWrite = "registry:write"
)

// Claims returns valid claims for sub with scopes; tests alter them to
// make bad tokens.
func (i *Issuer) Claims(sub string, scopes ...string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss":   i.URL,
		"sub":   sub,
		"aud":   []string{i.Audience},
		"iat":   now.Unix(),
		"nbf":   now.Unix(),
		"exp":   now.Add(5 * time.Minute).Unix(),
		"scope": strings.Join(scopes, " "),
	}
}

// Token returns a valid token for sub with scopes.
func (i *Issuer) Token(t testing.TB, sub string, scopes ...string) string {
	return i.Sign(t, i.Claims(sub, scopes...))
}

// Bound returns a valid token for sub, a client bound to the organization
// whose id is org, with scopes: the org claim the registry's identity
// provider gives a bound client's tokens.
func (i *Issuer) Bound(t testing.TB, sub, org string, scopes ...string) string {
	c := i.Claims(sub, scopes...)
	c["org"] = org
	return i.Sign(t, c)
}

// ReadWrite and ReadOnly are the two kinds of machine client.
func (i *Issuer) ReadWrite(t testing.TB) string {
	return i.Token(t, "rw-client", scopeRead, scopeWrite)
}

// ReadOnly returns a token with only registry:read.
func (i *Issuer) ReadOnly(t testing.TB) string { return i.Token(t, "ro-client", scopeRead) }

// Sign signs claims with the issuer's key.
func (i *Issuer) Sign(t testing.TB, claims jwt.MapClaims) string {
	return SignWith(t, i.Key, i.KeyID, claims)
}

// SignWith signs claims with any RSA key and key id (an unknown key, say).
func SignWith(t testing.TB, key *rsa.PrivateKey, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Unsigned returns claims as an "alg: none" token.
func Unsigned(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
