package assets

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/services/assets/assettypes"
)

// NewHTTPHandler is the route table of assets (spec.go adds the asset types' to it). The token
// is verified before it (servicekit); each route checks its scope only
// once routing found it, so an unknown path or method is a 404 or 405
// whatever the token may do.
func NewHTTPHandler(e Endpoints) *httpx.Router {
	r := httpx.NewRouter(auth.RequireScope)
	handle := r.Handle
	handle("POST", "/assets", endpoints.Serve(e.CreateAsset, httpx.Body[AssetInput], endpoints.IdempotencyKey))
	handle("POST", "/assets/batch", endpoints.Serve(e.CreateAssets, endpoints.DecodeBatch, endpoints.IdempotencyKey))
	// Each item carries its own If-Match (if_match); the owner rule is the
	// single PATCH's, item by item.
	handle("PATCH", "/assets/batch", endpoints.Serve(e.UpdateAssets, endpoints.DecodeBatch, endpoints.OwnerOnly))
	handle("GET", "/assets", endpoints.Serve(e.ListAssets, decodeListAssets))
	// cached: answered from Redis until a write changes it (cache.go)
	handle("POST", "/assets/find", endpoints.Serve(e.FindAsset, httpx.Find[AssetQuery](true), endpoints.IdempotencyKey))
	handle("GET", "/assets/{id}", endpoints.Serve(e.GetAsset, httpx.PathID))
	handle("PATCH", "/assets/{id}", endpoints.Serve(e.UpdateAsset, httpx.PathIDBody[AssetPatch], endpoints.IfMatch, endpoints.OwnerOnly))
	handle("DELETE", "/assets/{id}", endpoints.Serve(e.DeleteAsset, httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly))
	return r
}

func decodeListAssets(r *http.Request) (httpx.ListRequest[AssetFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "asset_type_id", "serial_number", "responsible_person_id", "source_system", "external_id",
		"parent_asset_id")
	req := httpx.ListRequest[AssetFilter]{
		Filter: AssetFilter{AssetTypeID: q.UUID("asset_type_id"), SerialNumber: q.String("serial_number"),
			ResponsiblePersonID: q.UUID("responsible_person_id"), External: assettypes.DecodeExternalFilter(q),
			ParentAssetID: q.UUID("parent_asset_id")},
		Page: q.Page(),
	}
	return req, q.Err()
}
