package auth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/tools/testkit"
)

const (
	orgA = "0190a6e2-8c3b-7d4e-9f00-00000000000a"
	orgB = "0190a6e2-8c3b-7d4e-9f00-00000000000b"
)

// organizationEcho answers what the verified principal and
// auth.Organization say of the caller's organization, as JSON.
var organizationEcho = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.PrincipalFrom(r.Context())
	_ = json.NewEncoder(w).Encode(map[string]string{
		"principal": p.Organization, "organization": auth.Organization(r.Context()), "subject": auth.Subject(r.Context()),
	})
})

// call sends a GET with token and headers (name, value, ...) to h and
// returns the status and the echoed body.
func call(t *testing.T, h http.Handler, method, token string, headers ...string) (int, map[string]string) {
	t.Helper()
	r := httptest.NewRequest(method, "/organizations", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var body map[string]string
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("body %s: %v", w.Body, err)
		}
	} else {
		body = map[string]string{"problem": w.Body.String(), "challenge": w.Header().Get("WWW-Authenticate")}
	}
	return w.Code, body
}

// The organization a client is bound to comes from the token's claim (org,
// or the one oidc.organization-claim names), which must hold an
// organization id: anything else is a misconfigured issuer and the token
// is refused (401) rather than read as bound to none, which reads every
// row.
func TestOrganizationClaim(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	verifier := func(claim string) http.Handler {
		v := following(t, auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway, OrganizationClaim: claim})
		return auth.Authenticate(v)(organizationEcho)
	}
	byClaim := map[string]http.Handler{"": verifier(""), "org": verifier("org"), "tenant": verifier("tenant")}
	with := func(set map[string]any) string {
		c := iss.Claims("client-1", auth.ScopeRead)
		for k, v := range set {
			c[k] = v
		}
		return iss.Sign(t, c)
	}
	tests := []struct {
		name   string
		claim  string // oidc.organization-claim; "" the default
		token  string
		status int
		org    string // Principal.Organization when 200
	}{
		{"the org claim is read by default", "", with(map[string]any{"org": orgA}), 200, orgA},
		{"the org claim named explicitly", "org", with(map[string]any{"org": orgA}), 200, orgA},
		{"an organization id in upper case is read in lower case", "", with(map[string]any{"org": strings.ToUpper(orgA)}), 200, orgA},
		{"no org claim: bound to none", "", with(nil), 200, ""},
		{"an empty org claim: bound to none", "", with(map[string]any{"org": ""}), 200, ""},
		{"an org claim that is not a UUID is refused", "", with(map[string]any{"org": "acme"}), 401, ""},
		{"a UUID in another spelling is refused", "", with(map[string]any{"org": "{" + orgA + "}"}), 401, ""},
		{"an org claim that is not a string is refused", "", with(map[string]any{"org": 42}), 401, ""},
		{"another claim name is read when configured", "tenant", with(map[string]any{"tenant": orgB}), 200, orgB},
		{"with another claim name, org is not read", "tenant", with(map[string]any{"org": orgA}), 200, ""},
		{"with another claim name, both present: that one wins", "tenant", with(map[string]any{"org": orgA, "tenant": orgB}), 200, orgB},
		{"the configured claim not a UUID is refused", "tenant", with(map[string]any{"tenant": "acme"}), 401, ""},
		{"the configured claim not a string is refused", "tenant", with(map[string]any{"tenant": []string{orgA}}), 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := call(t, byClaim[tt.claim], http.MethodGet, tt.token)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, body)
			}
			if status != http.StatusOK {
				if !strings.Contains(body["challenge"], `error="invalid_token"`) {
					t.Errorf("WWW-Authenticate %q, want invalid_token", body["challenge"])
				}
				return
			}
			if body["principal"] != tt.org || body["organization"] != tt.org {
				t.Errorf("principal's organization %q, Organization(ctx) %q; want %q", body["principal"], body["organization"], tt.org)
			}
		})
	}
}

