package assets

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/apitest"
	"github.com/assetregistry/registry/pkg/openapitest"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/problem"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/pkg/servicetest"
)

var liftmaster = map[string]any{"brand": "Liftmaster", "model": "LM-200", "version": "2",
	"external_ids": []map[string]any{{"source_system": "erp", "external_id": "AT-1"}}}

// addDocument makes a document exist at the documents stand-in.
func addDocument(s *servicetest.Service, contentType string) string {
	id := uuid.New()
	s.StandIn("documents").Add("document", id, refs.Attrs{"content_type": contentType, "document_type": "manual",
		"size": "10", "sha256": strings.Repeat("0", 64), "created_at": time.Now().UTC().Format(time.RFC3339Nano), "created_by": "c"})
	return id.String()
}

func TestHTTPAssetTypes(t *testing.T) {
	s := servicetest.Start(t, Spec())
	created := s.Call(201, "POST", "/asset_types/", s.RW, liftmaster)
	at := created.JSON()
	id := at["id"].(string)
	path := "/asset_types/" + id
	if created.Header.Get("Location") != path || at["created_by"] != "rw-client" || at["thumbnail"] != nil ||
		at["documents"] == nil || len(at["external_ids"].([]any)) != 1 {
		t.Fatalf("created: %s (Location %q)", created.Raw, created.Header.Get("Location"))
	}
	s.Call(200, "GET", path+"/", s.RO, nil)
	dup := s.Call(409, "POST", "/asset_types", s.RW, map[string]any{"brand": "LIFTMASTER", "model": "lm-200", "version": "2"}).JSON()
	if dup["existing_id"] != id || dup["type"] != problem.TypePrefix+"duplicate" {
		t.Errorf("duplicate: %v", dup)
	}
	s.Call(201, "POST", "/asset_types", s.RW, map[string]any{"brand": "Liftmaster", "model": "LM-200"})

	matches := s.Call(200, "GET", "/asset_types/by_brand_and_model?brand=liftmaster&model=LM-200", s.RO, nil).List()
	if len(matches) != 2 || matches[0]["id"] != id || matches[0]["documents"] != nil {
		t.Errorf("by_brand_and_model: %v", matches)
	}
	if one := s.Call(200, "GET", "/asset_types/by_brand_and_model/?brand=Liftmaster&model=LM-200&version=2", s.RO, nil).List(); len(one) != 1 {
		t.Errorf("by_brand_and_model with version: %v", one)
	}
	if none := s.Call(200, "GET", "/asset_types/by_brand_and_model?brand=Nobody&model=X", s.RO, nil); string(none.Raw) != "[]\n" {
		t.Errorf("no match: %q", none.Raw)
	}
	if byExternal := s.Call(200, "GET", "/asset_types?source_system=erp&external_id=AT-1", s.RO, nil).List(); len(byExternal) != 1 || byExternal[0]["id"] != id {
		t.Errorf("by external id: %v", byExternal)
	}

	patched := s.Call(200, "PATCH", path, s.RW, `{"emission_class":"Stage V","external_ids":null}`, "Content-Type", "application/merge-patch+json").JSON()
	if patched["emission_class"] != "Stage V" || len(patched["external_ids"].([]any)) != 0 {
		t.Errorf("patched: %v", patched)
	}

	manual, photo := addDocument(s, "application/pdf"), addDocument(s, "image/png")
	attached := s.Call(201, "POST", path+"/documents", s.RW, map[string]any{"document_id": manual})
	if attached.Header.Get("Location") != path+"/documents/"+manual {
		t.Errorf("attach Location = %q", attached.Header.Get("Location"))
	}
	docs := attached.JSON()["documents"].([]any)
	if len(docs) != 1 || docs[0].(map[string]any)["id"] != manual || docs[0].(map[string]any)["size"] != float64(10) {
		t.Errorf("documents: %v", docs)
	}
	s.Call(200, "POST", path+"/documents/", s.RW, map[string]any{"document_id": manual})
	thumb := s.Call(200, "PUT", path+"/thumbnail", s.RW, map[string]any{"document_id": photo}).JSON()
	if thumb["thumbnail_document_id"] != photo || thumb["thumbnail"].(map[string]any)["content_type"] != "image/png" {
		t.Errorf("thumbnail: %v", thumb)
	}
	got := s.Call(200, "GET", path, s.RO, nil).JSON()
	if len(got["documents"].([]any)) != 1 || got["thumbnail"] == nil {
		t.Errorf("get: %v", got)
	}
	s.Call(204, "DELETE", path+"/documents/"+manual, s.RW, nil)
	s.Call(404, "DELETE", path+"/documents/"+manual, s.RW, nil)
	s.Call(204, "DELETE", path, s.RW, nil)
	s.Call(404, "GET", path, s.RO, nil)
}

