package custody

import (
	"net/http"
	"strconv"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/peer"
)

// AccessPath and LookupPath are the internal access API the other
// services keep their copy of who sees what with (pkg/access is its
// client): internal, so the gateway never routes them and only the
// services' own identities may call them.
const (
	AccessPath = peer.InternalPrefix + "asset_access"
	LookupPath = AccessPath + "/lookup"
)

// Routes is the route table of grants, transfers, the admin's owner
// change and the internal access API: per route the operation's endpoint,
// its decoder and its rules. Who may manage grants and move transfers is
// the service's rule (an organization's, not a row's creator's); a
// grant's DELETE declares OwnerOnly for the problem it answers a caller
// that may not (not-owner, naming the client that made the grant).
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("POST", "/assets/owners", endpoints.ByCaller(s.SetOwners), httpx.Body[OwnersInput], endpoints.IdempotencyKey, endpoints.AdminOnly),
		endpoints.On("POST", "/assets/{id}/grants", putGrant(s), httpx.PathIDBody[GrantInput], endpoints.IdempotencyKey),
		endpoints.On("GET", "/assets/{id}/grants", listGrants(s), httpx.PathID),
		endpoints.On("DELETE", "/assets/{id}/grants/{organization_id}", deleteGrant(s), decodeGrantOf, endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("POST", "/assets/{id}/transfers", createTransfer(s), httpx.PathIDBody[TransferInput], endpoints.IdempotencyKey),
		endpoints.On("GET", "/transfers", endpoints.ByCaller(endpoints.ListBy(s.ListTransfers)), decodeListTransfers),
		endpoints.On("GET", "/transfers/{id}", endpoints.ByCaller(s.GetTransfer), httpx.PathID),
		endpoints.On("POST", "/transfers/{id}/accept", endpoints.ByCaller(moving(s, Accept)), httpx.PathID, endpoints.IdempotencyKey),
		endpoints.On("POST", "/transfers/{id}/reject", endpoints.ByCaller(moving(s, Reject)), httpx.PathID, endpoints.IdempotencyKey),
		endpoints.On("POST", "/transfers/{id}/cancel", endpoints.ByCaller(moving(s, Cancel)), httpx.PathID, endpoints.IdempotencyKey),
		endpoints.On("GET", AccessPath, accessChanges(s), decodeAccessPage),
		endpoints.On("POST", LookupPath, endpoints.New(s.LookupAccess), httpx.Body[LookupInput]),
	}
}

// decodeGrantOf reads the asset's and the organization's ids from the
// path; the operation takes no query parameters.
func decodeGrantOf(r *http.Request) (g grantOf, err error) {
	if g.AssetID, err = httpx.PathID(r); err == nil {
		g.OrganizationID, err = httpx.PathUUID(r, "organization_id")
	}
	return g, err
}

func decodeListTransfers(r *http.Request) (httpx.ListRequest[TransferFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "state", "asset_id")
	req := httpx.ListRequest[TransferFilter]{
		Filter: TransferFilter{State: q.Enum("state", States), AssetID: q.UUID("asset_id")},
		Page:   q.Page(),
	}
	return req, q.Err()
}

// decodeAccessPage reads after (a version, default 0) and limit (default
// DefaultAccessLimit, at most MaxAccessLimit); anything else is a 400.
func decodeAccessPage(r *http.Request) (accessPage, error) {
	q := r.URL.Query()
	page := accessPage{Limit: DefaultAccessLimit}
	for name := range q {
		if name != "after" && name != "limit" {
			return page, apperr.BadRequest("unknown query parameter", apperr.FieldError{Field: name, Message: "is not a parameter of this operation"})
		}
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return page, apperr.BadRequest("after must be a version", apperr.FieldError{Field: "after", Message: "must be an integer of 0 or more"})
		}
		page.After = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxAccessLimit {
			return page, apperr.BadRequest("limit out of range", apperr.FieldError{Field: "limit",
				Message: "must be an integer from 1 to " + strconv.Itoa(MaxAccessLimit)})
		}
		page.Limit = n
	}
	return page, nil
}
