package assets

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

var liftmaster = map[string]any{"brand": "Liftmaster", "model": "LM-200", "version": "2",
	"external_ids": []map[string]any{{"source_system": "erp", "external_id": "AT-1"}}}

// addDocument makes a document exist at the documents stand-in.
func addDocument(s *servicetest.Service, contentType string) string {
	id := uuid.New()
	s.StandIn("documents").Add("document", id, refs.Attrs{"content_type": contentType, "document_type": "manual",
		"size": "10", "sha256": strings.Repeat("0", 64), "created_at": time.Now().UTC().Format(time.RFC3339Nano), "created_by": "c",
		"sniffed_type": contentType})
	return id.String()
}

func TestHTTPAssetTypes(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
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
	if dup["existing_id"] != id || dup["type"] != httpx.ProblemTypePrefix+"duplicate" {
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
	s := servicetest.StartParallel(t, Spec())
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
	if still["type"] != httpx.ProblemTypePrefix+"still-referenced" || !strings.Contains(still["detail"].(string), id) {
		t.Errorf("deleting a type with assets: %v", still)
	}
	s.Call(204, "DELETE", "/assets/"+id, s.RW, nil)
	s.Call(404, "GET", "/assets/"+id, s.RO, nil)
}

// The contract's errors particular to these resources, one row each.
func TestHTTPErrors(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
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
	s.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "brand and model required", Method: "POST", Path: "/asset_types", Body: `{}`, Status: 422, Fields: []string{"brand", "model"}},
		{Name: "documents are read-only", Method: "POST", Path: "/asset_types", Body: `{"brand":"A","model":"B","documents":[]}`, Status: 422, Fields: []string{"documents"}},
		{Name: "thumbnail is read-only", Method: "PATCH", Path: typePath, Body: `{"thumbnail":null}`, Status: 422, Fields: []string{"thumbnail"}},
		{Name: "duplicate type, other case", Method: "POST", Path: "/asset_types", Body: map[string]any{"brand": "liftMASTER", "model": "LM-200", "version": "2"}, Status: 409, Problem: "duplicate"},
		{Name: "external id held by another type", Method: "POST", Path: "/asset_types", Body: map[string]any{"brand": "X", "model": "Y",
			"external_ids": []map[string]any{{"source_system": "erp", "external_id": "AT-1"}}}, Status: 409, Problem: "duplicate"},
		{Name: "external id without its system", Method: "POST", Path: "/asset_types", Body: `{"brand":"X","model":"Y","external_ids":[{"external_id":"1"}]}`, Status: 422, Fields: []string{"external_ids[0].source_system"}},
		{Name: "unknown member of an external id", Method: "POST", Path: "/asset_types", Body: `{"brand":"X","model":"Y","external_ids":[{"source_system":"a","external_id":"1","id":"2"}]}`, Status: 422, Fields: []string{"external_ids[0].id"}},
		{Name: "unknown member of a patched external id", Method: "PATCH", Path: typePath, Body: `{"external_ids":[{"source_system":"a","External_Id":"1"}]}`, Status: 422, Fields: []string{"external_ids[0].External_Id"}},
		{Name: "pair given twice", Method: "PATCH", Path: typePath, Body: `{"external_ids":[{"source_system":"a","external_id":"1"},{"source_system":"a","external_id":"1"}]}`, Status: 422, Fields: []string{"external_ids[1]"}},
		{Name: "brand removed by patch", Method: "PATCH", Path: typePath, Body: `{"brand":null}`, Status: 422, Fields: []string{"brand"}},
		{Name: "patch onto another type's identity", Method: "PATCH", Path: typePath, Body: `{"version":"3"}`, Status: 409, Problem: "duplicate"},
		{Name: "by_brand_and_model without model", Method: "GET", Path: "/asset_types/by_brand_and_model?brand=Liftmaster", ReadOnly: true, Status: 422, Fields: []string{"model"}},
		{Name: "by_brand_and_model blank brand", Method: "GET", Path: "/asset_types/by_brand_and_model?brand=%20&model=x", ReadOnly: true, Status: 422, Fields: []string{"brand"}},
		{Name: "external_id filter without source_system", Method: "GET", Path: "/asset_types?external_id=1", ReadOnly: true, Status: 422, Fields: []string{"source_system"}},
		{Name: "attach a document that does not exist", Method: "POST", Path: typePath + "/documents", Body: map[string]any{"document_id": missing}, Status: 422, Fields: []string{"document_id"}},
		{Name: "attach without document_id", Method: "POST", Path: typePath + "/documents", Body: `{}`, Status: 422, Fields: []string{"document_id"}},
		{Name: "document_id not a UUID", Method: "POST", Path: typePath + "/documents", Body: `{"document_id":"{` + missing + `}"}`, Status: 422, Fields: []string{"document_id"}},
		{Name: "document_id a number", Method: "PUT", Path: typePath + "/thumbnail", Body: `{"document_id":7}`, Status: 422, Fields: []string{"document_id"}},
		{Name: "attach to an unknown type", Method: "POST", Path: "/asset_types/" + missing + "/documents", Body: map[string]any{"document_id": pdf}, Status: 404},
		{Name: "detach what is not attached", Method: "DELETE", Path: typePath + "/documents/" + pdf, Status: 404},
		{Name: "detach with a malformed document id", Method: "DELETE", Path: typePath + "/documents/x", Status: 400},
		{Name: "thumbnail not an image", Method: "PUT", Path: typePath + "/thumbnail", Body: map[string]any{"document_id": pdf}, Status: 422, Fields: []string{"document_id"}},
		{Name: "thumbnail that does not exist", Method: "PUT", Path: typePath + "/thumbnail", Body: map[string]any{"document_id": missing}, Status: 422, Fields: []string{"document_id"}},
		{Name: "thumbnail of an unknown type", Method: "PUT", Path: "/asset_types/" + missing + "/thumbnail", Body: map[string]any{"document_id": pdf}, Status: 404},
		{Name: "thumbnail not an image, by patch", Method: "PATCH", Path: typePath, Body: map[string]any{"thumbnail_document_id": pdf}, Status: 422, Fields: []string{"thumbnail_document_id"}},
		{Name: "type with assets", Method: "DELETE", Path: typePath, Status: 409, Problem: "still-referenced"},

		{Name: "serial number and type required", Method: "POST", Path: "/assets", Body: `{}`, Status: 422, Fields: []string{"serial_number", "asset_type_id"}},
		{Name: "type that does not exist", Method: "POST", Path: "/assets", Body: map[string]any{"serial_number": "S", "asset_type_id": missing}, Status: 422, Fields: []string{"asset_type_id"}},
		{Name: "person that does not exist", Method: "POST", Path: "/assets", Body: map[string]any{"serial_number": "S", "asset_type_id": typeID, "responsible_person_id": missing}, Status: 422, Fields: []string{"responsible_person_id"}},
		{Name: "production year before 1900", Method: "POST", Path: "/assets", Body: map[string]any{"serial_number": "S", "asset_type_id": typeID, "production_year": 1899}, Status: 422, Fields: []string{"production_year"}},
		{Name: "production year after next year", Method: "POST", Path: "/assets", Body: map[string]any{"serial_number": "S", "asset_type_id": typeID, "production_year": next + 1}, Status: 422, Fields: []string{"production_year"}},
		{Name: "production year not an integer", Method: "POST", Path: "/assets", Body: `{"serial_number":"S","asset_type_id":"` + typeID + `","production_year":"2020"}`, Status: 422, Fields: []string{"production_year"}},
		{Name: "duplicate serial number in the type", Method: "POST", Path: "/assets", Body: map[string]any{"serial_number": "SN-1", "asset_type_id": typeID}, Status: 409, Problem: "duplicate"},
		{Name: "patch to a type that does not exist", Method: "PATCH", Path: assetPath, Body: map[string]any{"asset_type_id": missing}, Status: 422, Fields: []string{"asset_type_id"}},
		{Name: "patch to a person that does not exist", Method: "PATCH", Path: assetPath, Body: map[string]any{"responsible_person_id": missing}, Status: 422, Fields: []string{"responsible_person_id"}},
		{Name: "serial number removed by patch", Method: "PATCH", Path: assetPath, Body: `{"serial_number":null}`, Status: 422, Fields: []string{"serial_number"}},
		{Name: "list by a malformed type id", Method: "GET", Path: "/assets?asset_type_id=x", ReadOnly: true, Status: 400},

		{Name: "find without serial number", Method: "POST", Path: "/assets/find", ReadOnly: true, Body: `{"brand":"Liftmaster","model":"LM-200"}`, Status: 422, Fields: []string{"serial_number"}},
		{Name: "find with brand but no model", Method: "POST", Path: "/assets/find", ReadOnly: true, Body: `{"serial_number":"SN-1","brand":"Liftmaster"}`, Status: 422, Fields: []string{"model"}},
		{Name: "find matching nothing", Method: "POST", Path: "/assets/find?create=false", ReadOnly: true, Body: `{"serial_number":"SN-404"}`, Status: 404},
		{Name: "find matching two types", Method: "POST", Path: "/assets/find", ReadOnly: true, Body: `{"serial_number":"SN-1"}`, Status: 409, Problem: "ambiguous-match"},
		{Name: "create in a type that does not exist", Method: "POST", Path: "/assets/find?create=true", Body: `{"serial_number":"SN-9","brand":"Nobody","model":"X"}`, Status: 422, Fields: []string{"brand", "model"}},
		{Name: "create without naming a type", Method: "POST", Path: "/assets/find?create=true", Body: `{"serial_number":"SN-9"}`, Status: 422, Fields: []string{"brand", "model"}},
		{Name: "create in one of several versions", Method: "POST", Path: "/assets/find?create=true", Body: `{"serial_number":"SN-9","brand":"Liftmaster","model":"LM-200"}`, Status: 409, Problem: "ambiguous-match"},
		{Name: "read-only token creates through find", Method: "POST", Path: "/assets/find?create=true", ReadOnly: true, Body: `{"serial_number":"SN-9"}`, Status: 403},
		{Name: "create flag not boolean", Method: "POST", Path: "/assets/find?create=1", Body: `{"serial_number":"SN-9"}`, Status: 400},
	})
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
	t.Parallel()
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

