package assets

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// tenants is a running assets service with three organizations at the
// parties stand-in and clients bound to them: a and a2 to A, b to B, c to
// C (each a read-write token carrying the organization claim).
type tenants struct {
	*servicetest.Service
	A, B, C     string
	a, a2, b, c string
	typeID      string
}

func newTenants(t *testing.T) tenants {
	s := servicetest.Start(t, Spec())
	tn := tenants{Service: s}
	orgs := make([]string, 3)
	for i := range orgs {
		id := uuid.New()
		s.StandIn("parties").Add("organization", id, nil)
		orgs[i] = id.String()
	}
	tn.A, tn.B, tn.C = orgs[0], orgs[1], orgs[2]
	tn.a, tn.a2 = bound(t, s, "client-a", tn.A), bound(t, s, "client-a2", tn.A)
	tn.b, tn.c = bound(t, s, "client-b", tn.B), bound(t, s, "client-c", tn.C)
	tn.typeID = s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	return tn
}

// bound is a read-write token of client sub bound to organization org.
func bound(t *testing.T, s *servicetest.Service, sub, org string) string {
	claims := s.Issuer.Claims(sub, "registry:read", "registry:write")
	claims["org"] = org
	return s.Issuer.Sign(t, claims)
}

func (tn tenants) asset(token, serial string, extra ...any) map[string]any {
	body := map[string]any{"serial_number": serial, "asset_type_id": tn.typeID}
	for i := 0; i+1 < len(extra); i += 2 {
		body[extra[i].(string)] = extra[i+1]
	}
	return tn.Call(201, "POST", "/assets", token, body).JSON()
}

func wantProblem(t *testing.T, r testkit.Response, status int, typ string) {
	t.Helper()
	testkit.Expect(t, r, status)
	if got, _ := r.JSON()["type"].(string); got != httpx.ProblemTypePrefix+typ {
		t.Errorf("type = %q, want %s: %s", got, typ, r.Raw)
	}
}

func wantFieldProblem(t *testing.T, r testkit.Response, field string) {
	t.Helper()
	testkit.Expect(t, r, 422)
	if !strings.Contains(string(r.Raw), `"field":"`+field+`"`) {
		t.Errorf("422 does not name %s: %s", field, r.Raw)
	}
}

func ids(list []map[string]any) []string {
	var out []string
	for _, item := range list {
		out = append(out, item["id"].(string))
	}
	return out
}

