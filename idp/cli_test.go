package idp

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestCLI(t *testing.T) {
	t.Setenv("DATABASE_URL", testkit.PostgresURL(t))
	t.Setenv("DATABASE_SCHEMA", testkit.NewDatabaseSchema(t))
	t.Setenv("ID", "from-the-environment") // command options must not read it

	idp := func(t *testing.T, wantCode int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(args, &stdout, &stderr); code != wantCode {
			t.Fatalf("idp %s: exit %d, want %d; stderr: %s", strings.Join(args, " "), code, wantCode, stderr.String())
		}
		return stdout.String()
	}
	credentials := func(t *testing.T, out string) credentials {
		t.Helper()
		var c credentials
		if err := json.Unmarshal([]byte(out), &c); err != nil || c.ClientSecret == "" {
			t.Fatalf("output %q is not {client_id, client_secret}: %v", out, err)
		}
		return c
	}

	idp(t, 0, "migrate")
	created := credentials(t, idp(t, 0, "client", "create", "--id", "cli-client", "--scopes", "registry:read,registry:write",
		"--resource", "https://registry.example.test/", "--resource", "https://other.example.test"))
	if created.ClientID != "cli-client" {
		t.Errorf("created %+v", created)
	}
	rotated := credentials(t, idp(t, 0, "client", "rotate", "--id", "cli-client", "--window", "1h"))
	if rotated.ClientSecret == created.ClientSecret {
		t.Error("rotate printed the old secret")
	}

	var list []Client
	if err := json.Unmarshal([]byte(idp(t, 0, "client", "list")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "cli-client" || len(list[0].Secrets) != 2 ||
		strings.Join(list[0].Resources, " ") != "https://registry.example.test https://other.example.test" {
		t.Errorf("list: %+v", list)
	}

	// Bound to an organization at creation, bound to another and to none
	// afterwards; the listing shows it, and each change revokes tokens.
	const orgA, orgB = "0190A6E2-8C3B-7D4E-9F00-1A2B3C4D5E6F", "0190a6e2-8c3b-7d4e-9f00-000000000002"
	credentials(t, idp(t, 0, "client", "create", "--id", "cli-bound", "--scopes", "registry:read,registry:write",
		"--resource", "https://registry.example.test", "--organization", orgA))
	organizationOf := func(t *testing.T, id string) any {
		t.Helper()
		var listed []map[string]any
		if err := json.Unmarshal([]byte(idp(t, 0, "client", "list")), &listed); err != nil {
			t.Fatal(err)
		}
		for _, c := range listed {
			if c["client_id"] == id {
				org, shown := c["organization_id"]
				if !shown {
					t.Errorf("the listing of %s does not show organization_id: %v", id, c)
				}
				return org
			}
		}
		t.Fatalf("%s is not listed", id)
		return nil
	}
	if got := organizationOf(t, "cli-bound"); got != strings.ToLower(orgA) {
		t.Errorf("created with --organization: organization_id %v, want %s in lower case", got, orgA)
	}
	if got := organizationOf(t, "cli-client"); got != nil {
		t.Errorf("created without --organization: organization_id %v, want null", got)
	}
	type binding struct {
		ClientID       string  `json:"client_id"`
		OrganizationID *string `json:"organization_id"`
		TokensRevoked  bool    `json:"tokens_revoked"`
	}
	bind := func(t *testing.T, args ...string) binding {
		t.Helper()
		var b binding
		if err := json.Unmarshal([]byte(idp(t, 0, append([]string{"client"}, args...)...)), &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	if b := bind(t, "bind", "--id", "cli-bound", "--organization", orgB); b.ClientID != "cli-bound" || b.OrganizationID == nil || *b.OrganizationID != orgB || !b.TokensRevoked {
		t.Errorf("bind to another organization: %+v, want it bound to %s and its tokens revoked", b, orgB)
	}
	if b := bind(t, "bind", "--id", "cli-bound", "--organization", orgB); !(b.OrganizationID != nil && *b.OrganizationID == orgB) || b.TokensRevoked {
		t.Errorf("bind to the organization it has: %+v, want nothing revoked", b)
	}
	if got := organizationOf(t, "cli-bound"); got != orgB {
		t.Errorf("after bind: organization_id %v, want %s", got, orgB)
	}
	if b := bind(t, "unbind", "--id", "cli-bound"); b.OrganizationID != nil || !b.TokensRevoked {
		t.Errorf("unbind: %+v, want bound to none and the tokens revoked", b)
	}
	if got := organizationOf(t, "cli-bound"); got != nil {
		t.Errorf("after unbind: organization_id %v, want null", got)
	}
	idp(t, 2, "client", "bind", "--id", "cli-bound")                                 // --organization missing
	idp(t, 1, "client", "bind", "--id", "cli-bound", "--organization", "acme")       // not an organization id
	idp(t, 1, "client", "bind", "--id", "nobody", "--organization", orgA)            // no such client
	idp(t, 1, "client", "create", "--id", "cli-badorg", "--scopes", "registry:read", // not an organization id
		"--resource", "https://registry.example.test", "--organization", "{"+orgA+"}")
	idp(t, 0, "client", "delete", "--id", "cli-bound")

	idp(t, 0, "client", "delete", "--id", "cli-client")
	if out := idp(t, 0, "client", "list"); strings.TrimSpace(out) != "[]" {
		t.Errorf("list after delete: %s", out)
	}

	idp(t, 1, "client", "delete", "--id", "cli-client") // no such client
	// A deleted client's id is not handed out again, and the operator is
	// told why.
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"client", "create", "--id", "cli-client", "--scopes", "registry:read", "--resource", "https://registry.example.test"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "cli-client was deleted on") || !strings.Contains(stderr.String(), "choose another id") {
		t.Errorf("create under a deleted id: exit %d, stderr %q; want 1 and why", code, stderr.String())
	}
	idp(t, 1, "client", "create", "--id", "x", "--scopes", "registry:read", "--resource", "https://r") // invalid id
	idp(t, 2, "client", "delete")                                                                      // --id missing
	idp(t, 2, "client", "frobnicate")
	idp(t, 2, "frobnicate")
}

// The runbook's rotation section tells an operator how to retire a leaked
// secret at once, and its command does: the secret it replaces stops
// working when the command returns.
func TestRunbookRetiresALeakedSecretAtOnce(t *testing.T) {
	section, command := runbookCommand(t, "### Rotate a machine client's secret", func(args string) bool { return strings.Contains(args, "--window 0") })
	if !strings.Contains(strings.ToLower(section), "leak") || command == nil {
		t.Fatal("the runbook's rotation section has no command for a leaked secret with --window 0")
	}
	clients := runbookClients(t)
	id := command[slices.Index(command, "--id")+1]
	leaked, err := clients.CreateClient(t.Context(), id, []string{ScopeRead}, []string{"https://registry.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(command, &stdout, &stderr); code != 0 {
		t.Fatalf("idp %s: exit %d: %s", strings.Join(command, " "), code, stderr.String())
	}
	if ok, err := clients.CheckSecret(t.Context(), id, leaked); ok || err != nil {
		t.Errorf("the leaked secret after the runbook's command: %v, %v; want it refused at once", ok, err)
	}
}

// The runbook's binding section gives commands an operator can paste: its
// bind command binds the client it names and revokes its earlier tokens.
func TestRunbookBindsAClient(t *testing.T) {
	_, command := runbookCommand(t, "### Bind a machine client to an organization", func(args string) bool { return strings.HasPrefix(args, "client bind ") })
	if command == nil {
		t.Fatal("the runbook's binding section has no `client bind` command")
	}
	clients := runbookClients(t)
	id, org := command[slices.Index(command, "--id")+1], command[slices.Index(command, "--organization")+1]
	if _, err := clients.CreateClient(t.Context(), id, []string{ScopeRead, ScopeWrite}, []string{"https://registry.example.test"}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(command, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"tokens_revoked": true`) {
		t.Fatalf("idp %s: exit %d: %s%s", strings.Join(command, " "), code, stdout.String(), stderr.String())
	}
	list, err := clients.ListClients(t.Context())
	if err != nil || len(list) != 1 || list[0].OrganizationID == nil || *list[0].OrganizationID != org {
		t.Errorf("after the runbook's command: %+v, %v; want %s bound to %s", list, err, id, org)
	}
}

// runbookCommand is the docs/operations.md section under heading, and the
// last idp command in it (what follows "/app ", its continued lines
// joined) whose arguments match.
func runbookCommand(t *testing.T, heading string, match func(args string) bool) (string, []string) {
	t.Helper()
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(raw), heading)
	section, _, _ = strings.Cut(section, "\n### ")
	var command []string
	for line := range strings.SplitSeq(strings.ReplaceAll(section, "\\\n", " "), "\n") {
		if _, args, ok := strings.Cut(line, "/app "); ok && match(args) {
			command = strings.Fields(args)
		}
	}
	return section, command
}

// runbookClients is the admin API over a schema of its own, which the
// command run by Main uses too (DATABASE_URL, DATABASE_SCHEMA).
func runbookClients(t *testing.T) *Clients {
	t.Helper()
	t.Setenv("DATABASE_URL", testkit.PostgresURL(t))
	t.Setenv("DATABASE_SCHEMA", testkit.NewDatabaseSchema(t))
	pool, err := store.OpenAndMigrate(t.Context(), store.Config{URL: os.Getenv("DATABASE_URL"), Schema: os.Getenv("DATABASE_SCHEMA")}, Migrations(), func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return NewClients(pool)
}
