package parties

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

var acme = map[string]any{"name": "Acme AS", "registration_number": "912345678", "organization_type": "private", "country": "no"}

func TestHTTPOrganizations(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	created := a.Expect(a.Do("POST", "/organizations/", a.RW, acme), 201)
	org := created.JSON()
	id := org["id"].(string)
	if created.Header.Get("Location") != "/organizations/"+id {
		t.Errorf("Location = %q", created.Header.Get("Location"))
	}
	if org["created_by"] != "rw-client" || org["updated_by"] != "rw-client" || org["idp_id"] != nil {
		t.Errorf("audit fields: %s", created.Raw)
	}
	got := a.Expect(a.Do("GET", "/organizations/"+id, a.RO, nil), 200).JSON()
	if got["associated_people"] == nil || got["name"] != "Acme AS" {
		t.Errorf("get: %v", got)
	}
	a.Expect(a.Do("GET", "/organizations/"+id+"/", a.RO, nil), 200)

	dup := a.Expect(a.Do("POST", "/organizations", a.RW, acme), 409).JSON()
	if dup["existing_id"] != id || dup["type"] != httpx.ProblemTypePrefix+"duplicate" {
		t.Errorf("duplicate: %v", dup)
	}

	patched := a.Expect(a.Do("PATCH", "/organizations/"+id, a.RW, `{"tax_identification_number":"NO912345678MVA","country":"NO"}`,
		"Content-Type", "application/merge-patch+json"), 200).JSON()
	if patched["tax_registration_number"] != "NO912345678MVA" || patched["country"] != "no" || patched["tax_identification_number"] != nil {
		t.Errorf("patched: %v", patched)
	}
	removed := a.Expect(a.Do("PATCH", "/organizations/"+id, a.RW, `{"tax_registration_number":null}`), 200).JSON()
	if removed["tax_registration_number"] != nil {
		t.Errorf("null did not remove: %v", removed)
	}

	found := a.Expect(a.Do("POST", "/organization/find/", a.RO, map[string]any{"registration_number": "912345678", "country": "NO"}), 200).JSON()
	if found["id"] != id {
		t.Errorf("find: %v", found)
	}
	a.Expect(a.Do("POST", "/organizations/find", a.RO, map[string]any{"registration_number": "0", "country": "no"}), 404)

	a.Expect(a.Do("DELETE", "/organizations/"+id, a.RW, nil), 204)
	a.Expect(a.Do("GET", "/organizations/"+id, a.RO, nil), 404)
	a.Expect(a.Do("DELETE", "/organizations/"+id, a.RW, nil), 404)
}

func TestHTTPListPagination(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	for _, n := range []string{"1", "2", "3"} {
		a.Expect(a.Do("POST", "/organizations", a.RW, map[string]any{
			"name": "Org " + n, "registration_number": n, "organization_type": "public", "country": "se"}), 201)
	}
	a.Expect(a.Do("POST", "/organizations", a.RW, map[string]any{
		"name": "Other", "registration_number": "4", "organization_type": "private", "country": "se"}), 201)

	first := a.Expect(a.Do("GET", "/organizations?organization_type=public&country=SE&limit=2", a.RO, nil), 200)
	if len(first.List()) != 2 {
		t.Fatalf("page 1: %s", first.Raw)
	}
	link := first.Header.Get("Link")
	next := strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
	if !strings.HasPrefix(next, "/organizations?") || !strings.Contains(next, "organization_type=public") {
		t.Fatalf("Link = %q", link)
	}
	second := a.Expect(a.Do("GET", next, a.RO, nil), 200)
	if len(second.List()) != 1 || second.Header.Get("Link") != "" || second.List()[0]["registration_number"] != "3" {
		t.Fatalf("page 2: %s (Link %q)", second.Raw, second.Header.Get("Link"))
	}
	// A cursor only works with the filters it was issued for.
	swapped := strings.Replace(next, "organization_type=public", "organization_type=private", 1)
	a.Expect(a.Do("GET", swapped, a.RO, nil), 400)
	if got := a.Expect(a.Do("GET", "/people", a.RO, nil), 200); string(bytes.TrimSpace(got.Raw)) != "[]" {
		t.Errorf("empty list = %s", got.Raw)
	}
}