// A bound client's asset is its organization's; another organization's
// client does not see it on any read path, and a create of the same
// serial number tells it only that an asset it does not see holds it.
func TestTenancyVisibility(t *testing.T) {
	t.Parallel()
	tn := newTenants(t)
	mine := tn.asset(tn.a, "SN-A")
	if mine["owner_organization_id"] != tn.A {
		t.Fatalf("a bound client's asset: %v", mine)
	}
	wantFieldProblem(t, tn.Do("POST", "/assets", tn.a, map[string]any{"serial_number": "SN-X", "asset_type_id": tn.typeID,
		"owner_organization_id": tn.B}), "owner_organization_id")
	wantFieldProblem(t, tn.Do("POST", "/assets", tn.RW, map[string]any{"serial_number": "SN-X", "asset_type_id": tn.typeID,
		"owner_organization_id": uuid.NewString()}), "owner_organization_id")
	ofB := tn.asset(tn.RW, "SN-B", "owner_organization_id", tn.B)
	shared := tn.asset(tn.RW, "SN-S")
	if ofB["owner_organization_id"] != tn.B || shared["owner_organization_id"] != nil {
		t.Fatalf("unbound creates: %v %v", ofB, shared)
	}
	path := "/assets/" + mine["id"].(string)

	tn.Call(404, "GET", path, tn.b, nil)
	tn.Call(200, "GET", path, tn.a2, nil)
	tn.Call(200, "GET", path, tn.RO, nil)
	if got := ids(tn.Call(200, "GET", "/assets", tn.b, nil).List()); len(got) != 2 || got[0] != ofB["id"] || got[1] != shared["id"] {
		t.Errorf("b lists %v", got)
	}
	if got := ids(tn.Call(200, "GET", "/assets?serial_number=SN-A", tn.b, nil).List()); len(got) != 0 {
		t.Errorf("b lists A's asset by serial number: %v", got)
	}
	if got := tn.Call(200, "GET", "/assets", tn.RO, nil).List(); len(got) != 3 {
		t.Errorf("an unbound client lists %d assets", len(got))
	}
	find := map[string]any{"serial_number": "SN-A", "brand": "Liftmaster", "model": "LM-200"}
	// Twice each: the second answer may come from the find cache, which
	// must not hand one organization's answer to another.
	for range 2 {
		tn.Call(200, "POST", "/assets/find", tn.a, find)
		tn.Call(404, "POST", "/assets/find", tn.b, find)
		wantProblem(t, tn.Do("POST", "/assets/find?create=true", tn.b, find), 409, "asset-not-visible")
	}
	conflict := tn.Do("POST", "/assets", tn.b, map[string]any{"serial_number": "SN-A", "asset_type_id": tn.typeID})
	wantProblem(t, conflict, 409, "asset-not-visible")
	if strings.Contains(string(conflict.Raw), mine["id"].(string)) || strings.Contains(string(conflict.Raw), tn.A) || conflict.JSON()["existing_id"] != nil {
		t.Errorf("the 409 names the asset or its owner: %s", conflict.Raw)
	}
	results := tn.Call(200, "POST", "/assets/batch", tn.b, map[string]any{"items": []any{
		map[string]any{"serial_number": "SN-A", "asset_type_id": tn.typeID},
		map[string]any{"serial_number": "SN-S", "asset_type_id": tn.typeID}}}).List()
	if results[0]["status"] != float64(409) || results[1]["status"] != float64(200) {
		t.Errorf("batch: %v", results)
	}
	// An external id or a patched serial number held by an asset it does
	// not see names nothing either.
	tn.Call(200, "PATCH", path, tn.a, map[string]any{"external_ids": []any{map[string]any{"source_system": "erp", "external_id": "A-1"}}})
	wantProblem(t, tn.Do("POST", "/assets", tn.b, map[string]any{"serial_number": "SN-Y", "asset_type_id": tn.typeID,
		"external_ids": []any{map[string]any{"source_system": "erp", "external_id": "A-1"}}}), 409, "asset-not-visible")
	wantProblem(t, tn.Do("PATCH", "/assets/"+ofB["id"].(string), tn.b, map[string]any{"serial_number": "SN-A"}), 409, "asset-not-visible")
	// An unbound client's duplicate still names the asset.
	if e := tn.Call(409, "POST", "/assets", tn.RW, map[string]any{"serial_number": "SN-A", "asset_type_id": tn.typeID}).JSON(); e["existing_id"] != mine["id"] {
		t.Errorf("unbound duplicate: %v", e)
	}

	// Changing: nobody changes what they do not see; any client of the
	// owner organization may; only an admin moves the owner.
	tn.Call(404, "PATCH", path, tn.b, map[string]any{"status": "x"})
	tn.Call(404, "DELETE", path, tn.b, nil)
	tn.Call(200, "PATCH", path, tn.a2, map[string]any{"status": "checked"})
	wantFieldProblem(t, tn.Do("PATCH", path, tn.a, map[string]any{"owner_organization_id": tn.B}), "owner_organization_id")
	wantFieldProblem(t, tn.Do("PATCH", "/assets/"+ofB["id"].(string), tn.RW, map[string]any{"owner_organization_id": nil}), "owner_organization_id")
	tn.Call(200, "PATCH", path, tn.a, map[string]any{"owner_organization_id": tn.A})
	if got := tn.Call(200, "PATCH", path, tn.Admin, map[string]any{"owner_organization_id": tn.C}).JSON(); got["owner_organization_id"] != tn.C {
		t.Errorf("admin's owner change: %v", got)
	}
	tn.Call(404, "GET", path, tn.a, nil)
	tn.Call(200, "GET", path, tn.c, nil)
}

