package e2e

import (
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

// newAsset makes an asset of a new type through the gateway and returns
// its path.
func newAsset(t *testing.T, rw string) string {
	t.Helper()
	gw := gateway()
	typ := testkit.Expect(t, gw.Do(t, "POST", "/asset_types", rw, map[string]any{"brand": unique("Race"), "model": "A1"}), 201).JSON()["id"]
	return "/assets/" + testkit.Expect(t, gw.Do(t, "POST", "/assets", rw, map[string]any{"serial_number": unique("SN"), "asset_type_id": typ}), 201).JSON()["id"].(string)
}

// Deleting an asset while actions on it are recorded, many rounds: no
// action is left naming a deleted asset.
func TestDeleteAssetVersusActionRaceThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	raceDeleteAgainstCreates(t, deleteRace{
		target: func(int) string { return newAsset(t, rw) },
		create: func(_, _ int, asset string) testkit.Response {
			return gw.Do(t, "POST", "/actions", rw, map[string]any{"asset_id": asset, "action_type": "repair", "performed_at": "2025-01-01"})
		},
		naming: func(asset string) int {
			return len(testkit.Expect(t, gw.Do(t, "GET", "/actions?asset_id="+asset, ro, nil), 200).List())
		},
	})
}

// Deleting a document while actions link it, many rounds: no action
// document is left linking a deleted document. Each creator links its own
// action, so the links never collide with each other.
func TestDeleteDocumentVersusActionDocumentRaceThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	asset := newAsset(t, rw)
	var actions []string
	for range 4 {
		actions = append(actions, testkit.Expect(t, gw.Do(t, "POST", "/actions", rw, map[string]any{"asset_id": asset[len("/assets/"):],
			"action_type": "maintenance", "performed_at": "2025-01-01"}), 201).JSON()["id"].(string))
	}
	raceDeleteAgainstCreates(t, deleteRace{
		target: func(int) string {
			return "/documents/" + uploadThroughGateway(t, rw, "r.pdf", "application/pdf", "%PDF-1.7 "+unique("r"))
		},
		create: func(_, c int, document string) testkit.Response {
			return gw.Do(t, "POST", "/actions/"+actions[c]+"/action_documents", rw, map[string]any{"action_id": actions[c],
				"document_id": document, "source_system": "race", "source_reference": document})
		},
		naming: func(document string) int {
			n := 0
			for _, action := range actions {
				for _, ad := range testkit.Expect(t, gw.Do(t, "GET", "/actions/"+action, ro, nil), 200).JSON()["action_documents"].([]any) {
					if ad.(map[string]any)["document_id"] == document {
						n++
					}
				}
			}
			return n
		},
	})
}