func TestHTTPAssets(t *testing.T) {
	s := servicetest.Start(t, Spec())
	typeID := s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	person := uuid.New()
	s.StandIn("parties").Add("person", person, nil)

	created := s.Call(201, "POST", "/assets", s.RW, map[string]any{"serial_number": "SN-1", "asset_type_id": typeID,
		"production_year": 2020, "status": "in service", "responsible_person_id": person})
	a := created.JSON()
	id := a["id"].(string)
	if created.Header.Get("Location") != "/assets/"+id || a["responsible_person_id"] != person.String() || a["production_year"] != float64(2020) {
		t.Fatalf("created: %s", created.Raw)
	}
	dup := s.Call(409, "POST", "/assets", s.RW, map[string]any{"serial_number": "SN-1", "asset_type_id": typeID}).JSON()
	if dup["existing_id"] != id {
		t.Errorf("duplicate: %v", dup)
	}

	criteria := map[string]any{"serial_number": "SN-2", "brand": "liftmaster", "model": "LM-200", "version": "2"}
	s.Call(404, "POST", "/assets/find", s.RO, criteria)
	made := s.Call(201, "POST", "/assets/find?create=true", s.RW, criteria)
	if made.Header.Get("Location") != "/assets/"+made.JSON()["id"].(string) {
		t.Errorf("find-or-create Location = %q", made.Header.Get("Location"))
	}
	if again := s.Call(200, "POST", "/assets/find/?create=true", s.RW, criteria).JSON(); again["id"] != made.JSON()["id"] {
		t.Errorf("find-or-create twice made two assets")
	}
	if found := s.Call(200, "POST", "/assets/find", s.RO, map[string]any{"serial_number": "SN-1"}).JSON(); found["id"] != id {
		t.Errorf("find by serial number: %v", found)
	}

	list := s.Call(200, "GET", "/assets?asset_type_id="+typeID+"&responsible_person_id="+person.String(), s.RO, nil).List()
	if len(list) != 1 || list[0]["id"] != id {
		t.Errorf("list: %v", list)
	}
	patched := s.Call(200, "PATCH", "/assets/"+id, s.RW, `{"status":null,"responsible_person_id":null,"external_ids":[{"source_system":"erp","external_id":"A-1"}]}`,
		"Content-Type", "application/merge-patch+json").JSON()
	if patched["status"] != nil || patched["responsible_person_id"] != nil || len(patched["external_ids"].([]any)) != 1 {
		t.Errorf("patched: %v", patched)
	}
	if byExternal := s.Call(200, "GET", "/assets?source_system=erp&external_id=A-1", s.RO, nil).List(); len(byExternal) != 1 {
		t.Errorf("by external id: %v", byExternal)
	}
	still := s.Call(409, "DELETE", "/asset_types/"+typeID, s.RW, nil).JSON()
	if still["type"] != problem.TypePrefix+"still-referenced" || !strings.Contains(still["detail"].(string), id) {
		t.Errorf("deleting a type with assets: %v", still)
	}
	s.Call(204, "DELETE", "/assets/"+id, s.RW, nil)
	s.Call(404, "GET", "/assets/"+id, s.RO, nil)
}

// The bundled document is a valid OpenAPI 3.1 document whose references
// resolve, and it lists exactly the routes the router has.
func TestDocument(t *testing.T) {
	openapitest.New(t, servicetest.Document(t, Spec()))
	servicetest.RoutesMatchDocument(t, Spec())
}

// The contract's errors that every operation answers the same way.
func TestHTTPErrorRows(t *testing.T) {
	servicetest.ErrorRows(t, servicetest.Start(t, Spec()), Spec())
}

