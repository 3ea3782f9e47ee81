package assets

import (
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// A batch of updates applies each item as its single PATCH would, under
// the item's own If-Match: an item applied answers 200 with its new ETag
// (the one a GET then sends) and records its asset.updated event; an item
// refused (412, 404, 422) changes nothing and leaves the others.
func TestHTTPAssetsBatchPatch(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	typeID := s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	create := func(serial string) (string, string) {
		r := s.Call(201, "POST", "/assets", s.RW, map[string]any{"serial_number": serial, "asset_type_id": typeID})
		return r.JSON()["id"].(string), r.Header.Get("ETag")
	}
	one, oneTag := create("SN-1")
	two, _ := create("SN-2")
	three, threeTag := create("SN-3")
	four, _ := create("SN-4")
	s.Events(t)
	items := []any{
		map[string]any{"id": one, "if_match": oneTag, "patch": map[string]any{"status": "in service"}},
		map[string]any{"id": two, "if_match": `"stale"`, "patch": map[string]any{"status": "retired"}},
		map[string]any{"id": uuid.NewString(), "patch": map[string]any{"status": "retired"}},
		map[string]any{"id": three, "if_match": threeTag, "patch": map[string]any{"production_year": 1800}},
		map[string]any{"id": four, "patch": map[string]any{"production_year": 2020, "status": "ok"}},
		map[string]any{"id": three, "patch": map[string]any{"serial_number": "SN-1"}},
	}
	results := s.Call(200, "PATCH", "/assets/batch", s.RW, map[string]any{"items": items}).List()
	testkit.CheckItems(t, results, []testkit.ItemWant{{Status: 200}, {Status: 412}, {Status: 404}, {Status: 422, Mark: "production_year"}, {Status: 200}, {Status: 409}}, nil)
	got := s.Call(200, "GET", "/assets/"+one, s.RO, nil)
	if got.JSON()["status"] != "in service" || results[0]["etag"] != got.Header.Get("ETag") || results[0]["id"] != one {
		t.Errorf("item 0: %v; GET %s (ETag %s)", results[0], got.Raw, got.Header.Get("ETag"))
	}
	if results[1]["problem"].(map[string]any)["status"] != float64(412) || results[1]["etag"] != nil {
		t.Errorf("item 1: %v", results[1])
	}
	if s.Call(200, "GET", "/assets/"+two, s.RO, nil).JSON()["status"] != nil {
		t.Errorf("the 412 item changed its asset")
	}
	if s.Call(200, "GET", "/assets/"+three, s.RO, nil).Header.Get("ETag") != threeTag {
		t.Errorf("the refused items changed their asset")
	}
	s.WantEvents(t, "rw-client",
		servicetest.Event{Type: "asset.updated", ID: one, Data: s.GET("/assets/" + one), Changes: []string{"status", "updated_at"}},
		servicetest.Event{Type: "asset.updated", ID: four, Data: s.GET("/assets/" + four), Changes: []string{"production_year", "status", "updated_at"}})

	// A later item sees what an earlier one changed: its If-Match names
	// the asset as the earlier item left it.
	results = s.Call(200, "PATCH", "/assets/batch", s.RW, map[string]any{"items": []any{
		map[string]any{"id": one, "if_match": got.Header.Get("ETag"), "patch": map[string]any{"status": "a"}},
		map[string]any{"id": one, "if_match": got.Header.Get("ETag"), "patch": map[string]any{"status": "b"}},
	}}).List()
	testkit.CheckItems(t, results, []testkit.ItemWant{{Status: 200}, {Status: 412}}, nil)
}

// Each item is checked on its own before anything is written: its id and
// patch are required, if_match has the header's form, unknown fields are
// named; the patch is read as the single PATCH's body.
func TestAssetsBatchPatchItems(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	typeID := s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	id := s.Call(201, "POST", "/assets", s.RW, map[string]any{"serial_number": "SN-1", "asset_type_id": typeID}).JSON()["id"].(string)
	for _, c := range []struct {
		name   string
		item   any
		status int
		field  string
	}{
		{"applied", map[string]any{"id": id, "patch": map[string]any{"status": "x"}}, 200, ""},
		{"if_match star", map[string]any{"id": id, "if_match": "*", "patch": map[string]any{"status": "y"}}, 200, ""},
		{"no id", map[string]any{"patch": map[string]any{"status": "x"}}, 422, "id"},
		{"null id", map[string]any{"id": nil, "patch": map[string]any{"status": "x"}}, 422, "id"},
		{"malformed id", map[string]any{"id": "ABC", "patch": map[string]any{}}, 422, "id"},
		{"upper-case id", map[string]any{"id": "0190F5D2-7C1E-7A3B-9C4D-5E6F7A8B9C0D", "patch": map[string]any{}}, 422, "id"},
		{"no patch", map[string]any{"id": id}, 422, "patch"},
		{"null patch", map[string]any{"id": id, "patch": nil}, 422, "patch"},
		{"patch not an object", map[string]any{"id": id, "patch": []any{1}}, 422, "patch"},
		{"if_match unquoted", map[string]any{"id": id, "if_match": "abc", "patch": map[string]any{}}, 422, "if_match"},
		{"if_match empty", map[string]any{"id": id, "if_match": "", "patch": map[string]any{}}, 422, "if_match"},
		{"if_match a number", map[string]any{"id": id, "if_match": 7, "patch": map[string]any{}}, 422, "if_match"},
		{"unknown item field", map[string]any{"id": id, "patch": map[string]any{}, "etag": "x"}, 422, "etag"},
		{"unknown patch field", map[string]any{"id": id, "patch": map[string]any{"colour": "red"}}, 422, "colour"},
		{"read-only patch field", map[string]any{"id": id, "patch": map[string]any{"created_by": "me"}}, 422, "created_by"},
		{"required field removed", map[string]any{"id": id, "patch": map[string]any{"serial_number": nil}}, 422, "serial_number"},
		{"item not an object", "x", 400, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.Call(200, "GET", "/assets/"+id, s.RO, nil).Header.Get("ETag")
			results := s.Call(200, "PATCH", "/assets/batch", s.RW, map[string]any{"items": []any{c.item}}).List()
			testkit.CheckItems(t, results, []testkit.ItemWant{{Status: c.status, Mark: c.field}}, nil)
			if after := s.Call(200, "GET", "/assets/"+id, s.RO, nil).Header.Get("ETag"); c.status != 200 && after != before {
				t.Errorf("a refused item changed the asset")
			}
		})
	}
	// The batch itself: 1 to 1,000 items.
	s.Call(422, "PATCH", "/assets/batch", s.RW, map[string]any{"items": []any{}})
	many := make([]any, 1001)
	for i := range many {
		many[i] = map[string]any{"id": id, "patch": map[string]any{}}
	}
	s.Call(422, "PATCH", "/assets/batch", s.RW, map[string]any{"items": many})
}
