package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
)

// unique makes names no other test of the shared stack uses.
func unique(prefix string) string { return prefix + "-" + randomHex() }

// uploadThroughGateway stores a document and returns its id.
func uploadThroughGateway(t *testing.T, token, name, contentType, content string) string {
	t.Helper()
	body, ctype := testkit.Multipart(t, testkit.Field("document_type", "manual"),
		testkit.FormPart{Name: "file", Filename: name, ContentType: contentType, Content: content})
	return testkit.Expect(t, gateway().Do(t, "POST", "/documents", token, body, "Content-Type", ctype), 201).JSON()["id"].(string)
}

// The interface's order of recording equipment, through the gateway: an
// asset type with its documents and thumbnail, an asset with its
// responsible person, found again and found-or-created; and what cannot be
// deleted while the asset and its type point at it.
func TestAssetsThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	call := func(status int, method, path, token string, body any, headers ...string) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, method, path, token, body, headers...), status)
	}
	brand := unique("Liftmaster")
	typ := call(201, "POST", "/asset_types/", rw, map[string]any{"brand": brand, "model": "LM-200", "version": "2",
		"external_ids": []map[string]any{{"source_system": "erp", "external_id": unique("AT")}}}).JSON()
	typePath := "/asset_types/" + typ["id"].(string)
	if typ["created_by"] != creds.ClientID || typ["thumbnail"] != nil || len(typ["documents"].([]any)) != 0 {
		t.Errorf("asset type: %v", typ)
	}
	matches := call(200, "GET", "/asset_types/by_brand_and_model/?"+url.Values{"brand": {strings.ToUpper(brand)}, "model": {"lm-200"}}.Encode(), ro, nil).List()
	if len(matches) != 1 || matches[0]["id"] != typ["id"] {
		t.Errorf("by_brand_and_model: %v", matches)
	}

	manual := uploadThroughGateway(t, rw, "manual.pdf", "application/pdf", "%PDF-1.7 manual")
	photo := uploadThroughGateway(t, rw, "front.png", "image/png", "\x89PNG\r\n\x1a\nfront")
	attached := call(201, "POST", typePath+"/documents", rw, map[string]any{"document_id": manual})
	if attached.Header.Get("Location") != typePath+"/documents/"+manual {
		t.Errorf("attach Location = %q", attached.Header.Get("Location"))
	}
	call(200, "POST", typePath+"/documents", rw, map[string]any{"document_id": manual})
	call(422, "PUT", typePath+"/thumbnail", rw, map[string]any{"document_id": manual})
	// An image is what its bytes are: an SVG with a script, or a text that
	// claims to be a PNG, is no thumbnail.
	svg := uploadThroughGateway(t, rw, "x.svg", "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
	fake := uploadThroughGateway(t, rw, "fake.png", "image/png", "not a png at all")
	for _, document := range []string{svg, fake} {
		if fields := call(422, "PUT", typePath+"/thumbnail", rw, map[string]any{"document_id": document}).Fields(); len(fields) != 1 || fields[0] != "document_id" {
			t.Errorf("thumbnail %s: fields %v", document, fields)
		}
	}
	withThumb := call(200, "PUT", typePath+"/thumbnail/", rw, map[string]any{"document_id": photo}).JSON()
	if withThumb["thumbnail"].(map[string]any)["filename"] != "front.png" {
		t.Errorf("thumbnail: %v", withThumb["thumbnail"])
	}

	person := call(201, "POST", "/people", rw, map[string]any{"first_name": unique("Ingrid"), "last_name": "Kontrollør"}).JSON()
	personID := person["id"].(string)
	serial := unique("SN")
	asset := call(201, "POST", "/assets/", rw, map[string]any{"serial_number": serial, "asset_type_id": typ["id"],
		"production_year": 2021, "responsible_person_id": personID}).JSON()
	assetPath := "/assets/" + asset["id"].(string)
	found := call(200, "POST", "/assets/find", ro, map[string]any{"serial_number": serial, "brand": brand, "model": "LM-200"}).JSON()
	if found["id"] != asset["id"] || found["responsible_person_id"] != personID {
		t.Errorf("find: %v", found)
	}
	other := call(201, "POST", "/assets/find?create=true", rw, map[string]any{"serial_number": unique("SN"), "brand": brand, "model": "LM-200", "version": "2"})
	if other.Header.Get("Location") != "/assets/"+other.JSON()["id"].(string) || other.JSON()["asset_type_id"] != typ["id"] {
		t.Errorf("find-or-create: %s", other.Raw)
	}
	if list := call(200, "GET", "/assets?asset_type_id="+typ["id"].(string)+"&limit=1", ro, nil); len(list.List()) != 1 || list.Header.Get("Link") == "" {
		t.Errorf("first page of two: %s (Link %q)", list.Raw, list.Header.Get("Link"))
	}
	patched := call(200, "PATCH", assetPath, rw, `{"status":"in service"}`, "Content-Type", "application/merge-patch+json").JSON()
	if patched["status"] != "in service" || patched["updated_by"] != creds.ClientID {
		t.Errorf("patched: %v", patched)
	}

	// What the asset and its type point at cannot go; the 409 says what points.
	for _, refused := range []struct{ path, names string }{
		{"/people/" + personID, asset["id"].(string)},
		{"/documents/" + manual, typ["id"].(string)},
		{"/documents/" + photo, typ["id"].(string)},
		{typePath, asset["id"].(string)},
	} {
		r := call(409, "DELETE", refused.path, rw, nil).JSON()
		if r["type"] != httpx.ProblemTypePrefix+"still-referenced" || !strings.Contains(r["detail"].(string), refused.names) {
			t.Errorf("DELETE %s: %v", refused.path, r)
		}
	}
	call(204, "DELETE", assetPath, rw, nil)
	call(204, "DELETE", "/assets/"+other.JSON()["id"].(string), rw, nil)
	call(204, "DELETE", "/people/"+personID, rw, nil)
	call(204, "DELETE", typePath, rw, nil)
	call(204, "DELETE", "/documents/"+manual, rw, nil)
	call(204, "DELETE", "/documents/"+photo, rw, nil)
}

