package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/testkit"
)

// The tenancy matrix: every operation the gateway documents says how the
// rule of "Organizations as tenants" applies to it, and every operation
// that answers for an asset's record is called as each kind of caller.
// An operation added without a line here fails TestTenancyMatrixCoversEveryOperation,
// so a new path cannot forget the rule silently.

// tenancy is how an operation stands to the tenancy rule.
type tenancy string

const (
	// sharedByAll: organizations, people, their links, asset types, plans,
	// action types, the log's public parts: every reader sees them.
	sharedByAll tenancy = "shared by every reader"
	// callersOwn: the caller's own rows only (webhook subscriptions, a
	// document it uploads), under the ownership rule already.
	callersOwn tenancy = "the caller's own"
	// readsRecord: answers for one asset's record by id: 404 to a caller
	// that does not see the asset, as if it did not exist.
	readsRecord tenancy = "reads an asset's record"
	// listsRecord: lists or finds over assets' records: what the caller
	// does not see is absent.
	listsRecord tenancy = "lists assets' records"
	// recordsOn: records on an asset (an action, a meter reading, a link):
	// 422 on the reference (or 404 on the path) when unseen, 403
	// not-permitted through a read grant.
	recordsOn tenancy = "records on an asset"
	// managesAsset: grants, transfers, owners, changes and deletes: the
	// owner's clients (or the creator) and an admin; 404 when unseen.
	managesAsset tenancy = "manages an asset"
	// ownTransfers: a transfer is seen by both organizations' clients.
	ownTransfers tenancy = "a transfer's two sides"
	// capability: answers whoever holds the link (a passport link), as
	// the asset's passport was when the link was made to be handed out.
	capability tenancy = "whoever holds the link"
)

