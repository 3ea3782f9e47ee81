package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/assetregistry/registry/tools/testkit"
)

// boundToken is a token of a real client (its id and secret) bound to the
// organization org: the token endpoint's own token with the organization
// claim added, signed again with the identity provider's key, as the
// operator's binding makes the identity provider issue it. Everything
// else (subject, scopes, audience, the credential generation the
// verifiers check) is the real token's.
func boundToken(t *testing.T, id, secret, org string) string {
	t.Helper()
	key, kid := signingKey(t)
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token(t, id, secret), claims); err != nil {
		t.Fatal(err)
	}
	claims["org"] = org
	return testkit.SignWith(t, key, kid, claims)
}

// problemType expects status and a problem type ending in suffix.
func problemType(t *testing.T, r testkit.Response, status int, suffix string) {
	t.Helper()
	testkit.Expect(t, r, status)
	if typ, _ := r.JSON()["type"].(string); !strings.HasSuffix(typ, suffix) {
		t.Errorf("type = %q, want one ending in %s: %s", typ, suffix, r.Raw)
	}
}

// Organizations as tenants, through the gateway with two clients bound to
// two organizations: each sees its own assets and the shared ones, not
// the other's; a grant shows an asset for the next call and its removal
// hides it; a transfer hands it over when the receiver accepts, once,
// however many accept at the same moment.
func TestTenancyAssetsThroughGateway(t *testing.T) {
	t.Parallel()
	rw, root := readWrite(t), admin(t)
	gw := gateway()
	call := func(status int, method, path, token string, body any) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, method, path, token, body), status)
	}
	org := func(name string) string {
		return call(201, "POST", "/organizations", rw, map[string]any{"name": name, "registration_number": unique("T"),
			"organization_type": "private", "country": "no"}).JSON()["id"].(string)
	}
	orgA, orgB := org("Tenant A"), org("Tenant B")
	a := boundToken(t, creds.ClientID, creds.ClientSecret, orgA)
	b := boundToken(t, creds.OtherClientID, creds.OtherClientSecret, orgB)
	brand := unique("Tenancy")
	typ := call(201, "POST", "/asset_types", rw, map[string]any{"brand": brand, "model": "T-1"}).JSON()["id"].(string)
	serial := unique("SN")
	mine := call(201, "POST", "/assets", a, map[string]any{"serial_number": serial, "asset_type_id": typ}).JSON()
	if mine["owner_organization_id"] != orgA {
		t.Fatalf("a bound client's asset: %v", mine)
	}
	path := "/assets/" + mine["id"].(string)
	shared := call(201, "POST", "/assets", rw, map[string]any{"serial_number": unique("SN"), "asset_type_id": typ}).JSON()

	// Unseen: 404 by id, absent from lists and finds, a 409 that names
	// nothing for a create of its serial number.
	call(404, "GET", path, b, nil)
	call(200, "GET", "/assets/"+shared["id"].(string), b, nil)
	if got := call(200, "GET", "/assets?asset_type_id="+typ, b, nil).List(); len(got) != 1 || got[0]["id"] != shared["id"] {
		t.Errorf("b lists %v", got)
	}
	find := map[string]any{"serial_number": serial, "brand": brand, "model": "T-1"}
	call(404, "POST", "/assets/find", b, find)
	problemType(t, gw.Do(t, "POST", "/assets/find?create=true", b, find), 409, "asset-not-visible")
	conflict := gw.Do(t, "POST", "/assets", b, map[string]any{"serial_number": serial, "asset_type_id": typ})
	problemType(t, conflict, 409, "asset-not-visible")
	if strings.Contains(string(conflict.Raw), mine["id"].(string)) || strings.Contains(string(conflict.Raw), orgA) {
		t.Errorf("the 409 names the asset or its owner: %s", conflict.Raw)
	}
	call(404, "PATCH", path, b, map[string]any{"status": "mine now"})
	problemType(t, gw.Do(t, "PATCH", path, a, map[string]any{"owner_organization_id": orgB}), 422, "validation-failed")

	// A grant, in force for the next call; its removal too.
	call(404, "POST", path+"/grants", b, map[string]any{"organization_id": orgB, "role": "read"})
	call(201, "POST", path+"/grants", a, map[string]any{"organization_id": orgB, "role": "read"})
	call(200, "GET", path, b, nil)
	call(200, "POST", "/assets/find", b, find)
	problemType(t, gw.Do(t, "POST", path+"/grants", b, map[string]any{"organization_id": orgB, "role": "inspect"}), 403, "not-owner")
	if got := call(200, "GET", path+"/grants", a, nil).List(); len(got) != 1 || got[0]["organization_id"] != orgB {
		t.Errorf("grants: %v", got)
	}
	call(204, "DELETE", path+"/grants/"+orgB, a, nil)
	call(404, "GET", path, b, nil)
	call(404, "POST", "/assets/find", b, find)

	// A transfer: the receiver sees it, not yet the asset; of many
	// accepts at once exactly one succeeds.
	transfer := call(201, "POST", path+"/transfers", a, map[string]any{"to_organization_id": orgB}).JSON()
	tpath := "/transfers/" + transfer["id"].(string)
	call(409, "POST", path+"/transfers", a, map[string]any{"to_organization_id": orgB})
	call(200, "GET", tpath, b, nil)
	pending := call(200, "GET", "/transfers?state=pending&asset_id="+url.QueryEscape(mine["id"].(string)), b, nil).List()
	if len(pending) != 1 || pending[0]["id"] != transfer["id"] {
		t.Errorf("b's pending transfers: %v", pending)
	}
	call(404, "GET", path, b, nil)
	problemType(t, gw.Do(t, "POST", tpath+"/accept", a, nil), 403, "not-permitted")
	// Rejections racing accepts: one move wins, and the asset stays with
	// the sender when it is a rejection (then a second transfer races
	// accepts alone).
	b2 := boundToken(t, creds.OtherClientID, creds.OtherClientSecret, orgB)
	race := func(tpath string, moves ...string) []int {
		statuses := make([]int, len(moves))
		var wg sync.WaitGroup
		for i, move := range moves {
			wg.Go(func() {
				token := b
				if i%2 == 1 {
					token = b2
				}
				statuses[i] = gw.Do(t, "POST", tpath+"/"+move, token, nil).Status
			})
		}
		wg.Wait()
		won := 0
		for _, s := range statuses {
			switch s {
			case 200:
				won++
			case 409:
			default:
				t.Errorf("a move answered %d", s)
			}
		}
		if won != 1 {
			t.Errorf("%d moves succeeded: %v", won, statuses)
		}
		return statuses
	}
	first := race(tpath, "reject", "accept", "reject", "accept")
	if state := call(200, "GET", tpath, b, nil).JSON()["state"]; (state == "rejected") != (first[0] == 200 || first[2] == 200) {
		t.Errorf("the transfer is %v after %v", state, first)
	}
	if call(200, "GET", tpath, b, nil).JSON()["state"] == "rejected" {
		call(404, "GET", path, b, nil)
		tpath = "/transfers/" + call(201, "POST", path+"/transfers", a, map[string]any{"to_organization_id": orgB}).JSON()["id"].(string)
		race(tpath, "accept", "accept", "accept", "accept", "accept", "accept", "accept", "accept", "accept", "accept")
	}
	if got := call(200, "GET", path, b, nil).JSON(); got["owner_organization_id"] != orgB {
		t.Errorf("after acceptance: %v", got)
	}
	call(404, "GET", path, a, nil)
	if got := call(200, "GET", tpath, a, nil).JSON(); got["state"] != "accepted" {
		t.Errorf("the sender's view of the transfer: %v", got)
	}

	// The admin's owner change, and nobody else's.
	owners := map[string]any{"asset_ids": []any{shared["id"]}, "owner_organization_id": orgA}
	call(403, "POST", "/assets/owners", rw, owners)
	if got := call(200, "POST", "/assets/owners", root, owners).JSON(); fmt.Sprint(got["changed"]) != fmt.Sprint([]any{shared["id"]}) {
		t.Errorf("set owners: %v", got)
	}
	call(404, "GET", "/assets/"+shared["id"].(string), b, nil)
	call(200, "GET", "/assets/"+shared["id"].(string), a, nil)
}