// Every contract error of asset types and assets reaches the client
// through the gateway as the problem it is.
func TestAssetErrorsThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	brand := unique("Hoist")
	typ := testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": brand, "model": "H1",
		"external_ids": []map[string]any{{"source_system": "erp", "external_id": brand}}}), 201).JSON()
	typeID := typ["id"].(string)
	testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": brand, "model": "H1", "version": "2"}), 201)
	other := testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": brand, "model": "H2"}), 201).JSON()["id"].(string)
	serial := unique("SN")
	asset := testkit.Expect(t, gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": serial, "asset_type_id": typeID}), 201).JSON()
	testkit.Expect(t, gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": serial, "asset_type_id": other}), 201)
	pdf := uploadThroughGateway(t, rw, "a.pdf", "application/pdf", "%PDF-1.7")
	missing := uuid.New().String()
	next := time.Now().UTC().Year() + 1

	rows := []struct {
		name, method, path string
		token              string
		body               any
		headers            []string
		status             int
		problem            string
	}{
		{"no token", "GET", "/asset_types", "", nil, nil, 401, "unauthorized"},
		{"read-only token creates", "POST", "/assets", ro, map[string]any{"serial_number": "x", "asset_type_id": typeID}, nil, 403, "forbidden"},
		{"read-only token creates through find", "POST", "/assets/find?create=true", ro, map[string]any{"serial_number": "x"}, nil, 403, "forbidden"},
		{"malformed id", "GET", "/asset_types/not-a-uuid", ro, nil, nil, 400, "bad-request"},
		{"malformed filter id", "GET", "/assets?asset_type_id=nope", ro, nil, nil, 400, "bad-request"},
		{"unknown query parameter", "GET", "/assets?colour=red", ro, nil, nil, 400, "bad-request"},
		{"bad limit", "GET", "/asset_types?limit=0", ro, nil, nil, 400, "bad-request"},
		{"create flag not boolean", "POST", "/assets/find?create=yes", rw, map[string]any{"serial_number": "x"}, nil, 400, "bad-request"},
		{"not JSON", "POST", "/asset_types", rw, `{"brand":`, nil, 400, "bad-request"},
		{"unknown asset type", "GET", "/asset_types/" + missing, ro, nil, nil, 404, "not-found"},
		{"unknown asset", "DELETE", "/assets/" + missing, rw, nil, nil, 404, "not-found"},
		{"find matching nothing", "POST", "/assets/find", ro, map[string]any{"serial_number": unique("none")}, nil, 404, "not-found"},
		{"detach what is not attached", "DELETE", "/asset_types/" + typeID + "/documents/" + pdf, rw, nil, nil, 404, "not-found"},
		{"method not allowed", "PUT", "/assets/" + asset["id"].(string), rw, map[string]any{}, nil, 405, "method-not-allowed"},
		{"duplicate asset type", "POST", "/asset_types", rw, map[string]any{"brand": strings.ToLower(brand), "model": "h1"}, nil, 409, "duplicate"},
		{"duplicate external id", "POST", "/asset_types", rw, map[string]any{"brand": brand, "model": "H3",
			"external_ids": []map[string]any{{"source_system": "erp", "external_id": brand}}}, nil, 409, "duplicate"},
		{"duplicate serial number", "POST", "/assets", rw, map[string]any{"serial_number": serial, "asset_type_id": typeID}, nil, 409, "duplicate"},
		{"serial number in two types", "POST", "/assets/find", ro, map[string]any{"serial_number": serial}, nil, 409, "ambiguous-match"},
		{"create in one of two versions", "POST", "/assets/find?create=true", rw, map[string]any{"serial_number": unique("SN"), "brand": brand, "model": "H1"}, nil, 409, "ambiguous-match"},
		{"type with assets", "DELETE", "/asset_types/" + typeID, rw, nil, nil, 409, "still-referenced"},
		{"too large", "POST", "/asset_types", rw, `{"brand":"` + strings.Repeat("b", 1<<20) + `"}`, nil, 413, "payload-too-large"},
		{"wrong media type", "POST", "/assets", rw, "serial_number=x", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported-media-type"},
		{"missing fields", "POST", "/assets", rw, map[string]any{}, nil, 422, "validation-failed"},
		{"read-only member", "POST", "/asset_types", rw, map[string]any{"brand": "a", "model": "b", "documents": []any{}}, nil, 422, "validation-failed"},
		{"type that does not exist", "POST", "/assets", rw, map[string]any{"serial_number": "x", "asset_type_id": missing}, nil, 422, "validation-failed"},
		{"person that does not exist", "POST", "/assets", rw, map[string]any{"serial_number": "x", "asset_type_id": typeID, "responsible_person_id": missing}, nil, 422, "validation-failed"},
		{"production year", "POST", "/assets", rw, map[string]any{"serial_number": "x", "asset_type_id": typeID, "production_year": next + 1}, nil, 422, "validation-failed"},
		{"document that does not exist", "POST", "/asset_types/" + typeID + "/documents", rw, map[string]any{"document_id": missing}, nil, 422, "validation-failed"},
		{"thumbnail not an image", "PUT", "/asset_types/" + typeID + "/thumbnail", rw, map[string]any{"document_id": pdf}, nil, 422, "validation-failed"},
		{"create in a type that does not exist", "POST", "/assets/find?create=true", rw, map[string]any{"serial_number": "x", "brand": unique("none"), "model": "x"}, nil, 422, "validation-failed"},
		{"by_brand_and_model without model", "GET", "/asset_types/by_brand_and_model?brand=x", ro, nil, nil, 422, "validation-failed"},
		{"stale If-Match", "PATCH", "/asset_types/" + typeID, rw, map[string]any{"version": "9"}, []string{"If-Match", `"stale"`}, 412, "precondition-failed"},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			r := testkit.Expect(t, gw.Do(t, tt.method, tt.path, tt.token, tt.body, tt.headers...), tt.status).JSON()
			if r["type"] != httpx.ProblemTypePrefix+tt.problem {
				t.Errorf("type = %v, want %s", r["type"], tt.problem)
			}
			if r["instance"] != strings.SplitN(tt.path, "?", 2)[0] {
				t.Errorf("instance = %v, want the client's path", r["instance"])
			}
		})
	}
}

