package assets

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/services/assets/assettypes"
)

// Routes is the route table of assets: per route the operation's
// endpoint, its decoder and its rules (spec.go mounts it and the
// components' on one router).
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("POST", "/assets", endpoints.ByCaller(endpoints.Created(s.CreateAsset, assetLocation)),
			httpx.Body[AssetInput], endpoints.IdempotencyKey),
		endpoints.On("POST", "/assets/batch", endpoints.ByCaller(endpoints.Batch(s.CreateAssets)), endpoints.DecodeBatch, endpoints.IdempotencyKey),
		// Each item carries its own If-Match (if_match); the owner rule is the
		// single PATCH's, item by item.
		endpoints.On("PATCH", "/assets/batch", endpoints.Guarded(endpoints.BatchPatch(s.UpdateAssets)), endpoints.DecodeBatch, endpoints.OwnerOnly),
		endpoints.On("GET", "/assets", endpoints.ByCaller(endpoints.ListBy(s.ListAssets)), decodeListAssets),
		// cached: answered from Redis until a write changes it (cache.go)
		endpoints.On("POST", "/assets/find", endpoints.ByCaller(endpoints.FindOrCreate(s.FindAsset, assetLocation)),
			httpx.Find[AssetQuery](true), endpoints.IdempotencyKey),
		endpoints.On("GET", "/assets/{id}", endpoints.ByCaller(s.GetAsset), httpx.PathID),
		endpoints.On("PATCH", "/assets/{id}", endpoints.Guarded(endpoints.ByID(s.UpdateAsset)),
			httpx.PathIDBody[AssetPatch], endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("DELETE", "/assets/{id}", endpoints.Guarded(endpoints.NoContent(s.DeleteAsset)),
			httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly),
	}
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
