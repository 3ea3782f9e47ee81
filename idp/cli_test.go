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
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(raw), "### Rotate a machine client's secret")
	section, _, _ = strings.Cut(section, "\n### ")
	var command []string
	for line := range strings.SplitSeq(section, "\n") {
		if _, args, ok := strings.Cut(line, "/app "); ok && strings.Contains(args, "--window 0") {
			command = strings.Fields(args)
		}
	}
	if !strings.Contains(strings.ToLower(section), "leak") || command == nil {
		t.Fatal("the runbook's rotation section has no command for a leaked secret with --window 0")
	}

	t.Setenv("DATABASE_URL", testkit.PostgresURL(t))
	t.Setenv("DATABASE_SCHEMA", testkit.NewDatabaseSchema(t))
	pool, err := store.OpenAndMigrate(t.Context(), store.Config{URL: os.Getenv("DATABASE_URL"), Schema: os.Getenv("DATABASE_SCHEMA")}, Migrations(), func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	clients := NewClients(pool)
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