func TestHTTPPeopleAndLinks(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	org := a.Expect(a.Do("POST", "/organizations", a.RW, acme), 201).JSON()
	find := `{"first_name":"Kari","last_name":"Nordmann","date_of_birth":"1990-04-01"}`
	a.Expect(a.Do("POST", "/people/find", a.RO, find), 404)
	a.Expect(a.Do("POST", "/people/find?create=false", a.RO, find), 404)
	created := a.Expect(a.Do("POST", "/people/find?create=true", a.RW, find), 201)
	person := created.JSON()
	pid := person["id"].(string)
	if created.Header.Get("Location") != "/people/"+pid {
		t.Errorf("Location = %q", created.Header.Get("Location"))
	}
	again := a.Expect(a.Do("POST", "/people/find?create=true", a.RW, `{"first_name":"KARI","last_name":"nordmann","date_of_birth":"1990-04-01"}`), 200).JSON()
	if again["id"] != pid {
		t.Errorf("find-or-create twice made two people")
	}
	linkPath := "/people/" + pid + "/organizations/" + org["id"].(string)
	linked := a.Expect(a.Do("POST", linkPath+"?relation_type=employee", a.RW, nil), 201)
	if linked.Header.Get("Location") != linkPath+"?relation_type=employee" {
		t.Errorf("link Location = %q", linked.Header.Get("Location"))
	}
	link := linked.JSON()
	if link["person_id"] != pid || link["relation_type"] != "employee" || link["created_at"] == nil || len(link) != 4 {
		t.Errorf("link body: %v", link)
	}
	repeat := a.Expect(a.Do("POST", linkPath+"/?relation_type=employee", a.RW, nil), 200).JSON()
	if repeat["created_at"] != link["created_at"] {
		t.Errorf("repeat link body differs: %v", repeat)
	}
	got := a.Expect(a.Do("GET", "/people/"+pid, a.RO, nil), 200).JSON()
	orgs := got["associated_organizations"].([]any)
	if len(orgs) != 1 || orgs[0].(map[string]any)["relation_type"] != "employee" || orgs[0].(map[string]any)["name"] != "Acme AS" {
		t.Errorf("associated_organizations = %v", orgs)
	}
	people := a.Expect(a.Do("GET", "/organizations/"+org["id"].(string), a.RO, nil), 200).JSON()["associated_people"].([]any)
	if len(people) != 1 || people[0].(map[string]any)["date_of_birth"] != "1990-04-01" {
		t.Errorf("associated_people = %v", people)
	}
	list := a.Expect(a.Do("GET", "/people?first_name=kari&last_name=NORDMANN&date_of_birth=1990-04-01", a.RO, nil), 200).List()
	if len(list) != 1 || list[0]["associated_organizations"] != nil {
		t.Errorf("list = %v", list)
	}
	a.Expect(a.Do("DELETE", linkPath+"?relation_type=employee", a.RW, nil), 204)
	a.Expect(a.Do("DELETE", linkPath+"?relation_type=employee", a.RW, nil), 404)
	a.Expect(a.Do("DELETE", "/people/"+pid, a.RW, nil), 204)
}

