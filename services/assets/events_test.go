package assets

import (
	"testing"

	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// Every committed write records exactly one event per change, its data
// the resource as GET answers it; replays, finds and repeats record none.
func TestEventsOfEveryWrite(t *testing.T) {
	s := servicetest.Start(t, Spec())
	at := s.Call(201, "POST", "/asset_types", s.RW, liftmaster, "Idempotency-Key", "type-1").JSON()
	id := at["id"].(string)
	path := "/asset_types/" + id
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.created", ID: id, Data: s.GET(path)})
	s.Call(201, "POST", "/asset_types", s.RW, liftmaster, "Idempotency-Key", "type-1") // a replay
	s.WantEvents(t, "rw-client")

	s.Call(200, "PATCH", path, s.RW, `{"emission_class":"Stage V"}`)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.updated", ID: id, Data: s.GET(path),
		Changes: []string{"emission_class", "updated_at"}})

	manual, photo := addDocument(s, "application/pdf"), addDocument(s, "image/png")
	s.Call(201, "POST", path+"/documents", s.RW, map[string]any{"document_id": manual})
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.updated", ID: id, Data: s.GET(path),
		Changes: []string{"documents", "updated_at"}})
	s.Call(200, "POST", path+"/documents", s.RW, map[string]any{"document_id": manual}) // attached already
	s.WantEvents(t, "rw-client")
	s.Call(200, "PUT", path+"/thumbnail", s.RW, map[string]any{"document_id": photo})
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.updated", ID: id, Data: s.GET(path),
		Changes: []string{"thumbnail", "thumbnail_document_id", "updated_at"}})
	s.Call(200, "PUT", path+"/thumbnail", s.RW, map[string]any{"document_id": photo}) // the same again
	s.WantEvents(t, "rw-client")
	s.Call(204, "DELETE", path+"/documents/"+manual, s.RW, nil)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.updated", ID: id, Data: s.GET(path),
		Changes: []string{"documents", "updated_at"}})

	asset := s.Call(201, "POST", "/assets", s.RW, map[string]any{"asset_type_id": id, "serial_number": "SN-1"}).JSON()
	assetID := asset["id"].(string)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset.created", ID: assetID, Data: s.GET("/assets/" + assetID)})
	s.Call(200, "POST", "/assets/find", s.RW, map[string]any{"serial_number": "SN-1"}) // a find that matches
	s.WantEvents(t, "rw-client")
	s.Call(200, "PATCH", "/assets/"+assetID, s.RW, `{"production_year":2020}`)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset.updated", ID: assetID, Data: s.GET("/assets/" + assetID),
		Changes: []string{"production_year", "updated_at"}})

	s.Call(409, "DELETE", path, s.RW, nil) // the type has an asset: nothing deleted, no event
	s.WantEvents(t, "rw-client")
	gone := s.GET("/assets/" + assetID)
	s.Call(204, "DELETE", "/assets/"+assetID, s.RW, nil)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset.deleted", ID: assetID, Data: gone})
	gone = s.GET(path)
	s.Call(204, "DELETE", path, s.RW, nil)
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "asset_type.deleted", ID: id, Data: gone})
}
