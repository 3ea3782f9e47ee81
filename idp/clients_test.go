package idp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestSecretRotation(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	ctx := context.Background()
	secrets := map[string]string{"first": ti.createClient(t, "rotating", []string{ScopeRead}, []string{registry})}

	works := func(t *testing.T, secret string) bool {
		t.Helper()
		a := ti.post(t, tokenCall{form: url.Values{"grant_type": {"client_credentials"}, "client_id": {"rotating"}, "client_secret": {secret}}})
		ok, err := ti.Clients.CheckSecret(ctx, "rotating", secret)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (a.status == http.StatusOK) {
			t.Fatalf("CheckSecret says %v but the token endpoint answered %d", ok, a.status)
		}
		return ok
	}
	expect := func(t *testing.T, when string, want map[string]bool) {
		t.Helper()
		for name, wantWorks := range want {
			if works(t, secrets[name]) != wantWorks {
				t.Errorf("%s: the %s secret works: %v, want %v", when, name, !wantWorks, wantWorks)
			}
		}
	}
	rotate := func(t *testing.T, name string, window time.Duration) {
		t.Helper()
		s, err := ti.Clients.RotateSecret(ctx, "rotating", window)
		if err != nil {
			t.Fatal(err)
		}
		secrets[name] = s
	}

	rotate(t, "second", time.Hour)
	expect(t, "within the window", map[string]bool{"first": true, "second": true})
	ti.clock.Advance(time.Hour - time.Second)
	expect(t, "at the end of the window", map[string]bool{"first": true, "second": true})
	ti.clock.Advance(time.Second)
	expect(t, "after the window", map[string]bool{"first": false, "second": true})

	rotate(t, "third", 0)
	expect(t, "after a rotation without window", map[string]bool{"second": false, "third": true})

	rotate(t, "fourth", time.Hour)
	rotate(t, "fifth", time.Hour)
	expect(t, "after two rotations in one window", map[string]bool{"third": false, "fourth": true, "fifth": true})

	var rows int
	if err := ti.pool.QueryRow(ctx, `SELECT count(*) FROM client_secrets`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Errorf("%d secret rows are kept, want 2: replaced and expired ones are deleted", rows)
	}
}

func TestSecretsAreStoredOnlyAsHashes(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	ctx := context.Background()
	secrets := []string{ti.createClient(t, "hashed", []string{ScopeRead}, []string{registry})}
	rotated, err := ti.Clients.RotateSecret(ctx, "hashed", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secrets = append(secrets, rotated)

	var dump string
	err = ti.pool.QueryRow(ctx, `SELECT concat_ws(' ',
		(SELECT string_agg(row_to_json(c)::text, ' ') FROM clients c),
		(SELECT string_agg(row_to_json(s)::text, ' ') FROM client_secrets s))`).Scan(&dump)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range secrets {
		raw, err := base64.RawURLEncoding.DecodeString(secret)
		if err != nil || len(raw) != 32 {
			t.Fatalf("secret %d characters long is not 32 base64url bytes", len(secret))
		}
		for _, form := range []string{secret, hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw)} {
			if strings.Contains(dump, form) {
				t.Fatal("the database holds a secret in plain text")
			}
		}
		sum := sha256.Sum256([]byte(secret))
		if !strings.Contains(dump, hex.EncodeToString(sum[:])) {
			t.Error("the database does not hold the secret's SHA-256 digest")
		}
	}
}