// The contract's errors particular to these resources, one row each.
func TestHTTPErrors(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	org := a.Expect(a.Do("POST", "/organizations", a.RW, acme), 201).JSON()
	person := a.Expect(a.Do("POST", "/people", a.RW, `{"first_name":"Ola","last_name":"Nordmann"}`), 201).JSON()
	orgPath, personPath := "/organizations/"+org["id"].(string), "/people/"+person["id"].(string)
	missing := "/organizations/0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f"

	a.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "read-only token creates through find", Method: "POST", Path: "/people/find?create=true", ReadOnly: true, Body: `{"first_name":"A","last_name":"B"}`, Status: 403},
		{Name: "bad UUID in link path", Method: "POST", Path: "/people/x/organizations/y?relation_type=employee", Status: 400},
		{Name: "create flag not boolean", Method: "POST", Path: "/people/find?create=maybe", Body: `{"first_name":"A","last_name":"B"}`, Status: 400},
		{Name: "unknown path", Method: "GET", Path: "/organisations", ReadOnly: true, Status: 404},
		{Name: "link to unknown organization", Method: "POST", Path: personPath + missing + "?relation_type=employee", Status: 404},
		{Name: "duplicate organization", Method: "POST", Path: "/organizations", Body: acme, Status: 409},
		{Name: "merge patch type on POST", Method: "POST", Path: "/organizations", Body: "{}", Headers: []string{"Content-Type", "application/merge-patch+json"}, Status: 415},
		{Name: "required fields missing", Method: "POST", Path: "/organizations", Body: `{}`, Status: 422, Fields: []string{"name", "registration_number", "organization_type"}},
		{Name: "read-only field", Method: "POST", Path: "/people", Body: `{"first_name":"A","last_name":"B","id":"x"}`, Status: 422, Fields: []string{"id"}},
		{Name: "read-only idp_id", Method: "POST", Path: "/organizations", Body: `{"name":"A","registration_number":"1","organization_type":"private","idp_id":"x"}`, Status: 422, Fields: []string{"idp_id"}},
		{Name: "wrong JSON type", Method: "POST", Path: "/people", Body: `{"first_name":1,"last_name":"B"}`, Status: 422, Fields: []string{"first_name"}},
		{Name: "not a real date", Method: "POST", Path: "/people", Body: `{"first_name":"A","last_name":"B","date_of_birth":"2023-02-29"}`, Status: 422, Fields: []string{"date_of_birth"}},
		{Name: "born in the year 0", Method: "POST", Path: "/people", Body: `{"first_name":"A","last_name":"B","date_of_birth":"0000-02-29"}`, Status: 422, Fields: []string{"date_of_birth"}},
		{Name: "found by a birth in the year 0", Method: "POST", Path: "/people/find?create=true", Body: `{"first_name":"A","last_name":"B","date_of_birth":"0000-01-01"}`, Status: 422, Fields: []string{"date_of_birth"}},
		{Name: "listed by a birth in the year 0", Method: "GET", Path: "/people?date_of_birth=0000-01-01", ReadOnly: true, Status: 422, Fields: []string{"date_of_birth"}},
		{Name: "out of enum", Method: "POST", Path: "/organizations", Body: `{"name":"A","registration_number":"1","organization_type":"Private Company"}`, Status: 422, Fields: []string{"organization_type"}},
		{Name: "unknown country", Method: "POST", Path: "/organizations", Body: `{"name":"A","registration_number":"1","organization_type":"private","country":"xx"}`, Status: 422, Fields: []string{"country"}},
		{Name: "conflicting tax alias", Method: "POST", Path: "/organizations", Body: `{"name":"A","registration_number":"1","organization_type":"private","tax_registration_number":"1","tax_identification_number":"2"}`, Status: 422, Fields: []string{"tax_identification_number"}},
		{Name: "required field removed by patch", Method: "PATCH", Path: personPath, Body: `{"first_name":null}`, Status: 422, Fields: []string{"first_name"}},
		{Name: "relation type missing", Method: "POST", Path: personPath + orgPath, Status: 422, Fields: []string{"relation_type"}},
		{Name: "relation type not a token", Method: "POST", Path: personPath + orgPath + "?relation_type=Boss", Status: 422, Fields: []string{"relation_type"}},
		{Name: "enum filter", Method: "GET", Path: "/organizations?organization_type=big", ReadOnly: true, Status: 422, Fields: []string{"organization_type"}},
	})
	// None of the above changed anything.
	list := a.Expect(a.Do("GET", "/organizations", a.RO, nil), 200).List()
	if len(list) != 1 || list[0]["tax_registration_number"] != nil {
		t.Errorf("organizations after the failed calls: %v", list)
	}
}

// A database that goes away is a 503 with Retry-After, never a 500, and
// the service recovers when it returns; nothing half-written stays behind.
func TestHTTPDatabaseDown(t *testing.T) {
	t.Parallel()
	servicetest.DatabaseDown(t, Spec(), servicetest.Outage{
		Before: func(s *servicetest.Service) { s.Call(201, "POST", "/organizations", s.RW, acme) },
		During: []servicetest.Request{
			{Method: "GET", Path: "/organizations"},
			{Method: "POST", Path: "/people", Body: `{"first_name":"A","last_name":"B"}`},
			{Method: "POST", Path: "/people/find", Body: `{"first_name":"A","last_name":"B"}`},
		},
		After: func(s *servicetest.Service) {
			orgs := s.Call(200, "GET", "/organizations", s.RO, nil).List()
			people := s.Call(200, "GET", "/people", s.RO, nil).List()
			if len(orgs) != 1 || len(people) != 0 {
				t.Errorf("after the outage: %d organizations, %d people; want the acknowledged one and nothing half-written", len(orgs), len(people))
			}
		},
	})
}