// A database that goes away is a 503 with Retry-After, never a 500, and
// the service recovers when it returns; nothing half-written stays behind.
func TestHTTPDatabaseDown(t *testing.T) {
	t.Parallel()
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
	s := servicetest.StartParallel(t, Spec())
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
	s := servicetest.StartParallel(t, Spec())
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

// The document and the common error rows, as every service checks them.
func TestConformance(t *testing.T) { servicetest.Conformance(t, Spec(), ownership) }

// Only the client that created an asset type or an asset (or an admin)
// changes or deletes it; a type's documents and thumbnail are the type's.
func ownership(t *testing.T, s *servicetest.Service) []servicetest.OwnerCase {
	typ := "/asset_types/" + s.Call(201, "POST", "/asset_types", s.RW, map[string]any{"brand": "Own", "model": "M1"}).JSON()["id"].(string)
	asset := "/assets/" + s.Call(201, "POST", "/assets", s.RW,
		map[string]any{"serial_number": "SN-OWN", "asset_type_id": strings.TrimPrefix(typ, "/asset_types/")}).JSON()["id"].(string)
	image, manual := addDocument(s, "image/png"), addDocument(s, "application/pdf")
	s.Call(201, "POST", typ+"/documents", s.RW, map[string]any{"document_id": manual})
	// A grant made by rw-client as a client of the asset's owner
	// organization: a client that sees the asset but does not manage it
	// is refused, naming the client that made the grant.
	owner, granted := uuid.New(), uuid.New()
	s.StandIn("parties").Add("organization", owner, nil)
	s.StandIn("parties").Add("organization", granted, nil)
	otherType := s.Call(201, "POST", "/asset_types", s.RW, map[string]any{"brand": "Own", "model": "M9"}).JSON()["id"]
	managed := "/assets/" + s.Call(201, "POST", "/assets", bound(t, s, "rw-client", owner.String()),
		map[string]any{"serial_number": "SN-MANAGED", "asset_type_id": otherType}).JSON()["id"].(string)
	s.Call(201, "POST", managed+"/grants", bound(t, s, "rw-client", owner.String()), map[string]any{"organization_id": granted, "role": "read"})
	return []servicetest.OwnerCase{
		{Name: "delete grant", Method: "DELETE", Path: managed + "/grants/" + granted.String(), Read: managed + "/grants", AdminStatus: 204},
		{Name: "patch asset type", Method: "PATCH", Path: typ, Body: map[string]any{"model": "M2"}, Read: typ, AdminStatus: 200},
		{Name: "attach document", Method: "POST", Path: typ + "/documents", Body: map[string]any{"document_id": image}, Read: typ, AdminStatus: 201},
		{Name: "detach document", Method: "DELETE", Path: typ + "/documents/" + manual, Read: typ, AdminStatus: 204},
		{Name: "set thumbnail", Method: "PUT", Path: typ + "/thumbnail", Body: map[string]any{"document_id": image}, Read: typ, AdminStatus: 200},
		{Name: "patch asset", Method: "PATCH", Path: asset, Body: map[string]any{"serial_number": "SN-TAKEN"}, Read: asset, AdminStatus: 200},
		{Name: "patch assets in a batch", Method: "PATCH", Path: "/assets/batch", Batch: true, Read: asset, AdminStatus: 200,
			Body: map[string]any{"items": []any{map[string]any{"id": strings.TrimPrefix(asset, "/assets/"), "patch": map[string]any{"status": "batch"}}}}},
		{Name: "delete asset", Method: "DELETE", Path: asset, Read: asset, AdminStatus: 204},
		{Name: "delete asset type", Method: "DELETE", Path: typ, Read: typ, AdminStatus: 204},
	}
}

// A batch finds or creates each asset by type and serial number, in order,
// each item on its own; the responsible people of the whole batch are
// asked about once; one Idempotency-Key covers the batch.
func TestHTTPAssetsBatch(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	typeID := s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	person, other := uuid.New(), uuid.New()
	s.StandIn("parties").Add("person", person, nil)
	s.StandIn("parties").Add("person", other, nil)
	existing := s.Call(201, "POST", "/assets", s.RW, map[string]any{"serial_number": "SN-0", "asset_type_id": typeID}).JSON()["id"]
	items := []any{
		map[string]any{"serial_number": "SN-1", "asset_type_id": typeID, "responsible_person_id": person},
		map[string]any{"serial_number": "SN-0", "asset_type_id": typeID},
		map[string]any{"serial_number": "SN-2", "asset_type_id": uuid.NewString()},
		map[string]any{"serial_number": "SN-3", "asset_type_id": typeID, "responsible_person_id": uuid.NewString()},
		map[string]any{"serial_number": "SN-4", "asset_type_id": typeID, "production_year": 1800},
		map[string]any{"serial_number": "SN-5", "asset_type_id": typeID, "responsible_person_id": other},
		map[string]any{"serial_number": "SN-1", "asset_type_id": typeID},
	}
	asked := s.StandIn("parties").Asked()
	results := s.Call(200, "POST", "/assets/batch", s.RW, map[string]any{"items": items}, "Idempotency-Key", "assets-1").List()
	if got := s.StandIn("parties").Asked() - asked; got != 1 {
		t.Errorf("parties was asked %d times for the batch", got)
	}
	want := []testkit.ItemWant{{Status: 201}, {Status: 200}, {Status: 422, Mark: "asset_type_id"}, {Status: 422, Mark: "responsible_person_id"},
		{Status: 422, Mark: "production_year"}, {Status: 201}, {Status: 200}}
	testkit.CheckItems(t, results, want, func(i int, r map[string]any) {
		got := s.Call(200, "GET", "/assets/"+r["id"].(string), s.RO, nil).JSON()
		if got["serial_number"] != items[i].(map[string]any)["serial_number"] {
			t.Errorf("item %d is %v", i, got)
		}
	})
	if results[1]["id"] != existing || results[6]["id"] != results[0]["id"] {
		t.Errorf("found: %v", results)
	}
	again := s.Call(200, "POST", "/assets/batch", s.RW, map[string]any{"items": items}, "Idempotency-Key", "assets-1")
	if again.Header.Get("Idempotent-Replayed") != "true" || again.List()[0]["status"] != float64(201) {
		t.Errorf("replay: %s", again.Raw)
	}
	if list := s.Call(200, "GET", "/assets?asset_type_id="+typeID, s.RO, nil).List(); len(list) != 3 {
		t.Errorf("assets of the type: %d", len(list))
	}
}

// More documents attached than an answer embeds: the asset type's answer
// holds the first model.MaxEmbedded in attach order and says more exist,
// GET /asset_types/{id}/documents pages through every one, and the
// attach's event carries the capped answer.
func TestAttachedDocumentsAreCappedAndPaged(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	path := "/asset_types/" + s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	var want []string
	for range model.MaxEmbedded + 15 {
		doc := addDocument(s, "application/pdf")
		s.Call(201, "POST", path+"/documents", s.RW, map[string]any{"document_id": doc})
		want = append(want, doc)
	}
	got := s.Call(200, "GET", path, s.RW, nil).JSON()
	docs, _ := got["documents"].([]any)
	if len(docs) != model.MaxEmbedded || got["documents_truncated"] != true {
		t.Fatalf("documents holds %d, documents_truncated = %v; want %d and true", len(docs), got["documents_truncated"], model.MaxEmbedded)
	}
	var paged []string
	for next := path + "/documents?limit=9"; next != ""; {
		page := s.Call(200, "GET", next, s.RO, nil)
		for _, d := range page.List() {
			paged = append(paged, d["id"].(string))
		}
		next = strings.TrimSuffix(strings.TrimPrefix(page.Header.Get("Link"), "<"), `>; rel="next"`)
	}
	if strings.Join(paged, ",") != strings.Join(want, ",") {
		t.Errorf("paging gave %d documents, want all %d in attach order", len(paged), len(want))
	}
	s.Call(404, "GET", "/asset_types/"+want[0]+"/documents", s.RO, nil)
}

// Every committed write records exactly one event per change, its data
// the resource as GET answers it; replays, finds and repeats record none.
func TestEventsOfEveryWrite(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	at := s.Call(201, "POST", "/asset_types", s.RW, liftmaster, "Idempotency-Key", "type-1").JSON()
	id := at["id"].(string)
	path := "/asset_types/" + id
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.created", ID: id, Data: s.GET(path)})
	s.Call(201, "POST", "/asset_types", s.RW, liftmaster, "Idempotency-Key", "type-1") // a replay
	s.WantEvents(t, "rw-client")

	s.Call(200, "PATCH", path, s.RW, `{"emission_class":"Stage V"}`)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.updated", ID: id, Data: s.GET(path),
		Changes: []string{"emission_class", "updated_at"}})

	manual, photo := addDocument(s, "application/pdf"), addDocument(s, "image/png")
	s.Call(201, "POST", path+"/documents", s.RW, map[string]any{"document_id": manual})
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.updated", ID: id, Data: s.GET(path),
		Changes: []string{"documents", "updated_at"}})
	s.Call(200, "POST", path+"/documents", s.RW, map[string]any{"document_id": manual}) // attached already
	s.WantEvents(t, "rw-client")
	s.Call(200, "PUT", path+"/thumbnail", s.RW, map[string]any{"document_id": photo})
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.updated", ID: id, Data: s.GET(path),
		Changes: []string{"thumbnail", "thumbnail_document_id", "updated_at"}})
	s.Call(200, "PUT", path+"/thumbnail", s.RW, map[string]any{"document_id": photo}) // the same again
	s.WantEvents(t, "rw-client")
	s.Call(204, "DELETE", path+"/documents/"+manual, s.RW, nil)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.updated", ID: id, Data: s.GET(path),
		Changes: []string{"documents", "updated_at"}})

	asset := s.Call(201, "POST", "/assets", s.RW, map[string]any{"asset_type_id": id, "serial_number": "SN-1"}).JSON()
	assetID := asset["id"].(string)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset.created", ID: assetID, Data: s.GET("/assets/" + assetID)})
	s.Call(200, "POST", "/assets/find", s.RW, map[string]any{"serial_number": "SN-1"}) // a find that matches
	s.WantEvents(t, "rw-client")
	s.Call(200, "PATCH", "/assets/"+assetID, s.RW, `{"production_year":2020}`)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset.updated", ID: assetID, Data: s.GET("/assets/" + assetID),
		Changes: []string{"production_year", "updated_at"}})

	s.Call(409, "DELETE", path, s.RW, nil) // the type has an asset: nothing deleted, no event
	s.WantEvents(t, "rw-client")
	gone := s.GET("/assets/" + assetID)
	s.Call(204, "DELETE", "/assets/"+assetID, s.RW, nil)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset.deleted", ID: assetID, Data: gone})
	gone = s.GET(path)
	s.Call(204, "DELETE", path, s.RW, nil)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.deleted", ID: id, Data: gone})
}
