package e2e

import (
	"net/http"
	"testing"

	"github.com/assetregistry/registry/tools/devstack"
	"github.com/assetregistry/registry/tools/testkit"
)

// The suite's two organizations, each with a read-write client bound to
// it (creds.OrgA, creds.OrgB: the organization's ID, its client's
// ClientID and ClientSecret), for the tenancy rules' tests.
func orgA(t *testing.T) string { return tenantToken(t, creds.OrgA) }
func orgB(t *testing.T) string { return tenantToken(t, creds.OrgB) }

// tenantToken is a real token of a tenant's bound client.
func tenantToken(t *testing.T, tenant devstack.Tenant) string {
	t.Helper()
	return token(t, tenant.ClientID, tenant.ClientSecret)
}

// What the harness (and make run) hands the tenancy tests: two
// organizations that exist in the registry, and clients bound to them
// whose tokens carry the organization's id in the claim org; the other
// clients are bound to none.
func TestBoundClients(t *testing.T) {
	t.Parallel()
	if creds.OrgA.ID == creds.OrgB.ID {
		t.Fatalf("the two organizations are one: %s", creds.OrgA.ID)
	}
	for _, c := range []struct {
		name, registration string
		tenant             devstack.Tenant
		token              string
	}{{"A", "ORG-A", creds.OrgA, orgA(t)}, {"B", "ORG-B", creds.OrgB, orgB(t)}} {
		org := testkit.Expect(t, gateway().Do(t, http.MethodGet, "/organizations/"+c.tenant.ID, c.token, nil), 200).JSON()
		if org["registration_number"] != c.registration {
			t.Errorf("organization %s: %v, want registration number %s", c.name, org, c.registration)
		}
		claims := unverifiedClaims(t, c.token)
		if claims["org"] != c.tenant.ID || claims["sub"] != c.tenant.ClientID {
			t.Errorf("organization %s's client: token claims %v, want sub %s and org %s", c.name, claims, c.tenant.ClientID, c.tenant.ID)
		}
	}
	for name, tok := range map[string]string{"CLIENT_ID": readWrite(t), "READONLY_CLIENT_ID": readOnly(t), "OTHER_CLIENT_ID": other(t), "ADMIN_CLIENT_ID": admin(t)} {
		if org, bound := unverifiedClaims(t, tok)["org"]; bound {
			t.Errorf("%s is bound to organization %v, want none", name, org)
		}
	}
}