// Every single-resource answer carries a strong ETag of its body; a write
// whose If-Match names another one is a 412 and changes nothing, and a GET
// whose If-None-Match names the current one is a 304.
func TestHTTPValidators(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	created := a.Call(201, "POST", "/organizations", a.RW, acme)
	path := "/organizations/" + created.JSON()["id"].(string)
	first := created.Header.Get("ETag")
	if first == "" || a.Call(200, "GET", path, a.RO, nil).Header.Get("ETag") != first {
		t.Fatalf("ETag of the create %q differs from the GET's", first)
	}
	a.Call(304, "GET", path, a.RO, nil, "If-None-Match", first)

	patched := a.Call(200, "PATCH", path, a.RW, `{"name":"Acme Holding AS"}`, "If-Match", first)
	second := patched.Header.Get("ETag")
	if second == "" || second == first {
		t.Fatalf("ETag after the change: %q (was %q)", second, first)
	}
	stale := a.Call(412, "PATCH", path, a.RW, `{"name":"Lost Update AS"}`, "If-Match", first)
	if stale.Header.Get("ETag") != second {
		t.Errorf("412 should carry the current ETag %q, got %q", second, stale.Header.Get("ETag"))
	}
	a.Call(412, "DELETE", path, a.RW, nil, "If-Match", first)
	if got := a.Call(200, "GET", path, a.RO, nil).JSON(); got["name"] != "Acme Holding AS" {
		t.Errorf("a refused write changed the resource: %v", got)
	}
	a.Call(200, "GET", path, a.RO, nil, "If-None-Match", first)

	// Linking a person changes the organization's representation, and so
	// its ETag, without touching its own row.
	person := a.Call(201, "POST", "/people", a.RW, `{"first_name":"Ola","last_name":"Nordmann"}`).JSON()
	a.Call(201, "POST", "/people/"+person["id"].(string)+path+"?relation_type=employee", a.RW, nil)
	third := a.Call(200, "GET", path, a.RO, nil).Header.Get("ETag")
	if third == second {
		t.Error("a new link left the organization's ETag as it was")
	}
	a.Call(412, "PATCH", path, a.RW, `{"name":"X"}`, "If-Match", second)
	a.Call(200, "PATCH", path, a.RW, `{"name":"X"}`, "If-Match", `"other", `+third)
	a.Call(204, "DELETE", "/people/"+person["id"].(string), a.RW, nil, "If-Match", "*")
}

// A create retried with its Idempotency-Key is answered once: the same
// answer again, never a second organization or a 409 for its own write.
func TestHTTPIdempotencyKey(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	first := a.Call(201, "POST", "/organizations", a.RW, acme, "Idempotency-Key", "order-42")
	again := a.Call(201, "POST", "/organizations", a.RW, acme, "Idempotency-Key", "order-42")
	if string(again.Raw) != string(first.Raw) || again.Header.Get("Location") != first.Header.Get("Location") {
		t.Errorf("replay: %s %s", again.Raw, again.Header.Get("Location"))
	}
	other := map[string]any{"name": "Other AS", "registration_number": "1", "organization_type": "private"}
	a.Call(422, "POST", "/organizations", a.RW, other, "Idempotency-Key", "order-42")
	created := a.Call(201, "POST", "/people/find?create=true", a.RW, `{"first_name":"Kari","last_name":"Nordmann"}`, "Idempotency-Key", "p-1")
	replayed := a.Call(201, "POST", "/people/find?create=true", a.RW, `{"first_name":"Kari","last_name":"Nordmann"}`, "Idempotency-Key", "p-1")
	if replayed.JSON()["id"] != created.JSON()["id"] {
		t.Error("a replayed find-or-create answered another person")
	}
	if n := len(a.Call(200, "GET", "/organizations", a.RO, nil).List()); n != 1 {
		t.Errorf("%d organizations, want 1", n)
	}
}

// A row held by a long transaction: writes queued behind it fail with 503
// and Retry-After once the lock timeout passes, instead of holding
// connections, and an unrelated read is answered meanwhile.
func TestHTTPLockedRowDoesNotStarveOthers(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	locked := a.Call(201, "POST", "/organizations", a.RW, acme).JSON()["id"].(string)
	other := a.Call(201, "POST", "/organizations", a.RW, map[string]any{
		"name": "Other AS", "registration_number": "2", "organization_type": "private"}).JSON()["id"].(string)
	holder, err := a.Built.Store.Pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(t.Context(), `SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE`, locked); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	statuses := make(chan testkit.Response, 40)
	for range 40 {
		wg.Go(func() {
			statuses <- a.Client.Do(t, "PATCH", "/organizations/"+locked, a.RW, `{"name":"Busy AS"}`)
		})
	}
	// While the writes wait on the lock, a read of another organization
	// is served (the lock is still held: the transaction is open).
	a.Call(200, "GET", "/organizations/"+other, a.RO, nil)
	wg.Wait()
	close(statuses)
	for r := range statuses {
		testkit.Expect(t, r, 503)
		if r.Header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
	}
	if err := holder.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	a.Call(200, "PATCH", "/organizations/"+locked, a.RW, `{"name":"Free AS"}`)
}

