package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

// tenant is a machine client bound to an organization: its token carries
// the organization's id in the claim org.
type tenant struct {
	org, token string
}

// bound returns the suite's two clients bound to two organizations, as
// `make run` makes them (ORG_A_*, ORG_B_*; creds.OrgA, creds.OrgB).
func bound(t *testing.T) (a, b tenant) {
	t.Helper()
	return tenant{creds.OrgA.ID, orgA(t)}, tenant{creds.OrgB.ID, orgB(t)}
}

// Organizations as tenants over actions, action documents, compliance and
// documents, through the gateway with real tokens: what B does not see is
// answered as if it did not exist; a read grant shows the record and
// refuses recording (403 not-permitted); an inspect grant records; a
// client bound to no organization sees every row.
func TestTenancyOfActionsThroughGateway(t *testing.T) {
	t.Parallel()
	a, b := bound(t)
	rw := readWrite(t)
	gw := gateway()
	call := func(status int, method, path, token string, body any, headers ...string) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, method, path, token, body, headers...), status)
	}
	typ := call(201, "POST", "/asset_types", a.token, map[string]any{"brand": unique("Tenancy"), "model": "T1"}).JSON()["id"].(string)
	asset := call(201, "POST", "/assets", a.token, map[string]any{"serial_number": unique("SN"), "asset_type_id": typ}).JSON()
	if asset["owner_organization_id"] != a.org {
		t.Fatalf("an asset a bound client creates is its organization's: %v", asset)
	}
	assetID := asset["id"].(string)
	actionBody := func() map[string]any {
		return map[string]any{"asset_id": assetID, "action_type": "expert_control", "performed_at": "2025-03-14",
			"status_ok": true, "status_finalized": true, "status_valid_through": "2026-03-14",
			"source_system": "tenancy-e2e", "source_reference": unique("ref")}
	}
	action := call(201, "POST", "/actions", a.token, actionBody()).JSON()["id"].(string)
	report := uploadThroughGateway(t, a.token, "report.pdf", "application/pdf", "%PDF-1.7 owner's report")
	call(201, "POST", "/actions/"+action+"/action_documents", a.token, map[string]any{"action_id": action,
		"document_id": report, "source_system": "tenancy-e2e", "source_reference": unique("link")})
	lone := uploadThroughGateway(t, a.token, "draft.pdf", "application/pdf", "%PDF-1.7 linked by nothing")

	listsAction := func(token string) bool {
		return slices.ContainsFunc(call(200, "GET", "/actions?asset_id="+assetID, token, nil).List(),
			func(it map[string]any) bool { return it["id"] == action })
	}
	complianceRows := func(token string) int {
		return len(call(200, "GET", "/compliance?asset_id="+assetID, token, nil).List())
	}
	eventually(t, "the owner's compliance rows of its asset", func() string {
		if n := complianceRows(a.token); n != 4 {
			return fmt.Sprintf("%d rows", n)
		}
		return ""
	})

	// B sees nothing of A's asset: as if it did not exist.
	call(404, "GET", "/actions/"+action, b.token, nil)
	call(404, "GET", "/actions/"+action+"/action_documents", b.token, nil)
	if listsAction(b.token) || complianceRows(b.token) != 0 {
		t.Error("B lists an action or compliance rows of an asset it does not see")
	}
	unseen := call(422, "POST", "/actions", b.token, actionBody())
	if !slices.Equal(unseen.Fields(), []string{"asset_id"}) {
		t.Errorf("recording on an unseen asset: %s, want a 422 on asset_id", unseen.Raw)
	}
	for _, path := range []string{"/documents/" + report, "/documents/" + report + "/file", "/documents/" + lone} {
		call(404, "GET", path, b.token, nil)
	}
	// A's other clients and clients bound to none see everything.
	call(200, "GET", "/actions/"+action, rw, nil)
	call(200, "GET", "/documents/"+lone, a.token, nil)

	// A read grant: B sees the record and the documents its actions link,
	// and records nothing.
	call(201, "POST", "/assets/"+assetID+"/grants", a.token, map[string]any{"organization_id": b.org, "role": "read"})
	got := call(200, "GET", "/actions/"+action, b.token, nil).JSON()
	if docs := got["action_documents"].([]any); len(docs) != 1 {
		t.Errorf("B's view of the action: %v", got)
	}
	if !listsAction(b.token) || complianceRows(b.token) != 4 {
		t.Error("B does not list the action or the compliance rows of an asset it holds a read grant on")
	}
	call(200, "GET", "/documents/"+report, b.token, nil)
	call(200, "GET", "/documents/"+report+"/file", b.token, nil)
	call(404, "GET", "/documents/"+lone, b.token, nil) // linked by nothing, uploaded by A
	refused := call(403, "POST", "/actions", b.token, actionBody()).JSON()
	if refused["type"] != "urn:asset-registry:problem:not-permitted" {
		t.Errorf("recording with a read grant: %v", refused)
	}

	// An inspect grant: B records, and links the documents it sees.
	call(200, "POST", "/assets/"+assetID+"/grants", a.token, map[string]any{"organization_id": b.org, "role": "inspect"})
	mine := call(201, "POST", "/actions", b.token, actionBody()).JSON()["id"].(string)
	theirs := uploadThroughGateway(t, b.token, "b.pdf", "application/pdf", "%PDF-1.7 B's report")
	call(201, "POST", "/actions/"+mine+"/action_documents", b.token, map[string]any{"action_id": mine,
		"document_id": theirs, "source_system": "tenancy-e2e", "source_reference": unique("link")})
	unseenDoc := call(422, "POST", "/actions/"+mine+"/action_documents", b.token, map[string]any{"action_id": mine,
		"document_id": lone, "source_system": "tenancy-e2e", "source_reference": unique("link")})
	if !slices.Equal(unseenDoc.Fields(), []string{"document_id"}) {
		t.Errorf("linking a document B does not see: %s", unseenDoc.Raw)
	}

	// The grant removed: in force for the next call.
	call(204, "DELETE", "/assets/"+assetID+"/grants/"+b.org, a.token, nil)
	call(404, "GET", "/actions/"+mine, b.token, nil)
	call(404, "GET", "/documents/"+report, b.token, nil)
	call(200, "GET", "/documents/"+theirs, b.token, nil) // B's own upload
	if listsAction(b.token) || complianceRows(b.token) != 0 {
		t.Error("B still lists the record of an asset whose grant was removed")
	}
}
