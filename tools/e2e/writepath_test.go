package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

// Deleting an asset while sixteen writers record actions on it, many
// rounds, in half of them on an asset the actions service remembers from
// an earlier action (so it asks the assets service nothing): no action is
// left naming a deleted asset, and every 201's asset exists.
func TestDeleteAssetVersusSixteenActionWritersThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	raceDeleteAgainstCreates(t, deleteRace{
		creators: 16,
		target: func(round int) string {
			asset := newAsset(t, rw)
			if round%2 == 0 {
				id := testkit.Expect(t, gw.Do(t, "POST", "/actions", rw, map[string]any{"asset_id": asset[len("/assets/"):],
					"action_type": "repair", "performed_at": "2025-01-01"}), 201).JSON()["id"].(string)
				testkit.Expect(t, gw.Do(t, "DELETE", "/actions/"+id, rw, nil), 204)
			}
			return asset
		},
		create: func(_, _ int, asset string) testkit.Response {
			return gw.Do(t, "POST", "/actions", rw, map[string]any{"asset_id": asset, "action_type": "repair", "performed_at": "2025-01-01"})
		},
		naming: func(asset string) int {
			return len(testkit.Expect(t, gw.Do(t, "GET", "/actions?asset_id="+asset, ro, nil), 200).List())
		},
	})
}

// The batches through the gateway: assets found or created, actions
// recorded, each item answered on its own, in order, once per key, and
// both in the merged OpenAPI document.
func TestBatchesThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	typ := testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": unique("Batch"), "model": "B1"}), 201).JSON()["id"]
	existing := testkit.Expect(t, gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": unique("SN"), "asset_type_id": typ}), 201).JSON()
	person := testkit.Expect(t, gw.Do(t, "POST", "/people", rw, map[string]any{"first_name": "Batch", "last_name": unique("P")}), 201).JSON()["id"]

	assets := testkit.Expect(t, gw.Do(t, "POST", "/assets/batch", rw, map[string]any{"items": []any{
		map[string]any{"serial_number": unique("SN"), "asset_type_id": typ, "responsible_person_id": person},
		map[string]any{"serial_number": existing["serial_number"], "asset_type_id": typ},
		map[string]any{"serial_number": unique("SN")},
	}}, "Idempotency-Key", unique("assets-batch")), 200).List()
	if len(assets) != 3 || assets[0]["status"] != float64(201) || assets[1]["status"] != float64(200) ||
		assets[1]["id"] != existing["id"] || assets[2]["status"] != float64(422) {
		t.Fatalf("assets batch: %v", assets)
	}
	created := assets[0]["id"].(string)

	key := unique("actions-batch")
	items := []any{
		map[string]any{"asset_id": created, "action_type": "expert_control", "performed_at": "2025-03-14", "person_id": person},
		map[string]any{"asset_id": person, "action_type": "repair", "performed_at": "2025-03-14"},
		map[string]any{"asset_id": existing["id"], "action_type": "maintenance", "performed_at": "2025-03-15"},
	}
	actions := testkit.Expect(t, gw.Do(t, "POST", "/actions/batch", rw, map[string]any{"items": items}, "Idempotency-Key", key), 200)
	results := actions.List()
	if len(results) != 3 || results[0]["status"] != float64(201) || results[1]["status"] != float64(422) || results[2]["status"] != float64(201) {
		t.Fatalf("actions batch: %s", actions.Raw)
	}
	problem := results[1]["problem"].(map[string]any)
	errs, _ := problem["errors"].([]any)
	if problem["status"] != float64(422) || !strings.HasPrefix(problem["type"].(string), "urn:asset-registry:problem:") ||
		len(errs) != 1 || errs[0].(map[string]any)["field"] != "asset_id" {
		t.Errorf("the refused item's problem: %v", problem)
	}
	again := testkit.Expect(t, gw.Do(t, "POST", "/actions/batch", rw, map[string]any{"items": items}, "Idempotency-Key", key), 200)
	if again.Header.Get("Idempotent-Replayed") != "true" || again.List()[0]["id"] != results[0]["id"] {
		t.Errorf("replay: %s", again.Raw)
	}
	if got := testkit.Expect(t, gw.Do(t, "GET", "/actions?asset_id="+created, ro, nil), 200).List(); len(got) != 1 {
		t.Errorf("actions on the batch's asset: %v", got)
	}
	// A token that may only read may not write in batches either.
	testkit.Expect(t, gw.Do(t, "POST", "/actions/batch", ro, map[string]any{"items": items}), 403)

	// The reports of both actions, linked in one call.
	links := []any{}
	for i, action := range []string{results[0]["id"].(string), results[2]["id"].(string)} {
		links = append(links, map[string]any{"action_id": action, "source_system": "e2e", "source_reference": strconv.Itoa(i),
			"document_id": uploadThroughGateway(t, rw, "report.txt", "text/plain", "report "+strconv.Itoa(i))})
	}
	linked := testkit.Expect(t, gw.Do(t, "POST", "/actions/action_documents/batch", rw, map[string]any{"items": links},
		"Idempotency-Key", unique("links-batch")), 200).List()
	if len(linked) != 2 || linked[0]["status"] != float64(201) || linked[1]["status"] != float64(201) {
		t.Fatalf("links batch: %v", linked)
	}
	action := testkit.Expect(t, gw.Do(t, "GET", "/actions/"+results[2]["id"].(string), ro, nil), 200).JSON()
	if docs := action["action_documents"].([]any); len(docs) != 1 || docs[0].(map[string]any)["id"] != linked[1]["id"] {
		t.Errorf("the second action's documents: %v", docs)
	}
	testkit.Expect(t, gw.Do(t, "POST", "/actions/action_documents/batch", ro, map[string]any{"items": links}), 403)

	doc := testkit.Expect(t, gw.Do(t, "GET", "/openapi.json", "", nil), 200).JSON()
	paths := doc["paths"].(map[string]any)
	for _, p := range []string{"/actions/batch", "/assets/batch", "/actions/action_documents/batch"} {
		if paths[p] == nil {
			t.Errorf("/openapi.json has no %s", p)
		}
	}
}
