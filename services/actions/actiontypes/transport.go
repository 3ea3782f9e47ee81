package actiontypes

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes is the route table of action types (mounted on the actions'
// router): every reader lists them, an admin adds them.
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("GET", "/action_types", endpoints.New(endpoints.List(s.ListActionTypes)), decodeListActionTypes),
		endpoints.On("POST", "/action_types", endpoints.ByCaller(endpoints.Created(s.CreateActionType, typeLocation)),
			httpx.Body[ActionTypeInput], endpoints.IdempotencyKey, endpoints.AdminOnly),
	}
}

func decodeListActionTypes(r *http.Request) (httpx.ListRequest[ActionTypeFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor")
	return httpx.ListRequest[ActionTypeFilter]{Page: q.Page()}, q.Err()
}
