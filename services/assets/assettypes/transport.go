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

// Routes adds the routes of asset types, their documents and thumbnail to
// r. Each checks its scope only once routing found it (the router's
// rule), so an unknown path or method is a 404 or 405 whatever the token
// may do.
func Routes(r *httpx.Router, e Endpoints) {
	handle := r.Handle
	handle("POST", "/asset_types", endpoints.Serve(e.CreateAssetType, httpx.Body[AssetTypeInput], endpoints.IdempotencyKey))
	handle("GET", "/asset_types", endpoints.Serve(e.ListAssetTypes, decodeListAssetTypes))
	// cached: answered from Redis until a write changes it (cache.go)
	handle("GET", "/asset_types/by_brand_and_model", endpoints.Serve(e.FindAssetTypes, decodeBrandAndModel))
	handle("GET", "/asset_types/{id}", endpoints.Serve(e.GetAssetType, httpx.PathID))
	handle("GET", "/asset_types/{id}/documents", endpoints.Serve(e.AssetTypeDocuments, httpx.PathLinks))
	handle("PATCH", "/asset_types/{id}", endpoints.Serve(e.UpdateAssetType, httpx.PathIDBody[AssetTypePatch], endpoints.IfMatch, endpoints.OwnerOnly))
	handle("DELETE", "/asset_types/{id}", endpoints.Serve(e.DeleteAssetType, httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly))
	handle("POST", "/asset_types/{id}/documents", endpoints.Serve(e.AttachDocument, httpx.PathIDBody[DocumentRef], endpoints.IdempotencyKey, endpoints.OwnerOnly))
	handle("DELETE", "/asset_types/{id}/documents/{document_id}", endpoints.Serve(e.DetachDocument, decodeAttachment, endpoints.IfMatch, endpoints.OwnerOnly))
	handle("PUT", "/asset_types/{id}/thumbnail", endpoints.Serve(e.SetThumbnail, httpx.PathIDBody[DocumentRef], endpoints.OwnerOnly))
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
