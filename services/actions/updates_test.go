package actions

import (
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// A batch of updates applies each item as its single PATCH would, under
// the item's own If-Match: an applied item answers 200 with the ETag a
// GET then sends and records its action.updated event; a refused item
// (412, 404, 403 not-owner, 422, 409) changes nothing and leaves the rest.
func TestHTTPActionsBatchPatch(t *testing.T) {
	w := newWorld(t)
	create := func(ref string) (string, string) {
		r := w.Call(201, "POST", "/actions", w.RW, w.action(map[string]any{"source_reference": ref}))
		return r.JSON()["id"].(string), r.Header.Get("ETag")
	}
	one, oneTag := create("1")
	two, _ := create("2")
	three, threeTag := create("3")
	others := w.Call(201, "POST", "/actions", w.Other, w.action(map[string]any{"source_reference": "4"})).JSON()["id"].(string)
	w.Events(t)
	results := w.Call(200, "PATCH", "/actions/batch", w.RW, map[string]any{"items": []any{
		map[string]any{"id": one, "if_match": oneTag, "patch": map[string]any{"reference": "EK-43"}},
		map[string]any{"id": two, "if_match": `"stale"`, "patch": map[string]any{"reference": "EK-44"}},
		map[string]any{"id": uuid.NewString(), "patch": map[string]any{"reference": "EK-45"}},
		map[string]any{"id": three, "if_match": threeTag, "patch": map[string]any{"action_type": "no_such_type"}},
		map[string]any{"id": others, "patch": map[string]any{"reference": "EK-46"}},
		map[string]any{"id": three, "patch": map[string]any{"source_reference": "1"}},
		map[string]any{"id": two, "patch": map[string]any{"performed_at": nil}},
		map[string]any{"id": two, "patch": map[string]any{"status_ok": false}},
	}}).List()
	testkit.CheckItems(t, results, []testkit.ItemWant{{Status: 200}, {Status: 412}, {Status: 404}, {Status: 422, Mark: "action_type"},
		{Status: 403, Mark: "not-owner"}, {Status: 409, Mark: "duplicate"}, {Status: 422, Mark: "performed_at"}, {Status: 200}}, nil)
	got := w.Call(200, "GET", "/actions/"+one, w.RO, nil)
	if got.JSON()["reference"] != "EK-43" || results[0]["etag"] != got.Header.Get("ETag") {
		t.Errorf("item 0: %v; GET %s (ETag %s)", results[0], got.Raw, got.Header.Get("ETag"))
	}
	if w.Call(200, "GET", "/actions/"+three, w.RO, nil).Header.Get("ETag") != threeTag {
		t.Errorf("the refused items changed their action")
	}
	if w.Call(200, "GET", "/actions/"+others, w.RO, nil).JSON()["reference"] != "EK-42" {
		t.Errorf("another client's action was changed")
	}
	w.WantEvents(t, "rw-client",
		servicetest.Event{Type: "action.updated", ID: one, Data: w.GET("/actions/" + one), Changes: []string{"reference", "updated_at"}},
		servicetest.Event{Type: "action.updated", ID: two, Data: w.GET("/actions/" + two), Changes: []string{"status_ok", "status_use_ok", "updated_at"}})
}

// An item's patch is read and checked as its single PATCH's body (the
// item's own fields, id, if_match and patch, are checked alike for every
// resource: pkg/endpoints' tests); a weak if_match never matches.
func TestActionsBatchPatchItems(t *testing.T) {
	w := newWorld(t)
	id := w.Call(201, "POST", "/actions", w.RW, w.action(nil)).JSON()["id"].(string)
	patch := func(p map[string]any) map[string]any { return map[string]any{"id": id, "patch": p} }
	cases := map[string]struct {
		item any
		want testkit.ItemWant
	}{
		"applied":               {patch(map[string]any{"reference": "x"}), testkit.ItemWant{Status: 200}},
		"unknown patch field":   {patch(map[string]any{"colour": 1}), testkit.ItemWant{Status: 422, Mark: "colour"}},
		"read-only patch field": {patch(map[string]any{"action_documents": []any{}}), testkit.ItemWant{Status: 422, Mark: "action_documents"}},
		"data not an object":    {patch(map[string]any{"data": 1}), testkit.ItemWant{Status: 422, Mark: "data"}},
		"required removed":      {patch(map[string]any{"asset_id": nil}), testkit.ItemWant{Status: 422, Mark: "asset_id"}},
		"if_match weak":         {map[string]any{"id": id, "if_match": `W/"a"`, "patch": map[string]any{}}, testkit.ItemWant{Status: 412}},
		"no id":                 {map[string]any{"patch": map[string]any{}}, testkit.ItemWant{Status: 422, Mark: "id"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			before := w.Call(200, "GET", "/actions/"+id, w.RO, nil).Header.Get("ETag")
			testkit.CheckItems(t, w.Call(200, "PATCH", "/actions/batch", w.RW, map[string]any{"items": []any{c.item}}).List(), []testkit.ItemWant{c.want}, nil)
			if after := w.Call(200, "GET", "/actions/"+id, w.RO, nil).Header.Get("ETag"); c.want.Status != 200 && after != before {
				t.Errorf("a refused item changed the action")
			}
		})
	}
}

// Under tenancy each item is refused as its single PATCH would be: an
// action on an asset the caller's organization does not see is a 404, one
// it reads through a read grant a 403 not-permitted; the others are kept.
func TestActionsBatchPatchTenancy(t *testing.T) {
	w := newTenancyWorld(t)
	rw := []string{auth.ScopeRead, auth.ScopeWrite}
	owner := w.Bound("owner-client", orgOwner, rw...)
	reader, other := w.Bound("reader-client", orgReader, rw...), w.Bound("other-client", orgOther, rw...)
	asset := w.owned(orgOwner, model.AssetGrant{OrganizationID: orgReader, Role: model.GrantRead})
	shared := w.owned("")
	byOwner := w.Call(201, "POST", "/actions", owner, w.action(map[string]any{"asset_id": asset, "source_reference": "o"})).JSON()["id"].(string)
	byReader := w.Call(201, "POST", "/actions", reader, w.action(map[string]any{"asset_id": shared, "source_reference": "r"})).JSON()["id"].(string)
	byOther := w.Call(201, "POST", "/actions", other, w.action(map[string]any{"asset_id": shared, "source_reference": "x"})).JSON()["id"].(string)
	results := w.Call(200, "PATCH", "/actions/batch", reader, map[string]any{"items": []any{
		map[string]any{"id": byOwner, "patch": map[string]any{"reference": "R"}},
		map[string]any{"id": byReader, "patch": map[string]any{"reference": "R"}},
		map[string]any{"id": byReader, "patch": map[string]any{"asset_id": asset}},
	}}).List()
	testkit.CheckItems(t, results, []testkit.ItemWant{{Status: 403, Mark: "not-permitted"}, {Status: 200}, {Status: 403, Mark: "not-permitted"}}, nil)
	results = w.Call(200, "PATCH", "/actions/batch", other, map[string]any{"items": []any{
		map[string]any{"id": byOwner, "patch": map[string]any{"reference": "X"}},
		map[string]any{"id": byOther, "patch": map[string]any{"reference": "X"}},
	}}).List()
	testkit.CheckItems(t, results, []testkit.ItemWant{{Status: 404}, {Status: 200}}, nil)
	if got := w.Call(200, "GET", "/actions/"+byOwner, owner, nil).JSON()["reference"]; got != "EK-42" {
		t.Errorf("the owner's action was changed: %v", got)
	}
}