// tenancyOf classifies every operation ("METHOD /path" as the OpenAPI
// document spells it).
var tenancyOf = map[string]tenancy{
	"GET /organizations": sharedByAll, "POST /organizations": sharedByAll, "GET /organizations/{id}": sharedByAll,
	"PATCH /organizations/{id}": sharedByAll, "DELETE /organizations/{id}": sharedByAll, "GET /organizations/{id}/people": sharedByAll,
	"POST /organizations/find": sharedByAll, "POST /organization/find": sharedByAll, "GET /organizations/{id}/history": sharedByAll,
	"GET /people": sharedByAll, "POST /people": sharedByAll, "GET /people/{id}": sharedByAll, "PATCH /people/{id}": sharedByAll,
	"DELETE /people/{id}": sharedByAll, "GET /people/{id}/organizations": sharedByAll, "POST /people/find": sharedByAll,
	"POST /people/{person_id}/organizations/{organization_id}": sharedByAll, "DELETE /people/{person_id}/organizations/{organization_id}": sharedByAll,
	"GET /people/{id}/history": sharedByAll,
	"GET /asset_types":         sharedByAll, "POST /asset_types": sharedByAll, "GET /asset_types/by_brand_and_model": sharedByAll,
	"GET /asset_types/{id}": sharedByAll, "PATCH /asset_types/{id}": sharedByAll, "DELETE /asset_types/{id}": sharedByAll,
	"GET /asset_types/{id}/documents": sharedByAll, "POST /asset_types/{id}/documents": sharedByAll,
	"DELETE /asset_types/{id}/documents/{document_id}": sharedByAll, "PUT /asset_types/{id}/thumbnail": sharedByAll,
	"GET /asset_types/{id}/history": sharedByAll,
	"GET /inspection_plans":         sharedByAll, "POST /inspection_plans": sharedByAll, "GET /inspection_plans/presets": sharedByAll,
	"GET /inspection_plans/{id}": sharedByAll, "PATCH /inspection_plans/{id}": sharedByAll, "DELETE /inspection_plans/{id}": sharedByAll,
	"GET /action_types": sharedByAll, "POST /action_types": sharedByAll,
	"GET /log/checkpoint": sharedByAll, "GET /log/keys": sharedByAll, "GET /log/consistency": sharedByAll,
	// Tiles hold hashes only; the entries (event bytes) stay behind tokens.
	"GET /log/tile/{tile}": sharedByAll,

	"POST /documents": callersOwn, "GET /webhooks": callersOwn, "POST /webhooks": callersOwn, "GET /webhooks/{id}": callersOwn,
	"PATCH /webhooks/{id}": callersOwn, "DELETE /webhooks/{id}": callersOwn, "POST /webhooks/{id}/rotate-secret": callersOwn,
	"GET /webhooks/{id}/deliveries": callersOwn, "POST /webhooks/{id}/deliveries/{delivery_id}/retry": callersOwn,
	"POST /assets": callersOwn, "POST /assets/batch": callersOwn,

	"GET /assets/{id}": readsRecord, "GET /assets/{id}/history": readsRecord, "GET /assets/{id}/passport": readsRecord,
	"GET /actions/{id}": readsRecord, "GET /actions/{id}/history": readsRecord, "GET /actions/{action_id}/action_documents": readsRecord,
	"GET /documents/{id}": readsRecord, "GET /documents/{id}/file": readsRecord, "GET /documents/{id}/action_documents": readsRecord,
	"GET /documents/{id}/history": readsRecord, "GET /log/inclusion": readsRecord, "GET /log/entry": readsRecord,
	"GET /assets/{id}/grants": readsRecord, "GET /assets/{id}/meter_readings": readsRecord, "GET /assets/{id}/passport_links": readsRecord,
	"GET /assets/{id}/meter_readings/{reading_id}": readsRecord, "GET /passports/{token}": capability,

	"GET /assets": listsRecord, "POST /assets/find": listsRecord, "GET /actions": listsRecord, "POST /actions/find": listsRecord,
	"GET /compliance": listsRecord, "GET /events": listsRecord, "GET /documents": listsRecord,

	"POST /actions": recordsOn, "POST /actions/batch": recordsOn, "POST /actions/{action_id}/action_documents": recordsOn,
	"POST /actions/action_documents/batch": recordsOn, "POST /assets/{id}/meter_readings": recordsOn,
	"POST /assets/{id}/meter_readings/batch": recordsOn, "POST /assets/{id}/passport_links": recordsOn,

	"PATCH /assets/{id}": managesAsset, "DELETE /assets/{id}": managesAsset, "PATCH /actions/{id}": managesAsset,
	"DELETE /actions/{id}": managesAsset, "PATCH /actions/{action_id}/action_documents/{id}": managesAsset,
	"DELETE /actions/{action_id}/action_documents/{id}": managesAsset, "DELETE /documents/{id}": managesAsset,
	"POST /assets/{id}/grants": managesAsset, "DELETE /assets/{id}/grants/{organization_id}": managesAsset,
	"POST /assets/{id}/transfers": managesAsset, "POST /assets/owners": managesAsset,
	"DELETE /assets/{id}/passport_links/{link_id}": managesAsset,
	// Each item as its single PATCH: the matrix calls both.
	"PATCH /assets/batch": managesAsset, "PATCH /actions/batch": managesAsset,

	"GET /transfers": ownTransfers, "GET /transfers/{id}": ownTransfers, "POST /transfers/{id}/accept": ownTransfers,
	"POST /transfers/{id}/reject": ownTransfers, "POST /transfers/{id}/cancel": ownTransfers,
}

// TestTenancyMatrixCoversEveryOperation: each operation of the gateway's
// document is classified above.
func TestTenancyMatrixCoversEveryOperation(t *testing.T) {
	t.Parallel()
	doc := testkit.Expect(t, gateway().Do(t, "GET", "/openapi.json", "", nil), 200).JSON()
	paths, _ := doc["paths"].(map[string]any)
	if len(paths) == 0 {
		t.Fatal("the gateway's document has no paths")
	}
	var missing []string
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for method := range ops {
			m := strings.ToUpper(method)
			if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, m) {
				continue
			}
			if _, ok := tenancyOf[m+" "+path]; !ok {
				missing = append(missing, m+" "+path)
			}
		}
	}
	sort.Strings(missing)
	for _, op := range missing {
		t.Errorf("%s: not classified in tenancyOf; say how the tenancy rule applies to it, and call it in TestTenancyMatrix if it answers for an asset's record", op)
	}
}