// The contract's errors particular to these resources, one row each.
func TestHTTPErrors(t *testing.T) {
	s := servicetest.Start(t, Spec())
	at := s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()
	typeID := at["id"].(string)
	typePath := "/asset_types/" + typeID
	s.Call(201, "POST", "/asset_types", s.RW, map[string]any{"brand": "Liftmaster", "model": "LM-200", "version": "3"})
	asset := s.Call(201, "POST", "/assets", s.RW, map[string]any{"serial_number": "SN-1", "asset_type_id": typeID}).JSON()
	assetPath := "/assets/" + asset["id"].(string)
	other := s.Call(201, "POST", "/asset_types", s.RW, map[string]any{"brand": "Hoistco", "model": "H1"}).JSON()["id"].(string)
	s.Call(201, "POST", "/assets", s.RW, map[string]any{"serial_number": "SN-1", "asset_type_id": other})
	pdf := addDocument(s, "application/pdf")
	missing := uuid.New().String()
	next := time.Now().UTC().Year() + 1

	// Each row is one call, with the read-write token unless ro; status is
	// the answer, problem its type and fields what it names.
	rows := []struct {
		name, method, path string
		ro                 bool
		body               any
		status             int
		problem            string
		fields             []string
	}{
		{name: "brand and model required", method: "POST", path: "/asset_types", body: `{}`, status: 422, fields: []string{"brand", "model"}},
		{name: "documents are read-only", method: "POST", path: "/asset_types", body: `{"brand":"A","model":"B","documents":[]}`, status: 422, fields: []string{"documents"}},
		{name: "thumbnail is read-only", method: "PATCH", path: typePath, body: `{"thumbnail":null}`, status: 422, fields: []string{"thumbnail"}},
		{name: "duplicate type, other case", method: "POST", path: "/asset_types", body: map[string]any{"brand": "liftMASTER", "model": "LM-200", "version": "2"}, status: 409, problem: "duplicate"},
		{name: "external id held by another type", method: "POST", path: "/asset_types", body: map[string]any{"brand": "X", "model": "Y",
			"external_ids": []map[string]any{{"source_system": "erp", "external_id": "AT-1"}}}, status: 409, problem: "duplicate"},
		{name: "external id without its system", method: "POST", path: "/asset_types", body: `{"brand":"X","model":"Y","external_ids":[{"external_id":"1"}]}`, status: 422, fields: []string{"external_ids[0].source_system"}},
		{name: "unknown member of an external id", method: "POST", path: "/asset_types", body: `{"brand":"X","model":"Y","external_ids":[{"source_system":"a","external_id":"1","id":"2"}]}`, status: 422, fields: []string{"external_ids[0].id"}},
		{name: "unknown member of a patched external id", method: "PATCH", path: typePath, body: `{"external_ids":[{"source_system":"a","External_Id":"1"}]}`, status: 422, fields: []string{"external_ids[0].External_Id"}},
		{name: "pair given twice", method: "PATCH", path: typePath, body: `{"external_ids":[{"source_system":"a","external_id":"1"},{"source_system":"a","external_id":"1"}]}`, status: 422, fields: []string{"external_ids[1]"}},
		{name: "brand removed by patch", method: "PATCH", path: typePath, body: `{"brand":null}`, status: 422, fields: []string{"brand"}},
		{name: "patch onto another type's identity", method: "PATCH", path: typePath, body: `{"version":"3"}`, status: 409, problem: "duplicate"},
		{name: "by_brand_and_model without model", method: "GET", path: "/asset_types/by_brand_and_model?brand=Liftmaster", ro: true, status: 422, fields: []string{"model"}},
		{name: "by_brand_and_model blank brand", method: "GET", path: "/asset_types/by_brand_and_model?brand=%20&model=x", ro: true, status: 422, fields: []string{"brand"}},
		{name: "external_id filter without source_system", method: "GET", path: "/asset_types?external_id=1", ro: true, status: 422, fields: []string{"source_system"}},
		{name: "attach a document that does not exist", method: "POST", path: typePath + "/documents", body: map[string]any{"document_id": missing}, status: 422, fields: []string{"document_id"}},
		{name: "attach without document_id", method: "POST", path: typePath + "/documents", body: `{}`, status: 422, fields: []string{"document_id"}},
		{name: "document_id not a UUID", method: "POST", path: typePath + "/documents", body: `{"document_id":"{` + missing + `}"}`, status: 422, fields: []string{"document_id"}},
		{name: "document_id a number", method: "PUT", path: typePath + "/thumbnail", body: `{"document_id":7}`, status: 422, fields: []string{"document_id"}},
		{name: "attach to an unknown type", method: "POST", path: "/asset_types/" + missing + "/documents", body: map[string]any{"document_id": pdf}, status: 404},
		{name: "detach what is not attached", method: "DELETE", path: typePath + "/documents/" + pdf, status: 404},
		{name: "detach with a malformed document id", method: "DELETE", path: typePath + "/documents/x", status: 400},
		{name: "thumbnail not an image", method: "PUT", path: typePath + "/thumbnail", body: map[string]any{"document_id": pdf}, status: 422, fields: []string{"document_id"}},
		{name: "thumbnail that does not exist", method: "PUT", path: typePath + "/thumbnail", body: map[string]any{"document_id": missing}, status: 422, fields: []string{"document_id"}},
		{name: "thumbnail of an unknown type", method: "PUT", path: "/asset_types/" + missing + "/thumbnail", body: map[string]any{"document_id": pdf}, status: 404},
		{name: "thumbnail not an image, by patch", method: "PATCH", path: typePath, body: map[string]any{"thumbnail_document_id": pdf}, status: 422, fields: []string{"thumbnail_document_id"}},
		{name: "type with assets", method: "DELETE", path: typePath, status: 409, problem: "still-referenced"},

		{name: "serial number and type required", method: "POST", path: "/assets", body: `{}`, status: 422, fields: []string{"serial_number", "asset_type_id"}},
		{name: "type that does not exist", method: "POST", path: "/assets", body: map[string]any{"serial_number": "S", "asset_type_id": missing}, status: 422, fields: []string{"asset_type_id"}},
		{name: "person that does not exist", method: "POST", path: "/assets", body: map[string]any{"serial_number": "S", "asset_type_id": typeID, "responsible_person_id": missing}, status: 422, fields: []string{"responsible_person_id"}},
		{name: "production year before 1900", method: "POST", path: "/assets", body: map[string]any{"serial_number": "S", "asset_type_id": typeID, "production_year": 1899}, status: 422, fields: []string{"production_year"}},
		{name: "production year after next year", method: "POST", path: "/assets", body: map[string]any{"serial_number": "S", "asset_type_id": typeID, "production_year": next + 1}, status: 422, fields: []string{"production_year"}},
		{name: "production year not an integer", method: "POST", path: "/assets", body: `{"serial_number":"S","asset_type_id":"` + typeID + `","production_year":"2020"}`, status: 422, fields: []string{"production_year"}},
		{name: "duplicate serial number in the type", method: "POST", path: "/assets", body: map[string]any{"serial_number": "SN-1", "asset_type_id": typeID}, status: 409, problem: "duplicate"},
		{name: "patch to a type that does not exist", method: "PATCH", path: assetPath, body: map[string]any{"asset_type_id": missing}, status: 422, fields: []string{"asset_type_id"}},
		{name: "patch to a person that does not exist", method: "PATCH", path: assetPath, body: map[string]any{"responsible_person_id": missing}, status: 422, fields: []string{"responsible_person_id"}},
		{name: "serial number removed by patch", method: "PATCH", path: assetPath, body: `{"serial_number":null}`, status: 422, fields: []string{"serial_number"}},
		{name: "list by a malformed type id", method: "GET", path: "/assets?asset_type_id=x", ro: true, status: 400},

		{name: "find without serial number", method: "POST", path: "/assets/find", ro: true, body: `{"brand":"Liftmaster","model":"LM-200"}`, status: 422, fields: []string{"serial_number"}},
		{name: "find with brand but no model", method: "POST", path: "/assets/find", ro: true, body: `{"serial_number":"SN-1","brand":"Liftmaster"}`, status: 422, fields: []string{"model"}},
		{name: "find matching nothing", method: "POST", path: "/assets/find?create=false", ro: true, body: `{"serial_number":"SN-404"}`, status: 404},
		{name: "find matching two types", method: "POST", path: "/assets/find", ro: true, body: `{"serial_number":"SN-1"}`, status: 409, problem: "ambiguous-match"},
		{name: "create in a type that does not exist", method: "POST", path: "/assets/find?create=true", body: `{"serial_number":"SN-9","brand":"Nobody","model":"X"}`, status: 422, fields: []string{"brand", "model"}},
		{name: "create without naming a type", method: "POST", path: "/assets/find?create=true", body: `{"serial_number":"SN-9"}`, status: 422, fields: []string{"brand", "model"}},
		{name: "create in one of several versions", method: "POST", path: "/assets/find?create=true", body: `{"serial_number":"SN-9","brand":"Liftmaster","model":"LM-200"}`, status: 409, problem: "ambiguous-match"},
		{name: "read-only token creates through find", method: "POST", path: "/assets/find?create=true", ro: true, body: `{"serial_number":"SN-9"}`, status: 403},
		{name: "create flag not boolean", method: "POST", path: "/assets/find?create=1", body: `{"serial_number":"SN-9"}`, status: 400},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			token := s.RW
			if tt.ro {
				token = s.RO
			}
			r := s.Call(tt.status, tt.method, tt.path, token, tt.body)
			if tt.fields != nil && strings.Join(r.Fields(), ",") != strings.Join(tt.fields, ",") {
				t.Errorf("fields = %v, want %v", r.Fields(), tt.fields)
			}
			if tt.problem != "" && r.JSON()["type"] != problem.TypePrefix+tt.problem {
				t.Errorf("type = %v, want %s", r.JSON()["type"], tt.problem)
			}
		})
	}
	// None of the above changed anything.
	if types := s.Call(200, "GET", "/asset_types", s.RO, nil).List(); len(types) != 3 || len(types[0]["external_ids"].([]any)) != 1 ||
		types[0]["thumbnail_document_id"] != nil {
		t.Errorf("asset types after the failed calls: %v", types)
	}
	if assets := s.Call(200, "GET", "/assets", s.RO, nil).List(); len(assets) != 2 || assets[0]["responsible_person_id"] != nil {
		t.Errorf("assets after the failed calls: %v", assets)
	}
	if got := s.Call(200, "GET", typePath, s.RO, nil).JSON(); len(got["documents"].([]any)) != 0 {
		t.Errorf("documents after the failed calls: %v", got["documents"])
	}
}