func TestAdminAPI(t *testing.T) {
	t.Parallel()
	ti := newTestIdP(t)
	ctx := context.Background()
	secret := ti.createClient(t, "svc.a_1-x", []string{ScopeRead, ScopeWrite, ScopeRead}, []string{registry + "/", registry})

	t.Run("create rejects invalid registrations", func(t *testing.T) {
		for name, c := range map[string]struct {
			id        string
			scopes    []string
			resources []string
		}{
			"short id":            {"ab", []string{ScopeRead}, []string{registry}},
			"id with a space":     {"a b c", []string{ScopeRead}, []string{registry}},
			"unknown scope":       {"client-1", []string{"registry:root"}, []string{registry}},
			"no scope":            {"client-1", nil, []string{registry}},
			"relative resource":   {"client-1", []string{ScopeRead}, []string{"/registry"}},
			"resource fragment":   {"client-1", []string{ScopeRead}, []string{registry + "#top"}},
			"no resource":         {"client-1", []string{ScopeRead}, nil},
			"id of 65 characters": {strings.Repeat("a", 65), []string{ScopeRead}, []string{registry}},
		} {
			if _, err := ti.Clients.CreateClient(ctx, c.id, c.scopes, c.resources); !errors.Is(err, ErrInvalidRegistration) {
				t.Errorf("%s: %v, want ErrInvalidRegistration", name, err)
			}
		}
	})
	t.Run("create rejects an existing id", func(t *testing.T) {
		if _, err := ti.Clients.CreateClient(ctx, "svc.a_1-x", []string{ScopeRead}, []string{registry}); !errors.Is(err, ErrClientExists) {
			t.Errorf("%v, want ErrClientExists", err)
		}
	})
	t.Run("list shows clients with canonical resources and valid secrets", func(t *testing.T) {
		list, err := ti.Clients.ListClients(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 {
			t.Fatalf("%d clients, want 1: %+v", len(list), list)
		}
		c := list[0]
		if c.ID != "svc.a_1-x" || strings.Join(c.Scopes, " ") != "registry:read registry:write" ||
			strings.Join(c.Resources, " ") != registry || len(c.Secrets) != 1 || c.Secrets[0].ExpiresAt != nil {
			t.Errorf("%+v: want deduplicated scopes, the canonical resource and one unexpiring secret", c)
		}
	})
	t.Run("unknown clients are ErrClientNotFound", func(t *testing.T) {
		if _, err := ti.Clients.RotateSecret(ctx, "nobody", time.Hour); !errors.Is(err, ErrClientNotFound) {
			t.Errorf("rotate: %v", err)
		}
		if err := ti.Clients.DeleteClient(ctx, "nobody"); !errors.Is(err, ErrClientNotFound) {
			t.Errorf("delete: %v", err)
		}
		if ok, err := ti.Clients.CheckSecret(ctx, "nobody", secret); ok || err != nil {
			t.Errorf("check: %v, %v; want false, nil", ok, err)
		}
	})
	t.Run("delete removes the client and its secrets", func(t *testing.T) {
		if err := ti.Clients.DeleteClient(ctx, "svc.a_1-x"); err != nil {
			t.Fatal(err)
		}
		if ok, err := ti.Clients.CheckSecret(ctx, "svc.a_1-x", secret); ok || err != nil {
			t.Errorf("check after delete: %v, %v", ok, err)
		}
		var rows int
		if err := ti.pool.QueryRow(ctx, `SELECT count(*) FROM client_secrets`).Scan(&rows); err != nil || rows != 0 {
			t.Errorf("%d secret rows left (%v)", rows, err)
		}
	})
	// The registry's rows name their creator by client id: a new client
	// under a deleted one's id would own them.
	t.Run("a deleted client's id is never created again", func(t *testing.T) {
		_, err := ti.Clients.CreateClient(ctx, "svc.a_1-x", []string{ScopeRead}, []string{registry})
		if !errors.Is(err, ErrClientDeleted) || !strings.Contains(err.Error(), "svc.a_1-x was deleted on") {
			t.Errorf("create under a deleted id: %v, want ErrClientDeleted naming the id and when", err)
		}
		if list, err := ti.Clients.ListClients(ctx); err != nil || len(list) != 0 {
			t.Errorf("after the refused create: %v, %v; want no client", list, err)
		}
		if err := ti.Clients.DeleteClient(ctx, "svc.a_1-x"); !errors.Is(err, ErrClientNotFound) {
			t.Errorf("delete again: %v, want ErrClientNotFound", err)
		}
	})
}
