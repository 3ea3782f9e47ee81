package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/testkit"
)

// idpAdmin runs the operator's command, `idp client ...`, against the
// stack's identity provider database, and returns what it prints.
func idpAdmin(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, catalog.IdentityProvider.Name), append([]string{"client"}, args...)...)
	cmd.Env = []string{"DATABASE_URL=" + stack.RoleURLs[catalog.IdentityProvider.Name], "DATABASE_ACQUIRE_TIMEOUT=" + acquireTimeout.String()}
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = string(exit.Stderr)
		}
		t.Fatalf("idp client %s: %v %s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// Deleting a client, the end of its rotated secret's window and taking a
// scope away each make every verifier refuse the tokens issued before:
// the gateway, a second gateway (another replica) and a service reached
// around them, within 5 s, with the operator's own commands and real
// tokens. Every other token keeps working.
func TestRevocationThroughGateway(t *testing.T) {
	t.Parallel() // its own clients and gateway replica; most of it is waiting for verifiers to refuse
	replica, err := stack.StartGateway(t.Context(), "revocation-replica")
	if err != nil {
		t.Fatal(err)
	}
	verifiers := map[string]testkit.Client{
		"gateway": gateway(), "second gateway": {BaseURL: replica},
		"parties service": {BaseURL: stack.ServiceURLs["parties"]},
	}
	answers := func(tok string) map[string]int {
		out := map[string]int{}
		for name, c := range verifiers {
			out[name] = c.Do(t, http.MethodGet, "/organizations?limit=1", tok, nil).Status
		}
		return out
	}
	accepted := func(t *testing.T, what, tok string) {
		t.Helper()
		for name, status := range answers(tok) {
			if status != http.StatusOK {
				t.Errorf("%s: %s answers %d, want 200", what, name, status)
			}
		}
	}
	refusedEverywhere := func(t *testing.T, what, tok string) {
		t.Helper()
		eventually(t, what, func() string {
			for name, c := range verifiers {
				r := c.Do(t, http.MethodGet, "/organizations?limit=1", tok, nil)
				if r.Status != http.StatusUnauthorized {
					return name + " answers " + http.StatusText(r.Status)
				}
				if auth := r.Header.Get("WWW-Authenticate"); !strings.Contains(auth, `error="invalid_token"`) || !strings.Contains(auth, "revoked") {
					return name + ": WWW-Authenticate " + auth
				}
			}
			return ""
		})
	}
	newClient := func(t *testing.T, prefix string) (string, string) {
		t.Helper()
		id := unique(prefix)
		secret, err := stack.NewClient(t.Context(), id, "registry:read", "registry:write")
		if err != nil {
			t.Fatal(err)
		}
		return id, secret
	}
	bystander := readWrite(t)
	accepted(t, "a bystander's token", bystander)

	t.Run("delete", func(t *testing.T) {
		id, secret := newClient(t, "revoke-delete")
		tok := token(t, id, secret)
		accepted(t, "before the delete", tok)
		idpAdmin(t, "delete", "--id", id)
		refusedEverywhere(t, "a deleted client's token", tok)
		if status, body := tokenResponse(t, clientForm(id, secret)); status != http.StatusUnauthorized {
			t.Errorf("a token for the deleted client: %d %v", status, body)
		}
	})

	t.Run("rotate, after the window", func(t *testing.T) {
		id, secret := newClient(t, "revoke-rotate")
		before := token(t, id, secret)
		const window = 8 * time.Second
		var rotated struct {
			ClientSecret string `json:"client_secret"`
		}
		if err := json.Unmarshal([]byte(idpAdmin(t, "rotate", "--id", id, "--window", window.String())), &rotated); err != nil {
			t.Fatal(err)
		}
		end := time.Now().Add(window)
		inWindow := token(t, id, secret) // the old secret, within the window
		fresh := token(t, id, rotated.ClientSecret)
		accepted(t, "the old secret's token within the window", before)
		time.Sleep(time.Until(end))
		refusedEverywhere(t, "a token issued before the rotation, after the window", before)
		refusedEverywhere(t, "a token of the old secret issued within the window, after it", inWindow)
		accepted(t, "the new secret's token after the window", fresh)
	})

	t.Run("scope removed", func(t *testing.T) {
		id, secret := newClient(t, "revoke-scope")
		before := token(t, id, secret)
		testkit.Expect(t, gateway().Do(t, http.MethodPost, "/organizations", before, map[string]any{
			"name": "Revoked scope AS", "registration_number": unique("rs"), "organization_type": "private"}), 201)
		out := idpAdmin(t, "scopes", "--id", id, "--scopes", "registry:read")
		if !strings.Contains(out, `"tokens_revoked": true`) {
			t.Errorf("idp client scopes printed %s", out)
		}
		refusedEverywhere(t, "a token issued before registry:write was taken away", before)
		after := token(t, id, secret)
		accepted(t, "a token issued after", after)
		testkit.Expect(t, gateway().Do(t, http.MethodPost, "/organizations", after, map[string]any{
			"name": "Revoked scope AS", "registration_number": unique("rs"), "organization_type": "private"}), 403)
	})

	t.Run("bound to an organization, then to none", func(t *testing.T) {
		id, secret := newClient(t, "revoke-bind")
		unbound := token(t, id, secret)
		out := idpAdmin(t, "bind", "--id", id, "--organization", creds.OrgB.ID)
		if !strings.Contains(out, `"tokens_revoked": true`) || !strings.Contains(out, creds.OrgB.ID) {
			t.Errorf("idp client bind printed %s", out)
		}
		refusedEverywhere(t, "a token issued before the client was bound (it read every organization's equipment)", unbound)
		bound := token(t, id, secret)
		accepted(t, "a token issued after the binding", bound)
		if org := unverifiedClaims(t, bound)["org"]; org != creds.OrgB.ID {
			t.Errorf("a token after the binding: org %v, want %s", org, creds.OrgB.ID)
		}
		idpAdmin(t, "unbind", "--id", id)
		refusedEverywhere(t, "a token issued before the client was unbound", bound)
		if org, ok := unverifiedClaims(t, token(t, id, secret))["org"]; ok {
			t.Errorf("a token after unbinding: org %v, want none", org)
		}
	})

	accepted(t, "a bystander's token after every revocation", bystander)
}