// A peer that cannot answer makes the write that needs it a 503 with
// Retry-After, never a 500 or a hang, and the write leaves nothing.
func TestHTTPPeerDown(t *testing.T) {
	dead := "http://" + servicetest.Unreachable(t)
	s := servicetest.Start(t, Spec(), func(c *servicekit.Config) {
		c.Peers = peer.Config{URLs: map[string]*string{"parties": &dead, "documents": &dead}, Timeout: 2 * time.Second,
			TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "x"})}
	})
	typeID := s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	for _, call := range []struct{ method, path, body string }{
		{"POST", "/assets", `{"serial_number":"S","asset_type_id":"` + typeID + `","responsible_person_id":"` + uuid.NewString() + `"}`},
		{"POST", "/asset_types/" + typeID + "/documents", `{"document_id":"` + uuid.NewString() + `"}`},
		{"PUT", "/asset_types/" + typeID + "/thumbnail", `{"document_id":"` + uuid.NewString() + `"}`},
	} {
		r := s.Call(503, call.method, call.path, s.RW, call.body)
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: 503 without Retry-After", call.method, call.path)
		}
	}
	// What needs no peer still works.
	s.Call(201, "POST", "/assets", s.RW, map[string]any{"serial_number": "S", "asset_type_id": typeID})
	if assets := s.Call(200, "GET", "/assets", s.RO, nil).List(); len(assets) != 1 {
		t.Errorf("assets = %v", assets)
	}
}

