package compliance

import (
	"net/http"
	"slices"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes is the route table of compliance (mounted on the actions'
// router): every reader reads GET /compliance, each its organization's
// rows. The events service reads the same rows of an asset for its
// passport, as a peer (the internal scope).
func Routes(s Service) []endpoints.Route {
	compliance := endpoints.ByCaller(endpoints.ListBy(s.Compliance))
	return []endpoints.Route{
		endpoints.On("GET", "/compliance", compliance, decodeCompliance),
		endpoints.On("GET", auth.InternalPrefix+"compliance", compliance, decodeCompliance),
	}
}

// decodeCompliance reads GET /compliance's filters; action_type and state
// may repeat.
func decodeCompliance(r *http.Request) (httpx.ListRequest[Filter], error) {
	q := httpx.ParseQueryRepeating(r, []string{"action_type", "state", "include"}, "limit", "cursor", "asset_id", "asset_type_id",
		"action_type", "state", "due_before", "as_of", "include")
	f := Filter{
		AssetID: q.UUID("asset_id"), AssetTypeID: q.UUID("asset_type_id"),
		ActionTypes: q.Strings("action_type"), States: q.Enums("state", States),
		DueBefore: q.Date("due_before"), AsOf: q.Date("as_of"),
		Components: slices.Contains(q.Enums("include", []string{"components"}), "components"),
	}
	return httpx.ListRequest[Filter]{Filter: f, Page: q.Page()}, q.Err()
}
