// Package crossservice tests services together, in-process, each on its
// production handler stack over real datastores, calling each other over
// HTTP with the internal identity, with every answer checked against its
// service's OpenAPI document. A service's own tests cannot do this: no
// service may import another (make lint), so they meet here, in tools/,
// which may import them all. The end-to-end tests (tools/e2e) run the same
// flows through the gateway against the real binaries.
package crossservice

import (
	"os"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/services/assets"
	"github.com/assetregistry/registry/services/documents"
	"github.com/assetregistry/registry/services/parties"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// upload stores a document and returns its metadata.
func upload(t *testing.T, docs *servicetest.Service, name, contentType, content string) map[string]any {
	t.Helper()
	body, ctype := testkit.Multipart(t, testkit.Field("document_type", "manual"),
		testkit.FormPart{Name: "file", Filename: name, ContentType: contentType, Content: content})
	return docs.Call(201, "POST", "/documents", docs.RW, body, "Content-Type", ctype).JSON()
}

// The assets service checks its references with the real parties and
// documents services, and they refuse to delete what an asset or an asset
// type points at, naming it.
func TestAssetsWithRealPeers(t *testing.T) {
	t.Parallel()
	cluster := servicetest.StartCluster(t, assets.Spec(), parties.Spec(), documents.Spec())
	a, p, d := cluster["assets"], cluster["parties"], cluster["documents"]

	person := p.Call(201, "POST", "/people", p.RW, `{"first_name":"Ingrid","last_name":"Kontrollør"}`).JSON()
	personID := person["id"].(string)
	manual := upload(t, d, "manual.pdf", "application/pdf", "%PDF-1.7 the manual")
	photo := upload(t, d, "front.png", "image/png", "\x89PNG\r\n\x1a\nfront")
	manualID, photoID := manual["id"].(string), photo["id"].(string)

	typ := a.Call(201, "POST", "/asset_types", a.RW, map[string]any{"brand": "Liftmaster", "model": "LM-200"}).JSON()
	typePath := "/asset_types/" + typ["id"].(string)

	// Attaching keeps the document as the documents service describes it.
	attached := a.Call(201, "POST", typePath+"/documents", a.RW, map[string]any{"document_id": manualID}).JSON()
	shown := attached["documents"].([]any)[0].(map[string]any)
	for field, want := range manual {
		// What links the document to actions (and whether that list was
		// cut) is the documents service's answer alone, not the metadata
		// an asset type embeds.
		if field != "action_documents" && field != "action_documents_truncated" && shown[field] != want {
			t.Errorf("attached document %s = %v, documents says %v", field, shown[field], want)
		}
	}
	notImage := a.Call(422, "PUT", typePath+"/thumbnail", a.RW, map[string]any{"document_id": manualID})
	if !strings.Contains(string(notImage.Raw), "application/pdf") {
		t.Errorf("a PDF thumbnail: %s", notImage.Raw)
	}
	a.Call(422, "POST", typePath+"/documents", a.RW, map[string]any{"document_id": personID}) // a person is no document
	a.Call(200, "PUT", typePath+"/thumbnail", a.RW, map[string]any{"document_id": photoID})

	asset := a.Call(201, "POST", "/assets", a.RW, map[string]any{"serial_number": "SN-1", "asset_type_id": typ["id"],
		"responsible_person_id": personID}).JSON()
	a.Call(422, "POST", "/assets", a.RW, map[string]any{"serial_number": "SN-2", "asset_type_id": typ["id"],
		"responsible_person_id": manualID})

	// The owners refuse to delete what assets points at, and say what does.
	refused := p.Call(409, "DELETE", "/people/"+personID, p.RW, nil).JSON()
	if refused["type"] != httpx.ProblemTypePrefix+"still-referenced" || !strings.Contains(refused["detail"].(string), asset["id"].(string)) ||
		!strings.Contains(refused["detail"].(string), "serial number SN-1") {
		t.Errorf("deleting the responsible person: %v", refused)
	}
	for _, doc := range []struct{ id, how string }{{manualID, "attached document"}, {photoID, "thumbnail"}} {
		refused := d.Call(409, "DELETE", "/documents/"+doc.id, d.RW, nil).JSON()
		if !strings.Contains(refused["detail"].(string), typ["id"].(string)) || !strings.Contains(refused["detail"].(string), doc.how) {
			t.Errorf("deleting the %s: %v", doc.how, refused)
		}
	}
	// Asking assets what points at a document does not make it an action
	// document of the document.
	if got := d.Call(200, "GET", "/documents/"+manualID, d.RO, nil).JSON(); len(got["action_documents"].([]any)) != 0 {
		t.Errorf("action_documents = %v", got["action_documents"])
	}

	// Once nothing points at them, they go; and a deleted person cannot be
	// named again.
	a.Call(204, "DELETE", typePath+"/documents/"+manualID, a.RW, nil)
	d.Call(204, "DELETE", "/documents/"+manualID, d.RW, nil)
	a.Call(200, "PATCH", typePath, a.RW, `{"thumbnail_document_id":null}`)
	d.Call(204, "DELETE", "/documents/"+photoID, d.RW, nil)
	a.Call(204, "DELETE", "/assets/"+asset["id"].(string), a.RW, nil)
	p.Call(204, "DELETE", "/people/"+personID, p.RW, nil)
	a.Call(422, "POST", "/assets", a.RW, map[string]any{"serial_number": "SN-3", "asset_type_id": typ["id"], "responsible_person_id": personID})
	a.Call(422, "PUT", typePath+"/thumbnail", a.RW, map[string]any{"document_id": photoID})
}

// A peer that is down makes the writes that need it a 503, and the
// deletes of its targets too: an owner that cannot ask assets what points
// at a person may not delete the person.
func TestPeerDown(t *testing.T) {
	t.Parallel()
	cluster := servicetest.StartCluster(t, assets.Spec(), parties.Spec())
	a, p := cluster["assets"], cluster["parties"]
	person := p.Call(201, "POST", "/people", p.RW, `{"first_name":"Per","last_name":"Hansen"}`).JSON()["id"].(string)
	typ := a.Call(201, "POST", "/asset_types", a.RW, map[string]any{"brand": "B", "model": "M"}).JSON()["id"].(string)
	// documents is played by a stand-in that owns no document.
	a.Call(422, "POST", "/asset_types/"+typ+"/documents", a.RW, map[string]any{"document_id": person})

	a.Built.Store.Pool.Close() // assets cannot answer any more: its database is gone
	r := p.Call(503, "DELETE", "/people/"+person, p.RW, nil)
	if r.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	p.Call(200, "GET", "/people/"+person, p.RO, nil)
}