func TestHTTPPublicPaths(t *testing.T) {
	s := servicetest.Start(t, Spec())
	plain := apitest.Client{BaseURL: s.Client.BaseURL} // probes are not part of the API document
	s.Expect(plain.Do(t, "GET", "/healthz", "", nil), 200)
	s.Expect(plain.Do(t, "GET", "/readyz", "", nil), 200)
	// The internal routes of the reference protocol need the internal scope.
	s.Expect(plain.Do(t, "POST", refs.ExistsPath, s.RW, map[string]any{"kind": "asset", "ids": []string{}}), 403)
}

// A database that goes away is a 503 with Retry-After, never a 500, and
// the service recovers when it returns; nothing half-written stays behind.
func TestHTTPDatabaseDown(t *testing.T) {
	servicetest.DatabaseDown(t, Spec(), servicetest.Outage{
		Before: func(s *servicetest.Service) { s.Call(201, "POST", "/asset_types", s.RW, liftmaster) },
		During: []servicetest.Request{
			{Method: "GET", Path: "/asset_types"},
			{Method: "GET", Path: "/asset_types/by_brand_and_model?" + url.Values{"brand": {"Liftmaster"}, "model": {"LM-200"}}.Encode()},
			{Method: "POST", Path: "/assets", Body: map[string]any{"serial_number": "S", "asset_type_id": uuid.NewString()}},
			{Method: "POST", Path: "/assets/find?create=true", Body: map[string]any{"serial_number": "S", "brand": "Liftmaster", "model": "LM-200"}},
		},
		// The acknowledged asset type is there, and nothing half-written.
		After: func(s *servicetest.Service) {
			for path, want := range map[string]int{"/asset_types": 1, "/assets": 0} {
				if got := len(s.Call(200, "GET", path, s.RO, nil).List()); got != want {
					t.Errorf("after the outage %s lists %d, want %d", path, got, want)
				}
			}
		},
	})
}

