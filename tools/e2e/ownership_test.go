package e2e

import (
	"strings"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

func other(t *testing.T) string { return token(t, creds.OtherClientID, creds.OtherClientSecret) }
func admin(t *testing.T) string { return token(t, creds.AdminClientID, creds.AdminClientSecret) }

// notOwner expects the 403 not-owner problem.
func notOwner(t *testing.T, r testkit.Response) {
	t.Helper()
	testkit.Expect(t, r, 403)
	if typ, _ := r.JSON()["type"].(string); !strings.HasSuffix(typ, "not-owner") {
		t.Errorf("type = %q, want one ending in not-owner", typ)
	}
}

// A second integration can change and delete nothing the first created,
// rows and their parts alike, and nothing changes when it tries; it may
// reference them; an admin may change anything.
func TestOneIntegrationCannotTouchAnothersData(t *testing.T) {
	t.Parallel()
	rw, them, root, ro := readWrite(t), other(t), admin(t), readOnly(t)
	gw := gateway()

	org := "/organizations/" + testkit.Expect(t, gw.Do(t, "POST", "/organizations", rw, map[string]any{"name": unique("Owned"),
		"registration_number": unique("R"), "organization_type": "private", "country": "no"}), 201).JSON()["id"].(string)
	person := "/people/" + testkit.Expect(t, gw.Do(t, "POST", "/people", rw, map[string]any{"first_name": "Ada",
		"last_name": unique("Owner"), "date_of_birth": "1980-01-02"}), 201).JSON()["id"].(string)
	link := person + "/organizations/" + strings.TrimPrefix(org, "/organizations/") + "?relation_type=employee"
	testkit.Expect(t, gw.Do(t, "POST", link, rw, nil), 201)
	typ := testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": unique("Own"), "model": "M"}), 201).JSON()["id"].(string)
	asset := newAsset(t, rw)
	document := uploadThroughGateway(t, rw, "report.pdf", "application/pdf", "%PDF-1.7 "+unique("own"))
	action := testkit.Expect(t, gw.Do(t, "POST", "/actions", rw, map[string]any{"asset_id": strings.TrimPrefix(asset, "/assets/"),
		"action_type": "repair", "performed_at": "2025-01-01"}), 201).JSON()["id"].(string)
	actionDocument := "/actions/" + action + "/action_documents/" + testkit.Expect(t, gw.Do(t, "POST", "/actions/"+action+"/action_documents", rw,
		map[string]any{"action_id": action, "document_id": document, "source_system": "own", "source_reference": unique("ref")}), 201).JSON()["id"].(string)

	before := map[string]string{}
	for _, path := range []string{org, person, "/asset_types/" + typ, asset, "/actions/" + action, "/documents/" + document} {
		before[path] = string(testkit.Expect(t, gw.Do(t, "GET", path, ro, nil), 200).Raw)
	}

	// Every change and delete by the second integration is a 403 not-owner.
	for _, c := range []struct{ method, path string }{
		{"PATCH", org}, {"DELETE", org},
		{"PATCH", person}, {"DELETE", person},
		{"DELETE", link},
		{"PATCH", "/asset_types/" + typ}, {"DELETE", "/asset_types/" + typ},
		{"POST", "/asset_types/" + typ + "/documents"}, {"PUT", "/asset_types/" + typ + "/thumbnail"},
		{"PATCH", asset}, {"DELETE", asset},
		{"PATCH", "/actions/" + action}, {"DELETE", "/actions/" + action},
		{"POST", "/actions/" + action + "/action_documents"},
		{"PATCH", actionDocument}, {"DELETE", actionDocument},
		{"DELETE", "/documents/" + document},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			var body any
			switch {
			case c.method == "PATCH":
				body = map[string]any{"source_system": "other"}
				if !strings.HasPrefix(c.path, "/actions/") {
					body = map[string]any{}
				}
			case strings.HasSuffix(c.path, "/documents") || strings.HasSuffix(c.path, "/thumbnail"):
				body = map[string]any{"document_id": document}
			case strings.HasSuffix(c.path, "/action_documents"):
				body = map[string]any{"action_id": action, "document_id": document, "source_system": "other", "source_reference": unique("x")}
			}
			notOwner(t, gw.Do(t, c.method, c.path, them, body))
		})
	}
	for path, was := range before {
		if now := string(testkit.Expect(t, gw.Do(t, "GET", path, ro, nil), 200).Raw); now != was {
			t.Errorf("%s changed after the refused calls:\n%s\n%s", path, was, now)
		}
	}

	// References are not ownership: an asset of someone else's type, an
	// action on someone else's asset, a link between someone else's
	// person and organization.
	testkit.Expect(t, gw.Do(t, "POST", "/assets", them, map[string]any{"serial_number": unique("SN"), "asset_type_id": typ}), 201)
	theirs := testkit.Expect(t, gw.Do(t, "POST", "/actions", them, map[string]any{"asset_id": strings.TrimPrefix(asset, "/assets/"),
		"action_type": "maintenance", "performed_at": "2025-02-01"}), 201).JSON()["id"].(string)
	theirLink := person + "/organizations/" + strings.TrimPrefix(org, "/organizations/") + "?relation_type=contractor"
	testkit.Expect(t, gw.Do(t, "POST", theirLink, them, nil), 201)
	// ... and ownership goes both ways.
	notOwner(t, gw.Do(t, "DELETE", "/actions/"+theirs, rw, nil))
	notOwner(t, gw.Do(t, "DELETE", theirLink, rw, nil))
	testkit.Expect(t, gw.Do(t, "DELETE", theirLink, them, nil), 204)

	// The owner and an admin may.
	testkit.Expect(t, gw.Do(t, "PATCH", org, rw, map[string]any{"name": unique("Renamed")}), 200)
	testkit.Expect(t, gw.Do(t, "PATCH", org, root, map[string]any{"name": unique("Admin")}), 200)
	testkit.Expect(t, gw.Do(t, "DELETE", "/actions/"+theirs, root, nil), 204)
	testkit.Expect(t, gw.Do(t, "DELETE", actionDocument, rw, nil), 204)
}

// registry:admin comes only with a client that holds it.
func TestAdminScopeOnlyForItsHolder(t *testing.T) {
	t.Parallel()
	form := clientForm(creds.ClientID, creds.ClientSecret)
	form.Set("scope", "registry:admin")
	if status, body := tokenResponse(t, form); status != 400 || body["error"] != "invalid_scope" {
		t.Errorf("a client without registry:admin asking for it: %d %v", status, body)
	}
	status, body := tokenResponse(t, clientForm(creds.AdminClientID, creds.AdminClientSecret))
	if status != 200 || !strings.Contains(body["scope"].(string), "registry:admin") {
		t.Errorf("the admin client's token: %d %v", status, body)
	}
	if status, body := tokenResponse(t, clientForm(creds.OtherClientID, creds.OtherClientSecret)); status != 200 ||
		strings.Contains(body["scope"].(string), "registry:admin") {
		t.Errorf("the second integration's token: %d %v", status, body)
	}
}
