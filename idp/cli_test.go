package idp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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

	idp(t, 1, "client", "delete", "--id", "cli-client")                                                // no such client
	idp(t, 1, "client", "create", "--id", "x", "--scopes", "registry:read", "--resource", "https://r") // invalid id
	idp(t, 2, "client", "delete")                                                                      // --id missing
	idp(t, 2, "client", "frobnicate")
	idp(t, 2, "frobnicate")
}