// Grants: the owner's clients manage them; a grant is in force for the
// next call, the find cache included, and so is its removal.
func TestGrants(t *testing.T) {
	t.Parallel()
	tn := newTenants(t)
	mine := tn.asset(tn.a, "SN-G")
	path := "/assets/" + mine["id"].(string)
	grants := path + "/grants"
	find := map[string]any{"serial_number": "SN-G"}
	tn.Call(404, "POST", "/assets/find", tn.b, find)

	tn.Call(404, "POST", grants, tn.b, map[string]any{"organization_id": tn.B, "role": "read"})
	wantFieldProblem(t, tn.Do("POST", grants, tn.a, map[string]any{"organization_id": tn.A, "role": "read"}), "organization_id")
	wantFieldProblem(t, tn.Do("POST", grants, tn.a, map[string]any{"organization_id": uuid.NewString(), "role": "read"}), "organization_id")
	wantFieldProblem(t, tn.Do("POST", grants, tn.a, map[string]any{"organization_id": tn.B, "role": "write"}), "role")
	made := tn.Call(201, "POST", grants, tn.a, map[string]any{"organization_id": tn.B, "role": "read"})
	if g := made.JSON(); g["organization_id"] != tn.B || g["role"] != "read" || g["created_by"] != "client-a" || made.Header.Get("Location") != grants+"/"+tn.B {
		t.Errorf("grant: %v %s", g, made.Header.Get("Location"))
	}
	tn.Call(200, "GET", path, tn.b, nil)
	tn.Call(200, "POST", "/assets/find", tn.b, find)
	if got := ids(tn.Call(200, "GET", "/assets", tn.b, nil).List()); len(got) != 1 {
		t.Errorf("b lists %v", got)
	}
	// Seen through a grant is not managing it.
	wantProblem(t, tn.Do("POST", grants, tn.b, map[string]any{"organization_id": tn.C, "role": "read"}), 403, "not-owner")
	wantProblem(t, tn.Do("DELETE", grants+"/"+tn.B, tn.b, nil), 403, "not-owner")
	tn.Call(404, "GET", grants, tn.c, nil)
	if g := tn.Call(200, "POST", grants, tn.a2, map[string]any{"organization_id": tn.B, "role": "inspect"}).JSON(); g["role"] != "inspect" {
		t.Errorf("replaced: %v", g)
	}
	if list := tn.Call(200, "GET", grants, tn.b, nil).List(); len(list) != 1 || list[0]["role"] != "inspect" {
		t.Errorf("grants: %v", list)
	}
	tn.Call(204, "DELETE", grants+"/"+tn.B, tn.a, nil)
	tn.Call(404, "DELETE", grants+"/"+tn.B, tn.a, nil)
	tn.Call(404, "GET", path, tn.b, nil)
	tn.Call(404, "POST", "/assets/find", tn.b, find)

	shared := tn.asset(tn.RW, "SN-SHARED")
	r := tn.Do("POST", "/assets/"+shared["id"].(string)+"/grants", tn.Admin, map[string]any{"organization_id": tn.B, "role": "read"})
	if testkit.Expect(t, r, 422); !strings.Contains(string(r.Raw), "no owner") {
		t.Errorf("grant on a shared asset: %s", r.Raw)
	}
	events := tn.Events(t)
	var types []string
	for _, e := range events {
		if e.Subject.Kind == "asset_grant" {
			types = append(types, e.Type)
			if e.Subject.ID != mine["id"].(string)+":"+tn.B || !strings.Contains(string(e.Data), `"asset_id":"`+mine["id"].(string)+`"`) {
				t.Errorf("grant event: %+v", e)
			}
		}
	}
	if strings.Join(types, " ") != "asset_grant.created asset_grant.updated asset_grant.deleted" {
		t.Errorf("grant events: %v", types)
	}
	// Each change of the grants is a row of the access log, holding the
	// asset's whole access after it, in order.
	internal := tn.Issuer.Token(t, "svc-documents", "registry:internal")
	peer := testkit.Client{BaseURL: tn.Client.BaseURL}
	var roles []string
	var last float64
	for _, c := range testkit.Expect(t, peer.Do(t, "GET", "/internal/asset_access?limit=10", internal, nil), 200).JSON()["changes"].([]any) {
		c := c.(map[string]any)
		if c["asset_id"] != mine["id"] || c["owner_organization_id"] != tn.A || c["version"].(float64) <= last {
			t.Errorf("access change: %v", c)
		}
		last = c["version"].(float64)
		grants, _ := c["grants"].([]any)
		role := "none"
		if len(grants) == 1 {
			role = grants[0].(map[string]any)["role"].(string)
		}
		roles = append(roles, role)
	}
	if strings.Join(roles, " ") != "read inspect none" {
		t.Errorf("the access log holds %v", roles)
	}
}

