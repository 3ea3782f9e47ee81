package idp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/assetregistry/registry/pkg/auth"
)

// The example of RFC 7638 §3.1: a key and its thumbprint.
func TestKeyIDIsTheRFC7638Thumbprint(t *testing.T) {
	t.Parallel()
	n, err := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	if err != nil {
		t.Fatal(err)
	}
	j, err := publicJWK(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537})
	if err != nil {
		t.Fatal(err)
	}
	if want := "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"; j.KID != want {
		t.Errorf("kid %s, want %s", j.KID, want)
	}
}

func TestSigningKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "nested", "signing.pem")

	created, err := LoadKeys(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the missing key file was not created: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", info.Mode().Perm())
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("the key folder holds %d files, want only the key", len(entries))
	}
	reloaded, err := LoadKeys(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reloaded.KeyID() != created.KeyID() {
		t.Error("loading an existing key file gave another key")
	}

	t.Run("previous keys are published after the active one", func(t *testing.T) {
		previous := filepath.Join(dir, "previous.pem")
		old, err := LoadKeys(previous, nil)
		if err != nil {
			t.Fatal(err)
		}
		publicOnly := writePublicKey(t, dir)
		k, err := LoadKeys(path, []string{previous, path, publicOnly})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := jwksKIDs(t, k.jwks), []string{created.KeyID(), old.KeyID(), kidOfFile(t, publicOnly)}; !slices.Equal(got, want) {
			t.Errorf("JWKS kids %v, want %v (active first, no duplicates)", got, want)
		}
	})
	t.Run("a short key is refused", func(t *testing.T) {
		key, err := rsa.GenerateKey(rand.Reader, 1024)
		if err != nil {
			t.Fatal(err)
		}
		short := filepath.Join(dir, "short.pem")
		writePEM(t, short, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
		if _, err := LoadKeys(short, nil); err == nil {
			t.Error("a 1024-bit signing key was accepted")
		}
	})
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writePublicKey(t *testing.T, dir string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "public.pem")
	writePEM(t, path, "PUBLIC KEY", der)
	return path
}

func kidOfFile(t *testing.T, path string) string {
	t.Helper()
	pub, err := readPublicKey(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := publicJWK(pub)
	if err != nil {
		t.Fatal(err)
	}
	return j.KID
}

func jwksKIDs(t *testing.T, doc []byte) []string {
	t.Helper()
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys {
		if k["kty"] != "RSA" || k["use"] != "sig" || k["alg"] != "RS256" || k["n"] == "" || k["e"] != "AQAB" || k["kid"] == "" {
			t.Errorf("JWK %v: want an RSA signing key for RS256 with n, e and kid", k)
		}
		if k["d"] != "" || k["p"] != "" {
			t.Fatal("the JWKS publishes private key material")
		}
		kids = append(kids, k["kid"])
	}
	return kids
}

func TestDiscoveryAndJWKS(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	a := ti.get(t, "/.well-known/openid-configuration")
	if a.status != http.StatusOK {
		t.Fatalf("discovery: %d", a.status)
	}
	want := map[string]any{
		"issuer":                                ti.issuer,
		"token_endpoint":                        ti.issuer + "/oidc/token",
		"jwks_uri":                              ti.issuer + "/.well-known/jwks.json",
		"registry_token_validity_uri":           ti.issuer + "/oidc/token-validity",
		"grant_types_supported":                 []any{"client_credentials"},
		"token_endpoint_auth_methods_supported": []any{"client_secret_basic", "client_secret_post"},
		"scopes_supported":                      []any{"registry:read", "registry:write"},
		"response_types_supported":              []any{},
		"subject_types_supported":               []any{"public"},
		"id_token_signing_alg_values_supported": []any{"RS256"},
	}
	for k, v := range want {
		got, _ := json.Marshal(a.body[k])
		wantJSON, _ := json.Marshal(v)
		if string(got) != string(wantJSON) {
			t.Errorf("%s: %s, want %s", k, got, wantJSON)
		}
	}

	a = ti.get(t, "/.well-known/jwks.json")
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("jwks: %d %s", a.status, a.header.Get("Content-Type"))
	}
	raw, _ := json.Marshal(a.body)
	if kids := jwksKIDs(t, raw); len(kids) != 1 {
		t.Errorf("JWKS kids %v, want the signing key only", kids)
	}

	for _, probe := range []string{"/healthz", "/readyz"} {
		if a := ti.get(t, probe); a.status != http.StatusOK {
			t.Errorf("%s: %d %v", probe, a.status, a.body)
		}
	}
}

// The registry's own verifier (discovery, JWKS, signature, iss, aud, exp)
// must accept the IdP's tokens for the registry and nothing else.
func TestRegistryVerifierAcceptsTokens(t *testing.T) {
	t.Parallel()
	previous := filepath.Join(t.TempDir(), "previous.pem")
	oldKeys, err := LoadKeys(previous, nil)
	if err != nil {
		t.Fatal(err)
	}
	ti := newTestIdP(t, previous)
	ctx := context.Background()
	secret := ti.createClient(t, "verified", []string{ScopeRead, ScopeWrite}, []string{registry, "https://other.example.test"})

	verifier := func(t *testing.T, audience string) *auth.Verifier {
		t.Helper()
		v, err := auth.NewVerifier(auth.Config{Issuer: ti.issuer, Audience: audience})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Close)
		return v
	}
	registryVerifier := verifier(t, registry+"/")

	t.Run("a token for the registry is accepted", func(t *testing.T) {
		token := ti.token(t, "verified", secret, map[string][]string{"resource": {registry}, "scope": {"registry:read"}})
		p, err := registryVerifier.Verify(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if p.Subject != "verified" || !slices.Equal(p.Scopes, []string{ScopeRead}) || time.Until(p.Expiry) < 14*time.Minute {
			t.Errorf("principal %+v", p)
		}
	})
	t.Run("a token for another resource is refused", func(t *testing.T) {
		token := ti.token(t, "verified", secret, map[string][]string{"resource": {"https://other.example.test"}})
		if _, err := registryVerifier.Verify(ctx, token); !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("%v, want ErrInvalidToken", err)
		}
		if _, err := verifier(t, "https://other.example.test").Verify(ctx, token); err != nil {
			t.Errorf("the other resource's verifier: %v", err)
		}
	})
	t.Run("a token signed with a previous key is accepted", func(t *testing.T) {
		now := time.Now()
		valid, err := ti.Clients.TokenValidity(ctx)
		if err != nil {
			t.Fatal(err)
		}
		token, err := oldKeys.sign(accessClaims{RegisteredClaims: jwt.RegisteredClaims{
			Issuer: ti.issuer, Subject: "verified", Audience: jwt.ClaimStrings{registry},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)),
		}, Scope: ScopeRead, ClientID: "verified", CredentialGeneration: valid["verified"]})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := registryVerifier.Verify(ctx, token); err != nil {
			t.Error(err)
		}
	})
}
