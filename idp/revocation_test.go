package idp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/assetregistry/registry/pkg/auth"
)

// generationOf is the credential_generation claim of a token.
func generationOf(t *testing.T, token string) int64 {
	t.Helper()
	var claims jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		t.Fatal(err)
	}
	g, ok := claims[auth.CredentialGenerationClaim].(float64)
	if !ok {
		t.Fatalf("the token has no %s: %v", auth.CredentialGenerationClaim, claims)
	}
	return int64(g)
}

// validity reads the token validity list as a verifier that met a token
// newer than its list does (a list read from the database after the
// request), by client id.
func (ti *testIdP) validity(t *testing.T, ids ...string) map[string]int64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ti.issuer+"/oidc/token-validity", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Cache-Control", "no-cache")
	a := do(t, req)
	if a.status != http.StatusOK || a.header.Get("ETag") == "" {
		t.Fatalf("token validity: %d %v, ETag %q", a.status, a.body, a.header.Get("ETag"))
	}
	listed, _ := a.body["clients"].(map[string]any)
	out := map[string]int64{}
	for _, id := range ids {
		if g, ok := listed[auth.ClientKey(id)].(float64); ok {
			out[id] = int64(g)
		}
	}
	return out
}

// What the token validity list says after each change to a client, and
// what the tokens issued around it carry: a token stands while its
// generation is at least its client's listed one.
func TestTokenValidityFollowsClientChanges(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	ctx := context.Background()
	secrets := map[string]string{
		"acme":    ti.createClient(t, "acme", []string{ScopeRead, ScopeWrite}, []string{registry}),
		"globex":  ti.createClient(t, "globex", []string{ScopeRead}, []string{registry}),
		"initech": ti.createClient(t, "initech", []string{ScopeRead, ScopeAdmin}, []string{registry}),
	}
	stands := func(id, token string) bool {
		t.Helper()
		lowest, listed := ti.validity(t, id)[id]
		return listed && generationOf(t, token) >= lowest
	}
	tokens := map[string]string{}
	for id, secret := range secrets {
		tokens[id] = ti.token(t, id, secret, nil)
		if !stands(id, tokens[id]) {
			t.Fatalf("a fresh token of %s does not stand", id)
		}
	}

	t.Run("a rotation voids the old secret's tokens when its window ends", func(t *testing.T) {
		newSecret, err := ti.Clients.RotateSecret(ctx, "acme", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		oldSecretToken := ti.token(t, "acme", secrets["acme"], nil) // within the window
		newSecretToken := ti.token(t, "acme", newSecret, nil)
		for name, tok := range map[string]string{"before the rotation": tokens["acme"], "of the old secret in the window": oldSecretToken, "of the new secret": newSecretToken} {
			if !stands("acme", tok) {
				t.Errorf("within the window, a token %s does not stand", name)
			}
		}
		ti.clock.Advance(time.Hour)
		for name, tok := range map[string]string{"before the rotation": tokens["acme"], "of the old secret in the window": oldSecretToken} {
			if stands("acme", tok) {
				t.Errorf("after the window, a token %s stands", name)
			}
		}
		if !stands("acme", newSecretToken) {
			t.Error("after the window, the new secret's token does not stand")
		}
		secrets["acme"], tokens["acme"] = newSecret, newSecretToken
	})

	t.Run("removing a scope voids every token; adding one voids none", func(t *testing.T) {
		before := ti.token(t, "initech", secrets["initech"], nil)
		voided, err := ti.Clients.SetScopes(ctx, "initech", []string{ScopeRead, ScopeAdmin, ScopeWrite})
		if err != nil || voided {
			t.Fatalf("adding a scope: voided %v, %v", voided, err)
		}
		if !stands("initech", before) {
			t.Error("adding a scope voided a token")
		}
		voided, err = ti.Clients.SetScopes(ctx, "initech", []string{ScopeRead, ScopeWrite})
		if err != nil || !voided {
			t.Fatalf("removing registry:admin: voided %v, %v", voided, err)
		}
		if stands("initech", before) || stands("initech", tokens["initech"]) {
			t.Error("a token issued before registry:admin was removed stands")
		}
		after := ti.token(t, "initech", secrets["initech"], nil)
		if !stands("initech", after) {
			t.Error("a token issued after the removal does not stand")
		}
		if a := ti.post(t, tokenCall{form: map[string][]string{"grant_type": {"client_credentials"}, "client_id": {"initech"},
			"client_secret": {secrets["initech"]}, "scope": {ScopeAdmin}}}); a.status != http.StatusBadRequest {
			t.Errorf("asking for the removed scope: %d %v, want 400 invalid_scope", a.status, a.body)
		}
	})

	t.Run("removing a scope during a rotation keeps the old secret's end", func(t *testing.T) {
		newSecret, err := ti.Clients.RotateSecret(ctx, "globex", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ti.Clients.SetScopes(ctx, "globex", []string{ScopeWrite}); err != nil {
			t.Fatal(err)
		}
		oldSecretToken := ti.token(t, "globex", secrets["globex"], nil)
		newSecretToken := ti.token(t, "globex", newSecret, nil)
		if !stands("globex", oldSecretToken) || !stands("globex", newSecretToken) {
			t.Fatal("within the window, the tokens issued after the removal do not stand")
		}
		ti.clock.Advance(time.Hour)
		if stands("globex", oldSecretToken) || !stands("globex", newSecretToken) {
			t.Error("after the window: the old secret's token stands, or the new one's does not")
		}
	})

	t.Run("deleting a client voids its tokens, and its id is not made again", func(t *testing.T) {
		if err := ti.Clients.DeleteClient(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if _, listed := ti.validity(t, "acme")["acme"]; listed {
			t.Error("a deleted client is listed")
		}
		if !stands("initech", ti.token(t, "initech", secrets["initech"], nil)) {
			t.Error("deleting one client voided another's token")
		}
		if _, err := ti.Clients.CreateClient(ctx, "acme", []string{ScopeRead}, []string{registry}); !errors.Is(err, ErrClientDeleted) {
			t.Errorf("the id made again: %v, want ErrClientDeleted", err)
		}
		if stands("acme", tokens["acme"]) {
			t.Error("a token of the deleted client stands")
		}
	})
}

// Generations become visible in the order they are drawn. A client whose
// generation is drawn but not yet committed holds back every later change
// that draws one (a client created, a scope taken away, a secret rotated),
// so no token validity list names a later generation without the earlier
// client. Else a list read between the two commits names a generation
// above the earlier client's and not the client, which a verifier takes
// for a deleted client: its first token refused (as happened with clients
// created at once, in make bench).
func TestGenerationsBecomeVisibleInTheOrderDrawn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		later func(ctx context.Context, c *Clients) error
	}{
		{"a client created", func(ctx context.Context, c *Clients) error {
			_, err := c.CreateClient(ctx, "later", []string{ScopeRead}, []string{registry})
			return err
		}},
		{"a scope taken from another client", func(ctx context.Context, c *Clients) error {
			_, err := c.SetScopes(ctx, "other", []string{ScopeRead})
			return err
		}},
		{"another client's secret rotated", func(ctx context.Context, c *Clients) error {
			_, err := c.RotateSecret(ctx, "other", 0)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ti := newTestIdP(t)
			ctx := t.Context()
			ti.createClient(t, "other", []string{ScopeRead, ScopeWrite}, []string{registry})
			pool := ti.Clients.store.pool
			earlier, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer earlier.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
			if _, err := earlier.Exec(ctx, `INSERT INTO clients (client_id, scopes, resources, created_at) VALUES ('earlier', $1, $2, now())`,
				[]string{ScopeRead}, []string{registry}); err != nil {
				t.Fatal(err)
			}
			_, hash := newSecret()
			if err := insertSecret(ctx, earlier, "earlier", hash, time.Now()); err != nil {
				t.Fatal(err)
			}

			done := make(chan error, 1)
			go func() { done <- tt.later(context.WithoutCancel(ctx), ti.Clients) }()
			// Until the later change waits for the earlier one's commit;
			// finishing first is the failure.
			for waiting := false; !waiting; {
				select {
				case err := <-done:
					t.Fatalf("committed (%v) while a generation drawn before it was not: a list read now names it and not the client %q, so the client looks deleted",
						err, "earlier")
				case <-time.After(20 * time.Millisecond):
				}
				if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1
					AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('idp credential generations:' || current_schema(), 0))`).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
			}
			if err := earlier.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			listed := ti.validity(t, "earlier", "other", "later")
			if _, ok := listed["earlier"]; !ok {
				t.Fatalf("the earlier client is not listed: %v", listed)
			}
			if later := max(listed["other"], listed["later"]); later <= listed["earlier"] {
				t.Errorf("the later change's generation %d is not above the earlier client's %d", later, listed["earlier"])
			}
		})
	}
}

// The list is served to verifiers that ask about once a second: an
// unchanged list is a 304 to a request that names its ETag, and the list
// names clients only by the hash of their ids.
func TestTokenValidityListIsCheapAndNamesNoClient(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	ti.createClient(t, "secret-partner-name", []string{ScopeRead}, []string{registry})
	// The first read asks for a list read after the client was created: the
	// list in memory may predate it, and the next refresh would change it
	// between this read and the conditional one below.
	fresh, err := http.NewRequest(http.MethodGet, ti.issuer+"/oidc/token-validity", nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh.Header.Set("Cache-Control", "no-cache")
	first := do(t, fresh)
	if strings.Contains(first.header.Get("Cache-Control"), "max-age") || first.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("Cache-Control %q, want no-cache", first.header.Get("Cache-Control"))
	}
	raw, _ := first.body["clients"].(map[string]any)
	for k := range raw {
		if strings.Contains(k, "partner") {
			t.Errorf("the list names a client: %q", k)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, ti.issuer+"/oidc/token-validity", nil)
	req.Header.Set("If-None-Match", first.header.Get("ETag"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("the same list again: %d, want 304", resp.StatusCode)
	}
	// A change reaches the list served from memory with the next read of
	// the database, about a second later.
	ti.createClient(t, "another", []string{ScopeRead}, []string{registry})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != first.header.Get("ETag") {
			break
		}
		if resp.StatusCode != http.StatusNotModified || time.Now().After(deadline) {
			t.Fatalf("a changed list: %d, ETag %q, want 200 and a new ETag within seconds", resp.StatusCode, resp.Header.Get("ETag"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The list is served from memory: with the database gone, every replica
// stays ready and goes on answering the last list it read, saying in Age
// how old it is,
// and a request for a fresh one (Cache-Control: no-cache) is a 503 that
// costs no more than one read at a time. Reads are limited per source
// address, behind the trusted proxies.
func TestTokenValidityListIsServedFromMemory(t *testing.T) {
	t.Parallel()
	ti := newTestIdPWith(t, func(c *Config) {
		c.Validity = ValidityConfig{Refresh: 50 * time.Millisecond, PerAddress: 5}
		must(t, c.Throttle.TrustedProxies.Set("127.0.0.2"))
	})
	ti.createClient(t, "listed", []string{ScopeRead}, []string{registry})
	if got := ti.validity(t, "listed"); len(got) != 1 {
		t.Fatalf("the list before: %v", got)
	}
	ti.pool.Close() // the database is gone for this replica
	time.Sleep(1100 * time.Millisecond)
	a := ti.get(t, "/oidc/token-validity")
	listed, _ := a.body["clients"].(map[string]any)
	if a.status != http.StatusOK || listed[auth.ClientKey("listed")] == nil {
		t.Fatalf("with the database gone: %d %v, want the last list", a.status, a.body)
	}
	if age, err := strconv.Atoi(a.header.Get("Age")); err != nil || age < 1 {
		t.Errorf("Age %q, want the seconds since the database was read (at least 1)", a.header.Get("Age"))
	}
	// Still ready, so that it goes on serving the list behind a Service
	// that routes to ready replicas only.
	if a := ti.get(t, "/readyz"); a.status != http.StatusOK {
		t.Errorf("/readyz with the database gone but a list held: %d %v, want 200", a.status, a.body)
	}
	req, _ := http.NewRequest(http.MethodGet, ti.issuer+"/oidc/token-validity", nil)
	req.Header.Set("Cache-Control", "no-cache")
	if a := do(t, req); a.status != http.StatusServiceUnavailable {
		t.Errorf("a fresh list asked for with the database gone: %d %v, want 503", a.status, a.body)
	}

	// Five reads a second from one address, ten at once: behind the trusted
	// proxy, each caller's own.
	ingress := from(t, "127.0.0.2")
	read := func(caller string) int {
		req, _ := http.NewRequest(http.MethodGet, ti.issuer+"/oidc/token-validity", nil)
		req.Header.Set("X-Forwarded-For", caller)
		return doWith(t, ingress, req).status
	}
	counts := map[int]int{}
	for range 30 {
		counts[read("203.0.113.66")]++
	}
	if counts[http.StatusOK] > 12 || counts[http.StatusTooManyRequests] < 18 {
		t.Errorf("30 reads at once from one address: %v, want about 10 answered and the rest 429", counts)
	}
	if status := read("198.51.100.7"); status != http.StatusOK {
		t.Errorf("another address through the same proxy: %d, want 200", status)
	}
}

// The registry's own verifier, following the IdP's list in the background
// (every 20 ms here), refuses a token within moments of each kind of
// revocation, and keeps accepting every other token: real PostgreSQL, the
// real token endpoint, the real verifier.
func TestVerifierRefusesRevokedTokens(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	ctx := context.Background()
	v, err := auth.NewVerifier(auth.Config{Issuer: ti.issuer, Audience: registry, Leeway: 30 * time.Second,
		TokenValidityInterval: 20 * time.Millisecond, TokenValidityMaxAge: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	secrets := map[string]string{}
	tokens := map[string]string{}
	for _, id := range []string{"deleted", "rotated", "narrowed", "untouched"} {
		secrets[id] = ti.createClient(t, id, []string{ScopeRead, ScopeWrite}, []string{registry})
		tokens[id] = ti.token(t, id, secrets[id], nil)
		if _, err := v.Verify(ctx, tokens[id]); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	refused := func(t *testing.T, token string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute) // a bound for a loaded machine, not the goal
		for {
			_, err := v.Verify(ctx, token)
			if errors.Is(err, auth.ErrInvalidToken) && strings.Contains(err.Error(), "revoked") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("still %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	t.Run("delete", func(t *testing.T) {
		if err := ti.Clients.DeleteClient(ctx, "deleted"); err != nil {
			t.Fatal(err)
		}
		refused(t, tokens["deleted"])
	})
	t.Run("scope removed", func(t *testing.T) {
		if _, err := ti.Clients.SetScopes(ctx, "narrowed", []string{ScopeRead}); err != nil {
			t.Fatal(err)
		}
		refused(t, tokens["narrowed"])
		p, err := v.Verify(ctx, ti.token(t, "narrowed", secrets["narrowed"], nil))
		if err != nil || p.HasScope(ScopeWrite) {
			t.Errorf("a token after the removal: %+v, %v", p, err)
		}
	})
	// Last: the IdP's clock moves an hour on, so tokens issued after this
	// would not be valid yet for the verifier, which keeps the real time.
	t.Run("rotate, after the window", func(t *testing.T) {
		newSecret, err := ti.Clients.RotateSecret(ctx, "rotated", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		fresh := ti.token(t, "rotated", newSecret, nil)
		if _, err := v.Verify(ctx, tokens["rotated"]); err != nil {
			t.Fatalf("the old secret's token within the window: %v", err)
		}
		ti.clock.Advance(time.Hour)
		refused(t, tokens["rotated"])
		if _, err := v.Verify(ctx, fresh); err != nil {
			t.Errorf("the new secret's token: %v", err)
		}
	})
	if _, err := v.Verify(ctx, tokens["untouched"]); err != nil {
		t.Errorf("a client nobody changed: %v", err)
	}
}

// A bound client's tokens carry its organization in the claim org, one
// bound to none carries no org; binding and unbinding void the tokens
// issued before (they would read another organization's equipment, or
// every organization's), and binding to the organization a client already
// has voids nothing.
func TestBindingAClientToAnOrganization(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	ctx := context.Background()
	const orgA, orgB = "0190a6e2-8c3b-7d4e-9f00-00000000000a", "0190a6e2-8c3b-7d4e-9f00-00000000000b"
	org := orgA
	secret, err := ti.Clients.Register(ctx, Client{ID: "tenant", Scopes: []string{ScopeRead, ScopeWrite}, Resources: []string{registry}, OrganizationID: &org})
	if err != nil {
		t.Fatal(err)
	}
	unboundSecret := ti.createClient(t, "shared", []string{ScopeRead, ScopeWrite}, []string{registry})
	orgClaim := func(t *testing.T, token string) any {
		t.Helper()
		var claims jwt.MapClaims
		if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
			t.Fatal(err)
		}
		return claims[auth.DefaultOrganizationClaim]
	}
	stands := func(token string) bool {
		t.Helper()
		lowest, listed := ti.validity(t, "tenant")["tenant"]
		return listed && generationOf(t, token) >= lowest
	}

	first := ti.token(t, "tenant", secret, nil)
	if got := orgClaim(t, first); got != orgA {
		t.Errorf("a bound client's token: org %v, want %s", got, orgA)
	}
	if got := orgClaim(t, ti.token(t, "shared", unboundSecret, nil)); got != nil {
		t.Errorf("an unbound client's token: org %v, want no org claim", got)
	}

	voided, err := ti.Clients.Bind(ctx, "tenant", &org)
	if err != nil || voided || !stands(first) {
		t.Errorf("binding to the same organization: voided %v, %v, the token stands %v; want nothing voided", voided, err, stands(first))
	}

	other := orgB
	if voided, err = ti.Clients.Bind(ctx, "tenant", &other); err != nil || !voided {
		t.Fatalf("binding to another organization: voided %v, %v", voided, err)
	}
	if stands(first) {
		t.Error("a token issued before the client moved to another organization stands")
	}
	second := ti.token(t, "tenant", secret, nil)
	if got := orgClaim(t, second); got != orgB || !stands(second) {
		t.Errorf("a token after the move: org %v (want %s), stands %v", got, orgB, stands(second))
	}

	if voided, err = ti.Clients.Bind(ctx, "tenant", nil); err != nil || !voided {
		t.Fatalf("unbinding: voided %v, %v", voided, err)
	}
	if stands(second) {
		t.Error("a token issued before the client was unbound stands")
	}
	if got := orgClaim(t, ti.token(t, "tenant", secret, nil)); got != nil {
		t.Errorf("a token after unbinding: org %v, want none", got)
	}

	bad := "not-a-uuid"
	if _, err := ti.Clients.Bind(ctx, "tenant", &bad); !errors.Is(err, ErrInvalidRegistration) {
		t.Errorf("binding to %q: %v, want ErrInvalidRegistration", bad, err)
	}
	if _, err := ti.Clients.Bind(ctx, "nobody", &other); !errors.Is(err, ErrClientNotFound) {
		t.Errorf("binding an unknown client: %v, want ErrClientNotFound", err)
	}
}
