package parties

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/assetregistry/registry/pkg/apitest"
	"github.com/assetregistry/registry/pkg/app"
	"github.com/assetregistry/registry/pkg/auth/authtest"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/devinfra"
	"github.com/assetregistry/registry/pkg/openapitest"
	"github.com/assetregistry/registry/pkg/postgres"
	"github.com/assetregistry/registry/pkg/problem"
	"github.com/assetregistry/registry/pkg/testharness"
)

// api is the parties service as deployed (app.Build: auth, routing,
// problems, cache) behind a real HTTP listener.
type api struct {
	t      *testing.T
	client apitest.Client
	issuer *authtest.Issuer
	rw, ro string // tokens
}

func newAPI(t *testing.T) *api {
	t.Helper()
	issuer := authtest.NewIssuer(t, "https://registry.test")
	cfg := app.Config{
		Database: postgres.Config{URL: testharness.PostgresURL(t), Schema: testharness.NewDatabaseSchema(t), MaxConns: 20, StartupWait: time.Second},
		Redis:    cache.Config{URL: testharness.RedisURL(t), TTL: time.Minute, Timeout: 200 * time.Millisecond, Backoff: time.Second},
		OIDC:     issuer.Config(),
		Timeout:  10 * time.Second,
	}
	spec := Spec()
	handler, _, cleanup, err := app.Build(t.Context(), spec, cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return &api{t: t, client: apitest.Client{BaseURL: srv.URL, HTTP: openAPIClient(t)}, issuer: issuer,
		rw: issuer.ReadWrite(t), ro: issuer.ReadOnly(t)}
}

func (a *api) do(method, path, token string, body any, headers ...string) apitest.Response {
	a.t.Helper()
	return a.client.Do(a.t, method, path, token, body, headers...)
}

func (a *api) expect(r apitest.Response, status int) apitest.Response {
	a.t.Helper()
	return apitest.Expect(a.t, r, status)
}

var acme = map[string]any{"name": "Acme AS", "registration_number": "912345678", "organization_type": "private", "country": "no"}

func TestHTTPOrganizations(t *testing.T) {
	a := newAPI(t)
	created := a.expect(a.do("POST", "/organizations/", a.rw, acme), 201)
	org := created.JSON()
	id := org["id"].(string)
	if created.Header.Get("Location") != "/organizations/"+id {
		t.Errorf("Location = %q", created.Header.Get("Location"))
	}
	if org["created_by"] != "rw-client" || org["updated_by"] != "rw-client" || org["idp_id"] != nil {
		t.Errorf("audit fields: %s", created.Raw)
	}
	got := a.expect(a.do("GET", "/organizations/"+id, a.ro, nil), 200).JSON()
	if got["associated_people"] == nil || got["name"] != "Acme AS" {
		t.Errorf("get: %v", got)
	}
	a.expect(a.do("GET", "/organizations/"+id+"/", a.ro, nil), 200)

	dup := a.expect(a.do("POST", "/organizations", a.rw, acme), 409).JSON()
	if dup["existing_id"] != id || dup["type"] != problem.TypePrefix+"duplicate" {
		t.Errorf("duplicate: %v", dup)
	}

	patched := a.expect(a.do("PATCH", "/organizations/"+id, a.rw, `{"tax_identification_number":"NO912345678MVA","country":"NO"}`,
		"Content-Type", "application/merge-patch+json"), 200).JSON()
	if patched["tax_registration_number"] != "NO912345678MVA" || patched["country"] != "no" || patched["tax_identification_number"] != nil {
		t.Errorf("patched: %v", patched)
	}
	removed := a.expect(a.do("PATCH", "/organizations/"+id, a.rw, `{"tax_registration_number":null}`), 200).JSON()
	if removed["tax_registration_number"] != nil {
		t.Errorf("null did not remove: %v", removed)
	}

	found := a.expect(a.do("POST", "/organization/find/", a.ro, map[string]any{"registration_number": "912345678", "country": "NO"}), 200).JSON()
	if found["id"] != id {
		t.Errorf("find: %v", found)
	}
	a.expect(a.do("POST", "/organizations/find", a.ro, map[string]any{"registration_number": "0", "country": "no"}), 404)

	a.expect(a.do("DELETE", "/organizations/"+id, a.rw, nil), 204)
	a.expect(a.do("GET", "/organizations/"+id, a.ro, nil), 404)
	a.expect(a.do("DELETE", "/organizations/"+id, a.rw, nil), 404)
}

func TestHTTPListPagination(t *testing.T) {
	a := newAPI(t)
	for _, n := range []string{"1", "2", "3"} {
		a.expect(a.do("POST", "/organizations", a.rw, map[string]any{
			"name": "Org " + n, "registration_number": n, "organization_type": "public", "country": "se"}), 201)
	}
	a.expect(a.do("POST", "/organizations", a.rw, map[string]any{
		"name": "Other", "registration_number": "4", "organization_type": "private", "country": "se"}), 201)

	first := a.expect(a.do("GET", "/organizations?organization_type=public&country=SE&limit=2", a.ro, nil), 200)
	if len(first.List()) != 2 {
		t.Fatalf("page 1: %s", first.Raw)
	}
	link := first.Header.Get("Link")
	next := strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
	if !strings.HasPrefix(next, "/organizations?") || !strings.Contains(next, "organization_type=public") {
		t.Fatalf("Link = %q", link)
	}
	second := a.expect(a.do("GET", next, a.ro, nil), 200)
	if len(second.List()) != 1 || second.Header.Get("Link") != "" || second.List()[0]["registration_number"] != "3" {
		t.Fatalf("page 2: %s (Link %q)", second.Raw, second.Header.Get("Link"))
	}
	// A cursor only works with the filters it was issued for.
	swapped := strings.Replace(next, "organization_type=public", "organization_type=private", 1)
	a.expect(a.do("GET", swapped, a.ro, nil), 400)
	if got := a.expect(a.do("GET", "/people", a.ro, nil), 200); string(bytes.TrimSpace(got.Raw)) != "[]" {
		t.Errorf("empty list = %s", got.Raw)
	}
}

func TestHTTPPeopleAndLinks(t *testing.T) {
	a := newAPI(t)
	org := a.expect(a.do("POST", "/organizations", a.rw, acme), 201).JSON()
	find := `{"first_name":"Kari","last_name":"Nordmann","date_of_birth":"1990-04-01"}`
	a.expect(a.do("POST", "/people/find", a.ro, find), 404)
	a.expect(a.do("POST", "/people/find?create=false", a.ro, find), 404)
	created := a.expect(a.do("POST", "/people/find?create=true", a.rw, find), 201)
	person := created.JSON()
	pid := person["id"].(string)
	if created.Header.Get("Location") != "/people/"+pid {
		t.Errorf("Location = %q", created.Header.Get("Location"))
	}
	again := a.expect(a.do("POST", "/people/find?create=true", a.rw, `{"first_name":"KARI","last_name":"nordmann","date_of_birth":"1990-04-01"}`), 200).JSON()
	if again["id"] != pid {
		t.Errorf("find-or-create twice made two people")
	}
	linkPath := "/people/" + pid + "/organizations/" + org["id"].(string)
	linked := a.expect(a.do("POST", linkPath+"?relation_type=employee", a.rw, nil), 201)
	if linked.Header.Get("Location") != linkPath+"?relation_type=employee" {
		t.Errorf("link Location = %q", linked.Header.Get("Location"))
	}
	link := linked.JSON()
	if link["person_id"] != pid || link["relation_type"] != "employee" || link["created_at"] == nil || len(link) != 4 {
		t.Errorf("link body: %v", link)
	}
	repeat := a.expect(a.do("POST", linkPath+"/?relation_type=employee", a.rw, nil), 200).JSON()
	if repeat["created_at"] != link["created_at"] {
		t.Errorf("repeat link body differs: %v", repeat)
	}
	got := a.expect(a.do("GET", "/people/"+pid, a.ro, nil), 200).JSON()
	orgs := got["associated_organizations"].([]any)
	if len(orgs) != 1 || orgs[0].(map[string]any)["relation_type"] != "employee" || orgs[0].(map[string]any)["name"] != "Acme AS" {
		t.Errorf("associated_organizations = %v", orgs)
	}
	people := a.expect(a.do("GET", "/organizations/"+org["id"].(string), a.ro, nil), 200).JSON()["associated_people"].([]any)
	if len(people) != 1 || people[0].(map[string]any)["date_of_birth"] != "1990-04-01" {
		t.Errorf("associated_people = %v", people)
	}
	list := a.expect(a.do("GET", "/people?first_name=kari&last_name=NORDMANN&date_of_birth=1990-04-01", a.ro, nil), 200).List()
	if len(list) != 1 || list[0]["associated_organizations"] != nil {
		t.Errorf("list = %v", list)
	}
	a.expect(a.do("DELETE", linkPath+"?relation_type=employee", a.rw, nil), 204)
	a.expect(a.do("DELETE", linkPath+"?relation_type=employee", a.rw, nil), 404)
	a.expect(a.do("DELETE", "/people/"+pid, a.rw, nil), 204)
}

// Every contract error for these resources, one row each.
func TestHTTPErrors(t *testing.T) {
	a := newAPI(t)
	org := a.expect(a.do("POST", "/organizations", a.rw, acme), 201).JSON()
	person := a.expect(a.do("POST", "/people", a.rw, `{"first_name":"Ola","last_name":"Nordmann"}`), 201).JSON()
	orgPath, personPath := "/organizations/"+org["id"].(string), "/people/"+person["id"].(string)
	missing := "/organizations/0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f"
	expired := a.issuer.Claims("rw-client", "registry:read", "registry:write")
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	expiredToken := a.issuer.Sign(t, expired)
	big := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`

	tests := []struct {
		name          string
		method, path  string
		token         string
		body          any
		headers       []string
		status        int
		fields        []string
		header, value string
	}{
		{name: "no token", method: "GET", path: "/organizations", status: 401, header: "WWW-Authenticate", value: `Bearer realm="asset-registry"`},
		{name: "expired token", method: "GET", path: "/organizations", token: expiredToken, status: 401},
		{name: "garbage token", method: "GET", path: "/organizations", token: "abc", status: 401},
		{name: "read-only token writes", method: "POST", path: "/organizations", token: a.ro, body: acme, status: 403},
		{name: "read-only token creates through find", method: "POST", path: "/people/find?create=true", token: a.ro, body: `{"first_name":"A","last_name":"B"}`, status: 403},
		{name: "read-only token deletes", method: "DELETE", path: orgPath, token: a.ro, status: 403},
		{name: "body is not JSON", method: "POST", path: "/organizations", token: a.rw, body: `{"name":`, status: 400},
		{name: "bad UUID in path", method: "GET", path: "/organizations/123", token: a.ro, status: 400},
		{name: "bad UUID in link path", method: "POST", path: "/people/x/organizations/y?relation_type=employee", token: a.rw, status: 400},
		{name: "limit not a number", method: "GET", path: "/organizations?limit=abc", token: a.ro, status: 400},
		{name: "limit zero", method: "GET", path: "/organizations?limit=0", token: a.ro, status: 400},
		{name: "limit too large", method: "GET", path: "/people?limit=1001", token: a.ro, status: 400},
		{name: "foreign cursor", method: "GET", path: "/people?cursor=abc", token: a.ro, status: 400},
		{name: "unknown filter", method: "GET", path: "/people?firstname=x", token: a.ro, status: 400},
		{name: "create flag not boolean", method: "POST", path: "/people/find?create=maybe", token: a.rw, body: `{"first_name":"A","last_name":"B"}`, status: 400},
		{name: "unknown id", method: "GET", path: missing, token: a.ro, status: 404},
		{name: "unknown path", method: "GET", path: "/organisations", token: a.ro, status: 404},
		{name: "link to unknown organization", method: "POST", path: personPath + missing + "?relation_type=employee", token: a.rw, status: 404},
		{name: "method not allowed", method: "PUT", path: orgPath, token: a.rw, body: acme, status: 405, header: "Allow", value: "DELETE, GET, HEAD, PATCH"},
		{name: "find by GET", method: "GET", path: "/people/find", token: a.ro, status: 405, header: "Allow", value: "POST"},
		{name: "duplicate organization", method: "POST", path: "/organizations", token: a.rw, body: acme, status: 409},
		{name: "body over 1 MiB", method: "POST", path: "/organizations", token: a.rw, body: big, status: 413},
		{name: "wrong media type", method: "POST", path: "/organizations", token: a.rw, body: "{}", headers: []string{"Content-Type", "text/plain"}, status: 415},
		{name: "merge patch type on POST", method: "POST", path: "/organizations", token: a.rw, body: "{}", headers: []string{"Content-Type", "application/merge-patch+json"}, status: 415},
		{name: "required fields missing", method: "POST", path: "/organizations", token: a.rw, body: `{}`, status: 422, fields: []string{"name", "registration_number", "organization_type"}},
		{name: "unknown field", method: "POST", path: "/people", token: a.rw, body: `{"first_name":"A","last_name":"B","email":"x"}`, status: 422, fields: []string{"email"}},
		{name: "read-only field", method: "POST", path: "/people", token: a.rw, body: `{"first_name":"A","last_name":"B","id":"x"}`, status: 422, fields: []string{"id"}},
		{name: "read-only idp_id", method: "POST", path: "/organizations", token: a.rw, body: `{"name":"A","registration_number":"1","organization_type":"private","idp_id":"x"}`, status: 422, fields: []string{"idp_id"}},
		{name: "read-only field in patch", method: "PATCH", path: orgPath, token: a.rw, body: `{"created_by":"me"}`, status: 422, fields: []string{"created_by"}},
		{name: "wrong JSON type", method: "POST", path: "/people", token: a.rw, body: `{"first_name":1,"last_name":"B"}`, status: 422, fields: []string{"first_name"}},
		{name: "not a real date", method: "POST", path: "/people", token: a.rw, body: `{"first_name":"A","last_name":"B","date_of_birth":"2023-02-29"}`, status: 422, fields: []string{"date_of_birth"}},
		{name: "out of enum", method: "POST", path: "/organizations", token: a.rw, body: `{"name":"A","registration_number":"1","organization_type":"Private Company"}`, status: 422, fields: []string{"organization_type"}},
		{name: "unknown country", method: "POST", path: "/organizations", token: a.rw, body: `{"name":"A","registration_number":"1","organization_type":"private","country":"xx"}`, status: 422, fields: []string{"country"}},
		{name: "conflicting tax alias", method: "POST", path: "/organizations", token: a.rw, body: `{"name":"A","registration_number":"1","organization_type":"private","tax_registration_number":"1","tax_identification_number":"2"}`, status: 422, fields: []string{"tax_identification_number"}},
		{name: "required field removed by patch", method: "PATCH", path: personPath, token: a.rw, body: `{"first_name":null}`, status: 422, fields: []string{"first_name"}},
		{name: "relation type missing", method: "POST", path: personPath + orgPath, token: a.rw, status: 422, fields: []string{"relation_type"}},
		{name: "relation type not a token", method: "POST", path: personPath + orgPath + "?relation_type=Boss", token: a.rw, status: 422, fields: []string{"relation_type"}},
		{name: "enum filter", method: "GET", path: "/organizations?organization_type=big", token: a.ro, status: 422, fields: []string{"organization_type"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.expect(a.do(tt.method, tt.path, tt.token, tt.body, tt.headers...), tt.status)
			if tt.fields != nil {
				if got := r.Fields(); strings.Join(got, ",") != strings.Join(tt.fields, ",") {
					t.Errorf("fields = %v, want %v", got, tt.fields)
				}
			}
			if tt.header != "" && !strings.Contains(r.Header.Get(tt.header), tt.value) {
				t.Errorf("%s = %q, want %q", tt.header, r.Header.Get(tt.header), tt.value)
			}
		})
	}
	// None of the above changed anything.
	list := a.expect(a.do("GET", "/organizations", a.ro, nil), 200).List()
	if len(list) != 1 || list[0]["tax_registration_number"] != nil {
		t.Errorf("organizations after the failed calls: %v", list)
	}
}

func TestHTTPPublicPaths(t *testing.T) {
	a := newAPI(t)
	a.client.HTTP = http.DefaultClient // probes are not part of the API document
	a.expect(a.do("GET", "/healthz", "", nil), 200)
	ready := a.expect(a.do("GET", "/readyz", "", nil), 200).JSON()
	if ready["status"] != "ready" {
		t.Errorf("readyz = %v", ready)
	}
	doc := a.expect(a.do("GET", "/openapi.json", "", nil), 200).JSON()
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v", doc["openapi"])
	}
}

// openAPIClient checks every response against the service's OpenAPI
// document, so the document cannot drift from what the service does.
func openAPIClient(t *testing.T) *http.Client {
	return &http.Client{Transport: openapitest.New(t, openAPI).Transport(t, nil)}
}

// A database that goes away is a 503 with Retry-After, never a 500, and
// the service recovers when it returns; nothing half-written stays behind.
func TestHTTPDatabaseDown(t *testing.T) {
	dir := testharness.ServerDir(t)
	pg, err := devinfra.StartPostgres(t.Context(), devinfra.PostgresOptions{DataDir: filepath.Join(dir, "pg"), Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop() })
	issuer := authtest.NewIssuer(t, "https://registry.test")
	cfg := app.Config{
		Database: postgres.Config{URL: pg.URL, Schema: "parties", MaxConns: 4, StartupWait: time.Second},
		OIDC:     issuer.Config(),
		Timeout:  5 * time.Second,
	}
	handler, _, cleanup, err := app.Build(t.Context(), Spec(), cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	a := &api{t: t, client: apitest.Client{BaseURL: srv.URL, HTTP: openAPIClient(t)}, issuer: issuer, rw: issuer.ReadWrite(t), ro: issuer.ReadOnly(t)}
	a.expect(a.do("POST", "/organizations", a.rw, acme), 201)

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct{ method, path string }{{"GET", "/organizations"}, {"POST", "/people"}, {"POST", "/people/find"}} {
		r := a.expect(a.do(call.method, call.path, a.rw, `{"first_name":"A","last_name":"B"}`), 503)
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: 503 without Retry-After", call.method, call.path)
		}
	}
	probe := apitest.Client{BaseURL: srv.URL}.Do(t, "GET", "/readyz", "", nil)
	if probe.Status != 503 {
		t.Errorf("readyz = %d while the database is down", probe.Status)
	}

	pg, err = devinfra.StartPostgres(t.Context(), devinfra.PostgresOptions{DataDir: filepath.Join(dir, "pg"), Port: pg.Port, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	list := a.expect(a.do("GET", "/organizations", a.ro, nil), 200).List()
	people := a.expect(a.do("GET", "/people", a.ro, nil), 200).List()
	if len(list) != 1 || len(people) != 0 {
		t.Errorf("after the outage: %d organizations, %d people; want the acknowledged one and nothing half-written", len(list), len(people))
	}
}