// The document and the common error rows, as every service checks them.
func TestConformance(t *testing.T) {
	t.Parallel()
	servicetest.Conformance(t, Spec(), ownership)
}

// A find answered from the cache sends the JSON it stored, byte for byte
// what the first find sent (and the same ETag), and a write still shows
// in the next find.
func TestHTTPCachedFindIsTheSameAnswer(t *testing.T) {
	a := servicetest.StartParallel(t, Spec())
	org := a.Expect(a.Do("POST", "/organizations", a.RW, acme), 201).JSON()
	person := a.Expect(a.Do("POST", "/people", a.RW, map[string]any{"first_name": "Ada", "last_name": "Lovelace", "date_of_birth": "1815-12-10"}), 201).JSON()
	for _, c := range []struct {
		path     string
		criteria map[string]any
	}{
		{"/organizations/find", map[string]any{"registration_number": "912345678", "country": "no"}},
		{"/people/find", map[string]any{"first_name": "ada", "last_name": "LOVELACE", "date_of_birth": "1815-12-10"}},
	} {
		first := a.Expect(a.Do("POST", c.path, a.RO, c.criteria), 200)
		cached := a.Expect(a.Do("POST", c.path, a.RO, c.criteria), 200)
		if !bytes.Equal(first.Raw, cached.Raw) || first.Header.Get("ETag") != cached.Header.Get("ETag") ||
			cached.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: cached answer differs:\n%s %s\n%s %s", c.path, first.Raw, first.Header.Get("ETag"), cached.Raw, cached.Header.Get("ETag"))
		}
	}
	a.Expect(a.Do("PATCH", "/organizations/"+org["id"].(string), a.RW, `{"name":"Acme Renamed AS"}`,
		"Content-Type", "application/merge-patch+json"), 200)
	if got := a.Expect(a.Do("POST", "/organizations/find", a.RO, map[string]any{"registration_number": "912345678", "country": "no"}), 200).JSON(); got["name"] != "Acme Renamed AS" {
		t.Errorf("find after a rename: %v", got)
	}
	a.Expect(a.Do("PATCH", "/people/"+person["id"].(string), a.RW, `{"last_name":"Byron"}`,
		"Content-Type", "application/merge-patch+json"), 200)
	a.Expect(a.Do("POST", "/people/find", a.RO, map[string]any{"first_name": "Ada", "last_name": "Lovelace", "date_of_birth": "1815-12-10"}), 404)
}

// Only the client that created a row (or an admin) changes or deletes it;
// a link is its maker's.
func ownership(t *testing.T, s *servicetest.Service) []servicetest.OwnerCase {
	org := "/organizations/" + s.Call(201, "POST", "/organizations", s.RW, acme).JSON()["id"].(string)
	person := "/people/" + s.Call(201, "POST", "/people", s.RW,
		map[string]any{"first_name": "Ada", "last_name": "Owner", "date_of_birth": "1980-01-02"}).JSON()["id"].(string)
	link := person + "/organizations/" + strings.TrimPrefix(org, "/organizations/") + "?relation_type=employee"
	s.Call(201, "POST", link, s.RW, nil)
	return []servicetest.OwnerCase{
		{Name: "patch organization", Method: "PATCH", Path: org, Body: map[string]any{"name": "Taken"}, Read: org, AdminStatus: 200},
		{Name: "patch person", Method: "PATCH", Path: person, Body: map[string]any{"first_name": "Eve"}, Read: person, AdminStatus: 200},
		{Name: "unlink", Method: "DELETE", Path: link, Read: person, AdminStatus: 204},
		{Name: "delete person", Method: "DELETE", Path: person, Read: person, AdminStatus: 204},
		{Name: "delete organization", Method: "DELETE", Path: org, Read: org, AdminStatus: 204},
	}
}