// tenancyFixture is organization A's asset with a record: an action, a
// document linked to it.
type tenancyFixture struct {
	asset, assetType, serial, brand, model string
	action, actionDocument, document       string
	documentSHA256                         string
}

func newTenancyFixture(t *testing.T, owner string) tenancyFixture {
	t.Helper()
	gw := gateway()
	f := tenancyFixture{brand: unique("Tenant"), model: "T1", serial: unique("SN")}
	f.assetType = testkit.Expect(t, gw.Do(t, "POST", "/asset_types", owner, map[string]any{"brand": f.brand, "model": f.model}), 201).JSON()["id"].(string)
	asset := testkit.Expect(t, gw.Do(t, "POST", "/assets", owner, map[string]any{"serial_number": f.serial, "asset_type_id": f.assetType}), 201).JSON()
	f.asset = asset["id"].(string)
	if asset["owner_organization_id"] != creds.OrgA.ID {
		t.Fatalf("an asset a bound client creates is owned by its organization: %v, want %s", asset["owner_organization_id"], creds.OrgA.ID)
	}
	f.action = testkit.Expect(t, gw.Do(t, "POST", "/actions", owner, map[string]any{"asset_id": f.asset, "action_type": "expert_control",
		"performed_at": "2025-03-01", "status_ok": true}), 201).JSON()["id"].(string)
	content := "%PDF-1.7 " + unique("tenancy")
	f.document = uploadThroughGateway(t, owner, "report.pdf", "application/pdf", content)
	sum := sha256.Sum256([]byte(content))
	f.documentSHA256 = hex.EncodeToString(sum[:])
	f.actionDocument = testkit.Expect(t, gw.Do(t, "POST", "/actions/"+f.action+"/action_documents", owner, map[string]any{"action_id": f.action,
		"document_id": f.document, "source_system": "matrix", "source_reference": unique("ref")}), 201).JSON()["id"].(string)
	// The record's history, as_of reads, passport and compliance rows come
	// from the change feed, a moment after the writes.
	eventually(t, "the fixture's record in the log", func() string {
		if r := gw.Do(t, "GET", "/assets/"+f.asset+"/passport", owner, nil); r.Status != 200 {
			return fmt.Sprintf("passport: %d", r.Status)
		}
		if n := len(gw.Do(t, "GET", "/actions/"+f.action+"/history", owner, nil).List()); n == 0 {
			return "no history of the action"
		}
		if n := len(gw.Do(t, "GET", "/compliance?asset_id="+f.asset, owner, nil).List()); n == 0 {
			return "no compliance rows"
		}
		return ""
	})
	return f
}

// reads are the calls of readsRecord operations on the fixture.
func (f tenancyFixture) reads() map[string]string {
	asOf := url.QueryEscape(time.Now().UTC().Add(time.Minute).Format(time.RFC3339))
	return map[string]string{
		"GET /assets/{id}":                          "/assets/" + f.asset,
		"GET /assets/{id} as_of":                    "/assets/" + f.asset + "?as_of=" + asOf,
		"GET /assets/{id}/history":                  "/assets/" + f.asset + "/history",
		"GET /assets/{id}/passport":                 "/assets/" + f.asset + "/passport",
		"GET /actions/{id}":                         "/actions/" + f.action,
		"GET /actions/{id} as_of":                   "/actions/" + f.action + "?as_of=" + asOf,
		"GET /actions/{id}/history":                 "/actions/" + f.action + "/history",
		"GET /actions/{action_id}/action_documents": "/actions/" + f.action + "/action_documents",
		"GET /documents/{id}":                       "/documents/" + f.document,
		"GET /documents/{id}/file":                  "/documents/" + f.document + "/file",
		"GET /documents/{id}/action_documents":      "/documents/" + f.document + "/action_documents",
	}
}