// Who the caller's organization is: its own token's claim; a token holding
// registry:admin sees every row (Organization is "", though its client may
// be bound); a service's own token (registry:internal) speaks for the
// caller it names in X-On-Behalf-Of, and only then is
// X-On-Behalf-Of-Organization believed.
func TestOrganizationOfTheCaller(t *testing.T) {
	iss, v := newVerifier(t)
	h := auth.Authenticate(v)(organizationEcho)
	bound := iss.Bound(t, "bound-client", orgA, auth.ScopeRead, auth.ScopeWrite)
	admin := iss.Bound(t, "admin-client", orgA, auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin)
	internal := iss.Token(t, "svc-assets", auth.ScopeInternal)
	internalBound := iss.Bound(t, "svc-assets", orgB, auth.ScopeInternal)
	const onBehalf, onBehalfOrg = auth.OnBehalfOfHeader, auth.OnBehalfOfOrganizationHeader
	tests := []struct {
		name                             string
		token                            string
		headers                          []string
		subject, principal, organization string
	}{
		{"a bound client", bound, nil, "bound-client", orgA, orgA},
		{"a bound client's headers are not believed", bound, []string{onBehalf, "someone", onBehalfOrg, orgB}, "bound-client", orgA, orgA},
		{"an admin sees every row though bound", admin, nil, "admin-client", orgA, ""},
		{"a service for a bound caller", internal, []string{onBehalf, "bound-client", onBehalfOrg, orgB}, "bound-client", orgB, orgB},
		{"a service for a caller in upper case", internal, []string{onBehalf, "bound-client", onBehalfOrg, strings.ToUpper(orgB)}, "bound-client", orgB, orgB},
		{"a service for a caller bound to none", internal, []string{onBehalf, "free-client"}, "free-client", "", ""},
		{"the organization header alone is not believed", internal, []string{onBehalfOrg, orgB}, "svc-assets", "", ""},
		{"an organization header that is no UUID is not believed", internal, []string{onBehalf, "bound-client", onBehalfOrg, "acme"}, "bound-client", "", ""},
		{"a service's own token's claim does not stand for the caller", internalBound, []string{onBehalf, "free-client"}, "free-client", "", ""},
		{"nor for itself", internalBound, nil, "svc-assets", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := call(t, h, http.MethodGet, tt.token, tt.headers...)
			if status != http.StatusOK {
				t.Fatalf("status %d: %v", status, body)
			}
			if body["subject"] != tt.subject || body["principal"] != tt.principal || body["organization"] != tt.organization {
				t.Errorf("subject %q, principal's organization %q, Organization(ctx) %q; want %q, %q, %q",
					body["subject"], body["principal"], body["organization"], tt.subject, tt.principal, tt.organization)
			}
		})
	}
}

// tenancy.require-organization: a write from a client bound to no
// organization is a 403 organization-required, unless the token holds
// registry:admin or is a service's own; reads, finds without create and
// bound clients' writes pass, and a token without registry:write still
// gets RequireScope's 403.
func TestRequireOrganization(t *testing.T) {
	iss, v := newVerifier(t)
	h := auth.Authenticate(v)(auth.RequireOrganization(auth.RequireScope(organizationEcho)))
	unbound := iss.ReadWrite(t)
	tests := []struct {
		name, method, target string
		token                string
		headers              []string
		status               int
		problem              string // the problem type's ending when refused
	}{
		{"an unbound client's write", "POST", "/organizations", unbound, nil, 403, "organization-required"},
		{"an unbound client's delete", "DELETE", "/assets/0190a6e2-8c3b-7d4e-9f00-000000000001", unbound, nil, 403, "organization-required"},
		{"an unbound client's find with create", "POST", "/people/find?create=true", unbound, nil, 403, "organization-required"},
		{"an unbound client's read", "GET", "/organizations", unbound, nil, 200, ""},
		{"an unbound client's find without create", "POST", "/people/find", unbound, nil, 200, ""},
		{"a bound client's write", "POST", "/organizations", iss.Bound(t, "bound", orgA, auth.ScopeRead, auth.ScopeWrite), nil, 200, ""},
		{"an unbound admin's write", "POST", "/organizations", iss.Token(t, "admin", auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin), nil, 200, ""},
		{"a read-only client's write is a scope problem", "POST", "/organizations", iss.ReadOnly(t), nil, 403, "forbidden"},
		{"a service's write for a caller", "POST", "/organizations", iss.Token(t, "svc", auth.ScopeInternal, auth.ScopeWrite),
			[]string{auth.OnBehalfOfHeader, "someone"}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, nil)
			r.Header.Set("Authorization", "Bearer "+tt.token)
			for i := 0; i < len(tt.headers); i += 2 {
				r.Header.Set(tt.headers[i], tt.headers[i+1])
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.problem == "" {
				return
			}
			var p struct{ Type, Detail string }
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || !strings.HasSuffix(p.Type, ":"+tt.problem) {
				t.Errorf("problem %s (%v), want type ending in %s", w.Body, err, tt.problem)
			}
			if tt.problem == "organization-required" && !strings.Contains(p.Detail, "belong to an organization") {
				t.Errorf("detail %q does not say why", p.Detail)
			}
		})
	}
}
