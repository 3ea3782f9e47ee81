package e2e

import (
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

// Batches of updates through the gateway with real tokens: each item is
// applied under its own If-Match and answered on its own, its new ETag is
// the one a GET sends, its change is in the resource's history, and the
// item budget is drawn on.
func TestBatchUpdatesThroughGateway(t *testing.T) {
	t.Parallel()
	rw, stranger := readWrite(t), other(t)
	gw := gateway()
	call := func(status int, method, path, token string, body any) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, method, path, token, body), status)
	}
	typeID := call(201, "POST", "/asset_types", rw, map[string]any{"brand": unique("Batch"), "model": "B1"}).JSON()["id"].(string)
	asset := func(serial string) (string, string) {
		r := call(201, "POST", "/assets", rw, map[string]any{"serial_number": unique(serial), "asset_type_id": typeID})
		return r.JSON()["id"].(string), r.Header.Get("ETag")
	}
	one, oneTag := asset("SN-1")
	two, _ := asset("SN-2")
	answer := call(200, "PATCH", "/assets/batch", rw, map[string]any{"items": []any{
		map[string]any{"id": one, "if_match": oneTag, "patch": map[string]any{"status": "in service"}},
		map[string]any{"id": two, "if_match": `"stale"`, "patch": map[string]any{"status": "retired"}},
		map[string]any{"id": two, "patch": map[string]any{"production_year": 1800}},
	}})
	if policies := answer.Header.Values("RateLimit-Policy"); len(policies) != 2 {
		t.Errorf("RateLimit-Policy %q: want the request and the item budgets", policies)
	}
	results := answer.List()
	if len(results) != 3 || results[0]["status"] != float64(200) || results[1]["status"] != float64(412) || results[2]["status"] != float64(422) {
		t.Fatalf("results: %v", results)
	}
	got := call(200, "GET", "/assets/"+one, rw, nil)
	if got.JSON()["status"] != "in service" || results[0]["etag"] != got.Header.Get("ETag") {
		t.Errorf("updated item %v; GET %s with ETag %s", results[0], got.Raw, got.Header.Get("ETag"))
	}
	if call(200, "GET", "/assets/"+two, rw, nil).JSON()["status"] != nil {
		t.Error("a refused item changed its asset")
	}
	eventually(t, "the batch's update in the asset's history", func() string {
		for _, e := range gw.Do(t, "GET", "/assets/"+one+"/history", rw, nil).List() {
			if e["type"] == "asset.updated" {
				return ""
			}
		}
		return "no asset.updated"
	})

	action := call(201, "POST", "/actions", rw, map[string]any{"asset_id": one, "action_type": "maintenance", "performed_at": "2025-05-01"})
	id := action.JSON()["id"].(string)
	results = call(200, "PATCH", "/actions/batch", stranger, map[string]any{"items": []any{
		map[string]any{"id": id, "patch": map[string]any{"reference": "NOT-MINE"}}}}).List()
	if len(results) != 1 || results[0]["status"] != float64(403) {
		t.Errorf("another client's action: %v", results)
	}
	results = call(200, "PATCH", "/actions/batch", rw, map[string]any{"items": []any{
		map[string]any{"id": id, "if_match": action.Header.Get("ETag"), "patch": map[string]any{"reference": "WO-7", "status_finalized": true}}}}).List()
	got = call(200, "GET", "/actions/"+id, rw, nil)
	if len(results) != 1 || results[0]["status"] != float64(200) || results[0]["etag"] != got.Header.Get("ETag") || got.JSON()["reference"] != "WO-7" {
		t.Errorf("action item %v; GET %s", results, got.Raw)
	}
}