// A transfer hands the asset over when the receiver accepts it: the
// receiver sees it from then on, the sender no longer does, and other
// services read the change from the access log.
func TestTransfers(t *testing.T) {
	t.Parallel()
	tn := newTenants(t)
	mine := tn.asset(tn.a, "SN-T")
	id := mine["id"].(string)
	path := "/assets/" + id
	transfers := path + "/transfers"

	tn.Call(404, "POST", transfers, tn.b, map[string]any{"to_organization_id": tn.B})
	wantFieldProblem(t, tn.Do("POST", transfers, tn.a, map[string]any{"to_organization_id": tn.A}), "to_organization_id")
	wantFieldProblem(t, tn.Do("POST", transfers, tn.a, map[string]any{"to_organization_id": uuid.NewString()}), "to_organization_id")
	wantProblem(t, tn.Do("POST", transfers, tn.RW, map[string]any{"to_organization_id": tn.B}), 403, "not-owner")
	shared := tn.asset(tn.RW, "SN-T-SHARED")
	tn.Call(422, "POST", "/assets/"+shared["id"].(string)+"/transfers", tn.Admin, map[string]any{"to_organization_id": tn.B})

	created := tn.Call(201, "POST", transfers, tn.a, map[string]any{"to_organization_id": tn.B})
	tr := created.JSON()
	if tr["state"] != "pending" || tr["from_organization_id"] != tn.A || tr["to_organization_id"] != tn.B || tr["asset_id"] != id ||
		created.Header.Get("Location") != "/transfers/"+tr["id"].(string) {
		t.Fatalf("transfer: %v", tr)
	}
	tpath := "/transfers/" + tr["id"].(string)
	tn.Call(409, "POST", transfers, tn.a, map[string]any{"to_organization_id": tn.C})
	tn.Call(200, "GET", tpath, tn.b, nil)
	tn.Call(200, "GET", tpath, tn.RO, nil)
	tn.Call(404, "GET", tpath, tn.c, nil)
	if got := tn.Call(200, "GET", "/transfers?state=pending", tn.b, nil).List(); len(got) != 1 {
		t.Errorf("b's pending transfers: %v", got)
	}
	if got := tn.Call(200, "GET", "/transfers", tn.c, nil).List(); len(got) != 0 {
		t.Errorf("c's transfers: %v", got)
	}
	tn.Call(404, "GET", path, tn.b, nil) // not yet the asset
	wantProblem(t, tn.Do("POST", tpath+"/accept", tn.a, nil), 403, "not-permitted")
	wantProblem(t, tn.Do("POST", tpath+"/cancel", tn.b, nil), 403, "not-permitted")
	tn.Call(404, "POST", tpath+"/accept", tn.c, nil)

	if got := tn.Call(200, "POST", tpath+"/accept", tn.b, nil).JSON(); got["state"] != "accepted" || got["updated_by"] != "client-b" {
		t.Errorf("accepted: %v", got)
	}
	tn.Call(409, "POST", tpath+"/accept", tn.b, nil)
	tn.Call(409, "POST", tpath+"/cancel", tn.a, nil)
	if got := tn.Call(200, "GET", path, tn.b, nil).JSON(); got["owner_organization_id"] != tn.B {
		t.Errorf("after acceptance: %v", got)
	}
	tn.Call(404, "GET", path, tn.a, nil)
	var handedOver bool
	for _, e := range tn.Events(t) {
		if e.Type == "asset.updated" && e.Subject.ID == id {
			_, handedOver = e.Changes["owner_organization_id"]
		}
	}
	if !handedOver {
		t.Error("no asset.updated event with owner_organization_id among its changes")
	}

	// Rejected and cancelled transfers leave the owner as it was.
	second := tn.Call(201, "POST", transfers, tn.b, map[string]any{"to_organization_id": tn.C}).JSON()
	if got := tn.Call(200, "POST", "/transfers/"+second["id"].(string)+"/reject", tn.c, nil).JSON(); got["state"] != "rejected" {
		t.Errorf("rejected: %v", got)
	}
	third := tn.Call(201, "POST", transfers, tn.b, map[string]any{"to_organization_id": tn.A}).JSON()
	if got := tn.Call(200, "POST", "/transfers/"+third["id"].(string)+"/cancel", tn.b, nil).JSON(); got["state"] != "cancelled" {
		t.Errorf("cancelled: %v", got)
	}
	tn.Call(404, "GET", path, tn.a, nil)

	// The access log: one change, the acceptance; the lookup answers the
	// current access with that version.
	internal := tn.Issuer.Token(t, "svc-actions", "registry:internal")
	peer := testkit.Client{BaseURL: tn.Client.BaseURL} // internal paths are in no public document
	log := testkit.Expect(t, peer.Do(t, "GET", "/internal/asset_access?after=0", internal, nil), 200).JSON()
	changes := log["changes"].([]any)
	if len(changes) != 1 {
		t.Fatalf("access log: %v", log)
	}
	change := changes[0].(map[string]any)
	if change["asset_id"] != id || change["owner_organization_id"] != tn.B || log["next"] != change["version"] {
		t.Errorf("access change: %v", log)
	}
	if again := testkit.Expect(t, peer.Do(t, "GET", fmt.Sprintf("/internal/asset_access?after=%v&limit=5", log["next"]), internal, nil), 200).JSON(); len(again["changes"].([]any)) != 0 ||
		again["next"] != log["next"] {
		t.Errorf("after the last change: %v", again)
	}
	lookup := testkit.Expect(t, peer.Do(t, "POST", "/internal/asset_access/lookup", internal,
		map[string]any{"asset_ids": []string{id, shared["id"].(string), uuid.NewString()}}), 200).JSON()
	access := lookup["access"].([]any)
	if len(access) != 2 {
		t.Fatalf("lookup: %v", lookup)
	}
	for _, a := range access {
		a := a.(map[string]any)
		switch a["asset_id"] {
		case id:
			if a["owner_organization_id"] != tn.B || a["version"] != change["version"] {
				t.Errorf("lookup of the transferred asset: %v", a)
			}
		default:
			if _, owned := a["owner_organization_id"]; owned || a["version"] != float64(0) {
				t.Errorf("lookup of the shared asset: %v", a)
			}
		}
	}
	testkit.Expect(t, peer.Do(t, "GET", "/internal/asset_access", tn.RW, nil), 403)
}

