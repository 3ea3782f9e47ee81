package actiontypes

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes adds the routes of action types to r (the actions' router): every
// reader lists them, an admin adds them.
func Routes(r *httpx.Router, e Endpoints) {
	handle := r.Handle
	handle("GET", "/action_types", endpoints.Serve(e.ListActionTypes, decodeListActionTypes))
	handle("POST", "/action_types", endpoints.Serve(e.CreateActionType, httpx.Body[ActionTypeInput], endpoints.IdempotencyKey, endpoints.AdminOnly))
}

func decodeListActionTypes(r *http.Request) (httpx.ListRequest[ActionTypeFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor")
	return httpx.ListRequest[ActionTypeFilter]{Page: q.Page()}, q.Err()
}
