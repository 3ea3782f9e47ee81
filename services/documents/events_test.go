package documents

import (
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// An upload records document.created and a delete document.deleted, each
// with the document as GET answers it; a replay and a refused upload record
// nothing.
func TestEventsOfEveryWrite(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	body, contentType := testkit.Multipart(t, typePart("expert_control_report"), filePart("report.pdf", "application/pdf", "%PDF-1.4 x"))
	id := s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", contentType, "Idempotency-Key", "doc-1").JSON()["id"].(string)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "document.created", ID: id, Data: s.GET("/documents/" + id)})
	s.Call(201, "POST", "/documents", s.RW, body, "Content-Type", contentType, "Idempotency-Key", "doc-1") // a replay
	bad, badType := testkit.Multipart(t, filePart("report.pdf", "application/pdf", "x"))                   // no document_type
	s.Call(422, "POST", "/documents", s.RW, bad, "Content-Type", badType)
	s.WantEvents(t, "rw-client")

	gone := s.GET("/documents/" + id)
	s.Call(204, "DELETE", "/documents/"+id, s.RW, nil)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "document.deleted", ID: id, Data: gone})
}