// Single-resource answers carry a strong ETag; writes whose If-Match names
// another one are a 412 and change nothing; attaching a document changes
// the asset type's ETag, and a detach checks it.
func TestHTTPValidators(t *testing.T) {
	s := servicetest.Start(t, Spec())
	created := s.Call(201, "POST", "/asset_types", s.RW, liftmaster)
	path := created.Header.Get("Location")
	current := func() string { return s.Call(200, "GET", path, s.RO, nil).Header.Get("ETag") }
	first := current()
	if first == "" || created.Header.Get("ETag") != first {
		t.Fatalf("ETag of the GET %q differs from the create's %q", first, created.Header.Get("ETag"))
	}
	s.Call(304, "GET", path, s.RO, nil, "If-None-Match", first)
	manual := addDocument(s, "application/pdf")
	second := s.Call(201, "POST", path+"/documents", s.RW, map[string]any{"document_id": manual}).Header.Get("ETag")
	if second == first || current() != second {
		t.Fatalf("attaching left the ETag %q", first)
	}
	s.Call(412, "PATCH", path, s.RW, `{"emission_class":"V"}`, "If-Match", first)
	s.Call(412, "DELETE", path+"/documents/"+manual, s.RW, nil, "If-Match", first)
	s.Call(412, "DELETE", path, s.RW, nil, "If-Match", first)
	if current() != second {
		t.Error("a refused write changed the asset type")
	}
	s.Call(204, "DELETE", path+"/documents/"+manual, s.RW, nil, "If-Match", second)

	asset := s.Call(201, "POST", "/assets", s.RW, map[string]any{"serial_number": "SN-1", "asset_type_id": strings.TrimPrefix(path, "/asset_types/")})
	assetPath := asset.Header.Get("Location")
	s.Call(304, "GET", assetPath, s.RO, nil, "If-None-Match", asset.Header.Get("ETag"))
	s.Call(412, "PATCH", assetPath, s.RW, `{"status":"x"}`, "If-Match", `"stale"`)
	s.Call(204, "DELETE", assetPath, s.RW, nil, "If-Match", "*")
}

// Creates retried with their Idempotency-Key are answered once.
func TestHTTPIdempotencyKey(t *testing.T) {
	s := servicetest.Start(t, Spec())
	first := s.Call(201, "POST", "/asset_types", s.RW, liftmaster, "Idempotency-Key", "t-1")
	again := s.Call(201, "POST", "/asset_types", s.RW, liftmaster, "Idempotency-Key", "t-1")
	if string(again.Raw) != string(first.Raw) || again.Header.Get("Location") != first.Header.Get("Location") {
		t.Errorf("replay: %s", again.Raw)
	}
	typeID := first.JSON()["id"].(string)
	criteria := map[string]any{"serial_number": "SN-1", "brand": "Liftmaster", "model": "LM-200"}
	made := s.Call(201, "POST", "/assets/find?create=true", s.RW, criteria, "Idempotency-Key", "a-1")
	if replayed := s.Call(201, "POST", "/assets/find?create=true", s.RW, criteria, "Idempotency-Key", "a-1"); replayed.JSON()["id"] != made.JSON()["id"] {
		t.Error("a replayed find-or-create answered another asset")
	}
	s.Call(422, "POST", "/assets/find?create=true", s.RW, map[string]any{"serial_number": "SN-2"}, "Idempotency-Key", "a-1")
	manual := addDocument(s, "application/pdf")
	s.Call(201, "POST", "/asset_types/"+typeID+"/documents", s.RW, map[string]any{"document_id": manual}, "Idempotency-Key", "d-1")
	s.Call(201, "POST", "/asset_types/"+typeID+"/documents", s.RW, map[string]any{"document_id": manual}, "Idempotency-Key", "d-1")
	if n := len(s.Call(200, "GET", "/assets", s.RO, nil).List()); n != 1 {
		t.Errorf("%d assets, want 1", n)
	}
}