// lists are the calls of listsRecord operations that select the
// fixture's record, each with whether an answer holds it.
func (f tenancyFixture) lists() map[string]struct {
	method, path string
	body         any
	holds        func(testkit.Response) bool
} {
	holdsID := func(id string) func(testkit.Response) bool {
		return func(r testkit.Response) bool {
			for _, row := range r.List() {
				if row["id"] == id {
					return true
				}
			}
			return false
		}
	}
	holdsAsset := func(r testkit.Response) bool {
		for _, row := range r.List() {
			if row["asset_id"] == f.asset {
				return true
			}
		}
		return false
	}
	type call = struct {
		method, path string
		body         any
		holds        func(testkit.Response) bool
	}
	return map[string]call{
		"GET /assets":       {"GET", "/assets?serial_number=" + url.QueryEscape(f.serial), nil, holdsID(f.asset)},
		"GET /assets, type": {"GET", "/assets?asset_type_id=" + f.assetType, nil, holdsID(f.asset)},
		"POST /assets/find": {"POST", "/assets/find?create=false", map[string]any{"serial_number": f.serial, "brand": f.brand, "model": f.model},
			func(r testkit.Response) bool { return r.Status == 200 && r.JSON()["id"] == f.asset }},
		"GET /actions":    {"GET", "/actions?asset_id=" + f.asset, nil, holdsID(f.action)},
		"GET /compliance": {"GET", "/compliance?asset_id=" + f.asset, nil, holdsAsset},
		"GET /documents":  {"GET", "/documents?sha256=" + f.documentSHA256, nil, holdsID(f.document)},
	}
}

