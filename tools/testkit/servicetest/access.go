package servicetest

import (
	"encoding/json"
	"net/http"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// A stand-in of the assets service also answers the two internal routes
// a service's copy of the assets' access reads (pkg/access), played by an
// AssetAccess (tenancy.go): its log holds only what the test changes
// (ChangeAccess); an asset the test never changed is unknown to it.

// ChangeAccess logs a as the newest change of its asset's owner and
// grants (its Version the log's next), as the assets service does on a
// grant, its removal or a transfer.
func (s *StandIn) ChangeAccess(a model.Access) { s.access.Set(a) }

// mountAccess adds the access routes to the stand-in's router.
func (s *StandIn) mountAccess(r *httpx.Router) {
	s.access = NewAssetAccess()
	routes := s.access.Routes()
	r.Handle("GET", "/internal/asset_access", routes)
	r.Handle("POST", "/internal/asset_access/lookup", routes)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
