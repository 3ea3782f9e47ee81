package passport

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes adds the passport's routes to r: an asset's passport, its links,
// and the passport a link opens, which answers without a token (its
// token is the capability; the gateway charges it to the caller's
// address).
func Routes(r *httpx.Router, e Endpoints) {
	handle := r.Handle
	handle("GET", "/assets/{id}/passport", endpoints.Serve(e.Passport, httpx.PathID))
	handle("POST", "/assets/{id}/passport_links", endpoints.Serve(e.CreateLink, httpx.PathIDBody[LinkInput], endpoints.IdempotencyKey))
	handle("GET", "/assets/{id}/passport_links", endpoints.Serve(e.ListLinks, decodeListLinks))
	handle("DELETE", "/assets/{id}/passport_links/{link_id}", endpoints.Serve(e.DeleteLink, decodeLinkPath, endpoints.IfMatch, endpoints.OwnerOnly))
	handle("GET", LinkPrefix+"{token}", endpoints.Serve(e.LinkedPassport, decodeToken, endpoints.Anonymous))
}

func decodeListLinks(r *http.Request) (httpx.ListRequest[uuid.UUID], error) {
	id, err := httpx.PathUUID(r, "id")
	if err != nil {
		return httpx.ListRequest[uuid.UUID]{}, err
	}
	q := httpx.ParseQuery(r, "limit", "cursor")
	return httpx.ListRequest[uuid.UUID]{Filter: id, Page: q.Page()}, q.Err()
}

func decodeLinkPath(r *http.Request) (p LinkPath, err error) {
	if p.AssetID, err = httpx.PathUUID(r, "id"); err == nil {
		if p.ID, err = httpx.PathUUID(r, "link_id"); err == nil {
			err = httpx.NoQuery(r)
		}
	}
	return p, err
}

// decodeToken reads a link's token; one that is not a token is no link,
// a 404 like a deleted one.
func decodeToken(r *http.Request) (string, error) {
	return r.PathValue("token"), httpx.NoQuery(r)
}