// Fifty identical find-or-create calls through the gateway make one asset.
func TestAssetFindRaceThroughGateway(t *testing.T) {
	t.Parallel()
	rw := readWrite(t)
	brand := unique("Race")
	testkit.Expect(t, gateway().Do(t, "POST", "/asset_types", rw, map[string]any{"brand": brand, "model": "R1"}), 201)
	criteria := map[string]any{"serial_number": "SN-RACE", "brand": brand, "model": "R1"}
	const callers = 50
	statuses, ids := make([]int, callers), make([]any, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			r := gateway().Do(t, "POST", "/assets/find?create=true", rw, criteria)
			statuses[i], ids[i] = r.Status, r.JSON()["id"]
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for i, s := range statuses {
		if s != 200 && s != 201 {
			t.Fatalf("status %d", s)
		}
		if s == 201 {
			created++
		}
		if ids[i] != ids[0] {
			t.Fatalf("two assets: %v and %v", ids[0], ids[i])
		}
	}
	if created != 1 {
		t.Fatalf("%d calls answered 201, want exactly one", created)
	}
	list := testkit.Expect(t, gateway().Do(t, "GET", "/assets?serial_number=SN-RACE&asset_type_id="+
		testkit.Expect(t, gateway().Do(t, "POST", "/assets/find", rw, criteria), 200).JSON()["asset_type_id"].(string), readOnly(t), nil), 200).List()
	if len(list) != 1 {
		t.Fatalf("%d assets stored, want 1", len(list))
	}
}

// Deleting a person while assets naming them are created, many rounds:
// no asset is left pointing at a deleted person.
func TestDeleteVersusReferenceRaceThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	typeID := testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": unique("Race"), "model": "D1"}), 201).JSON()["id"].(string)
	raceDeleteAgainstCreates(t, deleteRace{
		target: func(int) string {
			return "/people/" + testkit.Expect(t, gw.Do(t, "POST", "/people", rw, map[string]any{"first_name": unique("P"), "last_name": "Race"}), 201).JSON()["id"].(string)
		},
		create: func(round, c int, person string) testkit.Response {
			return gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": fmt.Sprintf("SN-%d-%d", round, c),
				"asset_type_id": typeID, "responsible_person_id": person})
		},
		naming: func(person string) int {
			return len(testkit.Expect(t, gw.Do(t, "GET", "/assets?responsible_person_id="+person, ro, nil), 200).List())
		},
	})
}