// TestTenancyMatrix calls every operation that answers for an asset's
// record as the owner's client, a client of an organization without a
// grant, then with a read grant, then with an inspect grant (the same
// organization, so each grant is also seen in force for the next call),
// a client bound to no organization and an admin.
func TestTenancyMatrix(t *testing.T) {
	t.Parallel()
	gw := gateway()
	owner, guest, unbound, root := orgA(t), orgB(t), readWrite(t), admin(t)
	f := newTenancyFixture(t, owner)
	grantsPath := "/assets/" + f.asset + "/grants"

	type role struct {
		name  string
		token string
		sees  bool
		// records: the answer to recording an action on the asset.
		records int
		// manages: may change the asset (PATCH) and its grants.
		manages bool
	}
	phases := []struct {
		grant string // the guest organization's grant before the phase; "" none
		roles []role
	}{
		{"", []role{
			{"owner", owner, true, 201, true},
			{"another organization", guest, false, 422, false},
			{"unbound", unbound, true, 201, false},
			{"admin", root, true, 201, true},
		}},
		{"read", []role{{"read grantee", guest, true, 403, false}}},
		{"inspect", []role{{"inspect grantee", guest, true, 201, false}}},
		{"removed", []role{{"grant removed", guest, false, 422, false}}},
	}
	for _, phase := range phases {
		switch phase.grant {
		case "read", "inspect":
			if r := gw.Do(t, "POST", grantsPath, owner, map[string]any{"organization_id": creds.OrgB.ID, "role": phase.grant}); r.Status != 200 && r.Status != 201 {
				t.Fatalf("the owner grants %s: %d %s", phase.grant, r.Status, r.Raw)
			}
		case "removed":
			testkit.Expect(t, gw.Do(t, "DELETE", grantsPath+"/"+creds.OrgB.ID, owner, nil), 204)
		}
		for _, r := range phase.roles {
			t.Run(r.name, func(t *testing.T) {
				for name, path := range f.reads() {
					want := 200
					if !r.sees {
						want = 404
					}
					if got := gw.Do(t, "GET", path, r.token, nil); got.Status != want {
						t.Errorf("%s (%s): %d, want %d: %s", name, path, got.Status, want, got.Raw)
					}
				}
				for name, c := range f.lists() {
					got := gw.Do(t, c.method, c.path, r.token, c.body)
					if got.Status >= 500 {
						t.Errorf("%s: %d %s", name, got.Status, got.Raw)
						continue
					}
					if held := got.Status < 300 && c.holds(got); held != r.sees {
						t.Errorf("%s (%s): holds the record = %v, want %v: %d %s", name, c.path, held, r.sees, got.Status, got.Raw)
					}
				}
				recorded := gw.Do(t, "POST", "/actions", r.token, map[string]any{"asset_id": f.asset, "action_type": "maintenance", "performed_at": "2025-04-01"})
				if recorded.Status != r.records {
					t.Errorf("POST /actions on the asset: %d, want %d: %s", recorded.Status, r.records, recorded.Raw)
				}
				switch r.records {
				case 422:
					if !slices.Contains(recorded.Fields(), "asset_id") {
						t.Errorf("POST /actions on an unseen asset: the 422 names %v, want asset_id", recorded.Fields())
					}
				case 403:
					if typ, _ := recorded.JSON()["type"].(string); !strings.HasSuffix(typ, "not-permitted") {
						t.Errorf("POST /actions through a read grant: type %q, want one ending in not-permitted", typ)
					}
				}
				patched := gw.Do(t, "PATCH", "/assets/"+f.asset, r.token, map[string]any{})
				switch {
				case !r.sees && patched.Status != 404:
					t.Errorf("PATCH of an unseen asset: %d, want 404: %s", patched.Status, patched.Raw)
				case r.sees && r.manages && patched.Status != 200:
					t.Errorf("PATCH by the owner's client or an admin: %d, want 200: %s", patched.Status, patched.Raw)
				case r.sees && !r.manages && patched.Status != 403:
					t.Errorf("PATCH by a client neither creator nor of the owner organization: %d, want 403: %s", patched.Status, patched.Raw)
				}
				// A batch of updates refuses each item as its single PATCH
				// would (the owner's action: only the owner's client and an
				// admin change it), and answers 200 for the batch.
				for path, id := range map[string]string{"/assets/batch": f.asset, "/actions/batch": f.action} {
					want := 404
					if r.sees {
						want = 403
						if r.manages {
							want = 200
						}
					}
					got := gw.Do(t, "PATCH", path, r.token, map[string]any{"items": []any{map[string]any{"id": id, "patch": map[string]any{}}}})
					if items := got.List(); got.Status != 200 || len(items) != 1 || items[0]["status"] != float64(want) {
						t.Errorf("PATCH %s of the record: %d %s, want one item answered %d", path, got.Status, got.Raw, want)
					}
				}
				grant := gw.Do(t, "POST", grantsPath, r.token, map[string]any{"organization_id": matrixThirdOrganization(t), "role": "read"})
				switch {
				case !r.sees && grant.Status != 404:
					t.Errorf("a grant on an unseen asset: %d, want 404: %s", grant.Status, grant.Raw)
				case r.sees && !r.manages && grant.Status != 403:
					t.Errorf("a grant by a client that does not manage the asset: %d, want 403: %s", grant.Status, grant.Raw)
				case r.manages && grant.Status != 200 && grant.Status != 201:
					t.Errorf("a grant by the owner's client or an admin: %d, want 200 or 201: %s", grant.Status, grant.Raw)
				}
			})
		}
	}
}

var thirdOrganization string

// matrixThirdOrganization is an organization no client is bound to: what
// the matrix's grants name, so they never change the guest's role.
func matrixThirdOrganization(t *testing.T) string {
	t.Helper()
	if thirdOrganization == "" {
		thirdOrganization = testkit.Expect(t, gateway().Do(t, "POST", "/organizations", readWrite(t), map[string]any{"name": unique("Third"),
			"registration_number": unique("THIRD"), "organization_type": "private", "country": "de"}), 201).JSON()["id"].(string)
	}
	return thirdOrganization
}
