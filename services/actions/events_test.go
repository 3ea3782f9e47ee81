package actions

import (
	"testing"

	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// Every committed write records exactly one event per change, its data
// the resource as its answers show it; replays and refused writes record
// none, and a deleted action takes its action documents' events along.
func TestEventsOfEveryWrite(t *testing.T) {
	w := newWorld(t)
	id := w.Call(201, "POST", "/actions", w.RW, w.action(nil), "Idempotency-Key", "action-1").JSON()["id"].(string)
	path := "/actions/" + id
	w.WantEvents(t, "rw-client", servicetest.Event{Type: "action.created", ID: id, Data: w.GET(path)})
	w.Call(201, "POST", "/actions", w.RW, w.action(nil), "Idempotency-Key", "action-1") // a replay
	w.WantEvents(t, "rw-client")

	w.Call(200, "PATCH", path, w.RW, `{"reference":"EK-43"}`)
	w.WantEvents(t, "rw-client", servicetest.Event{Type: "action.updated", ID: id, Data: w.GET(path),
		Changes: []string{"reference", "updated_at"}})

	doc := w.document()
	created := w.Call(201, "POST", path+"/action_documents", w.RW, map[string]any{"action_id": id, "document_id": doc, "source_system": "app", "source_reference": "r-0"})
	docID := created.JSON()["id"].(string)
	w.WantEvents(t, "rw-client", servicetest.Event{Type: "action_document.created", ID: docID, Data: created.Raw})
	w.Call(409, "POST", path+"/action_documents", w.RW, map[string]any{"action_id": id, "document_id": doc, "source_system": "app", "source_reference": "r-9"}) // linked already
	w.WantEvents(t, "rw-client")
	patched := w.Call(200, "PATCH", path+"/action_documents/"+docID, w.RW, `{"source_reference":"r-1"}`)
	w.WantEvents(t, "rw-client", servicetest.Event{Type: "action_document.updated", ID: docID, Data: patched.Raw,
		Changes: []string{"source_reference", "updated_at"}})
	w.Call(204, "DELETE", path+"/action_documents/"+docID, w.RW, nil)
	w.WantEvents(t, "rw-client", servicetest.Event{Type: "action_document.deleted", ID: docID, Data: patched.Raw})

	second := w.Call(201, "POST", path+"/action_documents", w.RW, map[string]any{"action_id": id, "document_id": w.document(), "source_system": "app", "source_reference": "r-2"})
	secondID := second.JSON()["id"].(string)
	w.Events(t)
	gone := w.GET(path)
	w.Call(204, "DELETE", path, w.RW, nil)
	w.WantEvents(t, "rw-client",
		servicetest.Event{Type: "action_document.deleted", ID: secondID, Data: second.Raw},
		servicetest.Event{Type: "action.deleted", ID: id, Data: gone})
	w.Call(404, "DELETE", path, w.RW, nil)
	w.WantEvents(t, "rw-client")
}
