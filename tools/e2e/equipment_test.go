package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

// Components: an asset names its parent; the asset itself, one of its
// components or an asset that does not exist is a 422 on parent_asset_id;
// the list by parent names the components; the parent's history shows
// what was installed in it; a parent with components is not deleted.
func TestComponentsThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	crane := newAsset(t, rw)
	craneID := strings.TrimPrefix(crane, "/assets/")
	typ := testkit.Expect(t, gw.Do(t, "GET", crane, ro, nil), 200).JSON()["asset_type_id"]
	hoist := testkit.Expect(t, gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": unique("HOIST"), "asset_type_id": typ,
		"parent_asset_id": craneID}), 201).JSON()
	hoistID := hoist["id"].(string)
	if hoist["parent_asset_id"] != craneID {
		t.Fatalf("component: %v", hoist)
	}
	wantField := func(r testkit.Response, field string) {
		t.Helper()
		if !slices.Contains(r.Fields(), field) {
			t.Errorf("%d %s: want a problem naming %s", r.Status, r.Raw, field)
		}
	}
	wantField(testkit.Expect(t, gw.Do(t, "PATCH", crane, rw, map[string]any{"parent_asset_id": hoistID}), 422), "parent_asset_id")
	wantField(testkit.Expect(t, gw.Do(t, "PATCH", crane, rw, map[string]any{"parent_asset_id": craneID}), 422), "parent_asset_id")
	wantField(testkit.Expect(t, gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": unique("X"), "asset_type_id": typ,
		"parent_asset_id": "0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d"}), 422), "parent_asset_id")

	components := testkit.Expect(t, gw.Do(t, "GET", "/assets?parent_asset_id="+craneID, ro, nil), 200).List()
	if len(components) != 1 || components[0]["id"] != hoistID {
		t.Errorf("components of the crane: %v", components)
	}
	conflict := testkit.Expect(t, gw.Do(t, "DELETE", crane, rw, nil), 409).JSON()
	if !strings.Contains(fmt.Sprint(conflict["detail"]), hoistID) {
		t.Errorf("409 does not say which component holds the asset: %v", conflict)
	}
	eventually(t, "the parent's history shows the component installed", func() string {
		r := gw.Do(t, "GET", crane+"/history", ro, nil)
		if r.Status != 200 {
			return fmt.Sprintf("history: %d", r.Status) // not yet recorded: a 404 until its first event
		}
		for _, e := range r.List() {
			if e["type"] == "asset_component.created" && e["data"].(map[string]any)["id"] == hoistID {
				return ""
			}
		}
		return "no asset_component.created"
	})
	testkit.Expect(t, gw.Do(t, "PATCH", "/assets/"+hoistID, rw, map[string]any{"parent_asset_id": nil}), 200)
	testkit.Expect(t, gw.Do(t, "DELETE", crane, rw, nil), 204)
}

// Meter readings: a meter counts up in read_at order; a lower value needs
// "reset": true; the list is oldest first.
func TestMeterReadingsThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	path := newAsset(t, rw) + "/meter_readings"
	at := func(hour int) string { return fmt.Sprintf("2025-03-14T%02d:00:00Z", hour) }
	read := func(status int, value float64, hour int, reset bool) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, "POST", path, rw, map[string]any{"meter": "operating_hours", "value": value, "read_at": at(hour),
			"reset": reset}), status)
	}
	first := read(201, 100, 10, false)
	if r := first.JSON(); r["value"] != 100.0 || r["meter"] != "operating_hours" || first.Header.Get("Location") == "" {
		t.Fatalf("reading: %s", first.Raw)
	}
	read(201, 150, 12, false)
	if !slices.Contains(read(422, 120, 13, false).Fields(), "value") {
		t.Error("a lower value without reset: want a 422 naming value")
	}
	read(201, 5, 13, true)
	if !slices.Contains(read(422, 200, 11, false).Fields(), "value") {
		t.Error("a past reading above the one after it: want a 422 naming value")
	}
	testkit.Expect(t, gw.Do(t, "POST", path, rw, map[string]any{"meter": "Operating Hours", "value": 1, "read_at": at(1)}), 422)
	testkit.Expect(t, gw.Do(t, "POST", "/assets/0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d/meter_readings", rw,
		map[string]any{"meter": "hours", "value": 1, "read_at": at(1)}), 404)

	var got []string
	next := path + "?meter=operating_hours&limit=2"
	for next != "" {
		r := testkit.Expect(t, gw.Do(t, "GET", next, ro, nil), 200)
		for _, item := range r.List() {
			got = append(got, fmt.Sprint(item["value"]))
		}
		next = ""
		if link := r.Header.Get("Link"); link != "" {
			next = strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`), stack.RegistryURL)
		}
	}
	if strings.Join(got, " ") != "100 150 5" {
		t.Errorf("readings oldest first: %v", got)
	}
}

// Action types: the four are listed; an admin adds one (a name of the
// right shape, once); an action of the added type is recorded, one of a
// type nobody added is a 422.
func TestActionTypesThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro, root := readWrite(t), readOnly(t), admin(t)
	gw := gateway()
	listed := func() []string {
		var names []string
		for _, item := range testkit.Expect(t, gw.Do(t, "GET", "/action_types", ro, nil), 200).List() {
			names = append(names, item["name"].(string))
		}
		return names
	}
	for _, builtin := range []string{"expert_control", "maintenance", "pre_use_inspection", "repair"} {
		if !slices.Contains(listed(), builtin) {
			t.Errorf("%s is not listed", builtin)
		}
	}
	name := "load_test_" + randomHex()[:8]
	asset := strings.TrimPrefix(newAsset(t, rw), "/assets/")
	action := map[string]any{"asset_id": asset, "action_type": name, "performed_at": "2025-03-14"}
	if !slices.Contains(testkit.Expect(t, gw.Do(t, "POST", "/actions", rw, action), 422).Fields(), "action_type") {
		t.Error("an action of a type nobody added: want a 422 naming action_type")
	}
	testkit.Expect(t, gw.Do(t, "POST", "/action_types", rw, map[string]any{"name": name}), 403)
	created := testkit.Expect(t, gw.Do(t, "POST", "/action_types", root, map[string]any{"name": name, "description": "Proof load."}), 201).JSON()
	if created["name"] != name || created["created_at"] == nil {
		t.Errorf("created: %v", created)
	}
	testkit.Expect(t, gw.Do(t, "POST", "/action_types", root, map[string]any{"name": name}), 409)
	if !slices.Contains(testkit.Expect(t, gw.Do(t, "POST", "/action_types", root, map[string]any{"name": "Load Test"}), 422).Fields(), "name") {
		t.Error("a name of the wrong shape: want a 422 naming name")
	}
	if !slices.Contains(listed(), name) {
		t.Errorf("%s is not listed after its add", name)
	}
	recorded := testkit.Expect(t, gw.Do(t, "POST", "/actions", rw, action), 201).JSON()
	if recorded["action_type"] != name {
		t.Errorf("action of the added type: %v", recorded)
	}
	eventually(t, "the asset has a compliance row of the added type", func() string {
		rows := testkit.Expect(t, gw.Do(t, "GET", "/compliance?asset_id="+asset, ro, nil), 200).List()
		var types []string
		for _, r := range rows {
			types = append(types, r["action_type"].(string))
		}
		if len(rows) != 5 || !slices.Contains(types, name) {
			return fmt.Sprintf("rows of %v", types)
		}
		return ""
	})
}
