package passport

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes is the route table of passports: an asset's passport, its links,
// and the passport a link opens, which answers without a token (its token
// is the capability; the gateway charges it to the caller's address). A
// passport is written as it is read, and costs the gateway's rate limit
// by its size (httpx.Streamed).
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("GET", "/assets/{id}/passport", endpoints.ByCaller(streamedBy(s.Passport)), httpx.PathID),
		endpoints.On("POST", "/assets/{id}/passport_links", createLink(s), httpx.PathIDBody[LinkInput], endpoints.IdempotencyKey),
		endpoints.On("GET", "/assets/{id}/passport_links", endpoints.ByCaller(endpoints.ListBy(s.ListLinks)), decodeListLinks),
		endpoints.On("DELETE", "/assets/{id}/passport_links/{link_id}", deleteLink(s), decodeLinkPath, endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("GET", LinkPrefix+"{token}", endpoints.New(streamed(s.LinkedPassport)), decodeToken, endpoints.Anonymous),
	}
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
