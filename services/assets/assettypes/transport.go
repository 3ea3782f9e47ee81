package assettypes

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// DecodeExternalFilter reads source_system and external_id, which filter
// the lists of asset types and of assets alike; an external id means
// nothing without its system.
func DecodeExternalFilter(q *httpx.Query) ExternalFilter {
	f := ExternalFilter{SourceSystem: q.String("source_system"), ExternalID: q.String("external_id")}
	if f.ExternalID != nil && f.SourceSystem == nil {
		q.Invalid("source_system", "is required with external_id")
	}
	return f
}

// Routes is the route table of asset types, their documents and
// thumbnail: per route the operation's endpoint, its decoder and its
// rules.
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("POST", "/asset_types", endpoints.ByCaller(endpoints.Created(s.CreateAssetType, assetTypeLocation)),
			httpx.Body[AssetTypeInput], endpoints.IdempotencyKey),
		endpoints.On("GET", "/asset_types", endpoints.New(endpoints.List(s.ListAssetTypes)), decodeListAssetTypes),
		// cached: answered from Redis until a write changes it (cache.go)
		endpoints.On("GET", "/asset_types/by_brand_and_model", findAssetTypes(s), decodeBrandAndModel),
		endpoints.On("GET", "/asset_types/{id}", endpoints.New(s.GetAssetType), httpx.PathID),
		endpoints.On("GET", "/asset_types/{id}/documents", endpoints.New(endpoints.Links(s.AssetTypeDocuments)), httpx.PathLinks),
		endpoints.On("PATCH", "/asset_types/{id}", endpoints.Guarded(endpoints.ByID(s.UpdateAssetType)),
			httpx.PathIDBody[AssetTypePatch], endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("DELETE", "/asset_types/{id}", endpoints.Guarded(endpoints.NoContent(s.DeleteAssetType)),
			httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("POST", "/asset_types/{id}/documents", attachDocument(s),
			httpx.PathIDBody[DocumentRef], endpoints.IdempotencyKey, endpoints.OwnerOnly),
		endpoints.On("DELETE", "/asset_types/{id}/documents/{document_id}", detachDocument(s),
			decodeAttachment, endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("PUT", "/asset_types/{id}/thumbnail", endpoints.Guarded(endpoints.ByID(s.SetThumbnail)),
			httpx.PathIDBody[DocumentRef], endpoints.OwnerOnly),
	}
}

func decodeListAssetTypes(r *http.Request) (httpx.ListRequest[AssetTypeFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "brand", "model", "version", "source_system", "external_id")
	req := httpx.ListRequest[AssetTypeFilter]{
		Filter: AssetTypeFilter{Brand: q.String("brand"), Model: q.String("model"), Version: q.String("version"),
			External: DecodeExternalFilter(q)},
		Page: q.Page(),
	}
	return req, q.Err()
}

// decodeBrandAndModel reads the criteria from the query (a GET has no
// body); which are required is the service's rule (BrandAndModel.Normalize).
func decodeBrandAndModel(r *http.Request) (BrandAndModel, error) {
	q := httpx.ParseQuery(r, "brand", "model", "version")
	c := BrandAndModel{Version: q.String("version")}
	if b := q.String("brand"); b != nil {
		c.Brand = *b
	}
	if m := q.String("model"); m != nil {
		c.Model = *m
	}
	return c, q.Err()
}

// decodeAttachment reads the asset type's and the document's ids from the
// path; the operation takes no query parameters.
func decodeAttachment(r *http.Request) (attachment, error) {
	typeID, err := httpx.PathID(r)
	if err != nil {
		return attachment{}, err
	}
	documentID, err := httpx.PathUUID(r, "document_id")
	return attachment{AssetTypeID: typeID, DocumentID: documentID}, err
}