// Receivers accepting and rejecting one transfer at once, two clients of
// the receiving organization: exactly one move succeeds, the others are
// told the transfer is no longer pending, and the transfer's state and
// the asset's owner agree with the move that won.
func TestConcurrentAcceptsHandOverOnce(t *testing.T) {
	t.Parallel()
	tn := newTenants(t)
	b2 := bound(t, tn.Service, "client-b2", tn.B)
	handedOver := 0
	for round := range 6 {
		mine := tn.asset(tn.a, fmt.Sprintf("SN-RACE-%d", round))
		tr := tn.Call(201, "POST", "/assets/"+mine["id"].(string)+"/transfers", tn.a, map[string]any{"to_organization_id": tn.B}).JSON()
		tpath := "/transfers/" + tr["id"].(string)
		statuses := make([]int, 8)
		var wg sync.WaitGroup
		for i := range statuses {
			wg.Go(func() {
				token, move := tn.b, "/accept"
				if i%2 == 1 {
					token = b2
				}
				if i%4 == 3 {
					move = "/reject"
				}
				statuses[i] = tn.Client.Do(t, "POST", tpath+move, token, nil).Status
			})
		}
		wg.Wait()
		won := -1
		for i, s := range statuses {
			switch {
			case s == 200 && won < 0:
				won = i
			case s != 409:
				t.Errorf("round %d: statuses %v", round, statuses)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no move succeeded: %v", round, statuses)
		}
		state := tn.Call(200, "GET", tpath, tn.b, nil).JSON()["state"]
		owner := tn.Call(200, "GET", "/assets/"+mine["id"].(string), tn.Admin, nil).JSON()["owner_organization_id"]
		accepted := won%4 != 3
		if accepted {
			handedOver++
		}
		if (accepted && (state != "accepted" || owner != tn.B)) || (!accepted && (state != "rejected" || owner != tn.A)) {
			t.Errorf("round %d: move %d won, the transfer is %v and the asset's owner %v", round, won, state, owner)
		}
	}
	internal := tn.Issuer.Token(t, "svc-actions", "registry:internal")
	peer := testkit.Client{BaseURL: tn.Client.BaseURL}
	if changes := testkit.Expect(t, peer.Do(t, "GET", "/internal/asset_access", internal, nil), 200).JSON()["changes"].([]any); len(changes) != handedOver {
		t.Errorf("access log after %d handovers: %d changes", handedOver, len(changes))
	}
}

// An admin sets the owner of many assets at once; nobody else may.
func TestSetOwners(t *testing.T) {
	t.Parallel()
	tn := newTenants(t)
	one, two := tn.asset(tn.RW, "SN-O1"), tn.asset(tn.a, "SN-O2")
	body := map[string]any{"asset_ids": []any{one["id"], two["id"]}, "owner_organization_id": tn.A}
	tn.Call(403, "POST", "/assets/owners", tn.RW, body)
	wantFieldProblem(t, tn.Do("POST", "/assets/owners", tn.Admin, map[string]any{"asset_ids": []any{one["id"]}}), "owner_organization_id")
	wantFieldProblem(t, tn.Do("POST", "/assets/owners", tn.Admin, map[string]any{"asset_ids": []any{one["id"], uuid.NewString()},
		"owner_organization_id": tn.A}), "asset_ids[1]")
	got := tn.Call(200, "POST", "/assets/owners", tn.Admin, body).JSON()
	if fmt.Sprint(got["changed"]) != fmt.Sprint([]any{one["id"]}) || fmt.Sprint(got["unchanged"]) != fmt.Sprint([]any{two["id"]}) {
		t.Errorf("set owners: %v", got)
	}
	tn.Call(404, "GET", "/assets/"+one["id"].(string), tn.b, nil)
	tn.Call(200, "GET", "/assets/"+one["id"].(string), tn.a, nil)
	got = tn.Call(200, "POST", "/assets/owners", tn.Admin, map[string]any{"asset_ids": []any{one["id"]}, "owner_organization_id": nil}).JSON()
	if fmt.Sprint(got["changed"]) != fmt.Sprint([]any{one["id"]}) {
		t.Errorf("unset: %v", got)
	}
	tn.Call(200, "GET", "/assets/"+one["id"].(string), tn.b, nil)
}

// Meter readings and components are part of an asset's record: seen with
// it, recorded by those who may record on it, and a parent must be an
// asset the caller sees.
func TestMeterReadingsAndComponentsFollowTheAsset(t *testing.T) {
	t.Parallel()
	tn := newTenants(t)
	crane := tn.asset(tn.a, "METERED-1")["id"].(string)
	readings := "/assets/" + crane + "/meter_readings"
	reading := map[string]any{"meter": "hours", "value": 10, "read_at": "2025-01-01T00:00:00Z"}
	tn.Call(201, "POST", readings, tn.a, reading)
	// B sees nothing of it: 404 on reads and on recording, a parent it
	// cannot name.
	tn.Call(404, "GET", readings, tn.b, nil)
	tn.Call(404, "POST", readings, tn.b, reading)
	wantFieldProblem(t, tn.Call(422, "POST", "/assets", tn.b, map[string]any{"serial_number": "HOOK-B",
		"asset_type_id": tn.typeID, "parent_asset_id": crane}), "parent_asset_id")
	// Through a read grant it reads, and may not record.
	tn.Call(201, "POST", "/assets/"+crane+"/grants", tn.a, map[string]any{"organization_id": tn.B, "role": "read"})
	if got := tn.Call(200, "GET", readings, tn.b, nil).List(); len(got) != 1 {
		t.Fatalf("the read grantee lists %d readings, want 1", len(got))
	}
	wantProblem(t, tn.Call(403, "POST", readings, tn.b, reading), 403, "not-permitted")
	// Through an inspect grant it records.
	tn.Call(200, "POST", "/assets/"+crane+"/grants", tn.a, map[string]any{"organization_id": tn.B, "role": "inspect"})
	tn.Call(201, "POST", readings, tn.b, map[string]any{"meter": "hours", "value": 12, "read_at": "2025-02-01T00:00:00Z"})
	// C, never granted, still sees nothing; unbound clients see all.
	tn.Call(404, "GET", readings, tn.c, nil)
	tn.Call(200, "GET", readings, tn.RW, nil)
}
