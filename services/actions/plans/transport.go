package plans

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes is the route table of inspection plans (mounted on the actions'
// router). Plans are an admin's to write. The presets' literal segment is
// matched before a plan's id.
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("GET", "/inspection_plans/presets", planPresets(s), decodeNothing),
		endpoints.On("POST", "/inspection_plans", endpoints.ByCaller(endpoints.Created(s.CreatePlan, planLocation)),
			httpx.Body[PlanInput], endpoints.IdempotencyKey, endpoints.AdminOnly),
		endpoints.On("GET", "/inspection_plans", endpoints.New(endpoints.List(s.ListPlans)), decodeListPlans),
		endpoints.On("GET", "/inspection_plans/{id}", endpoints.New(s.GetPlan), httpx.PathID),
		endpoints.On("PATCH", "/inspection_plans/{id}", endpoints.Guarded(endpoints.ByID(s.UpdatePlan)),
			httpx.PathIDBody[PlanPatch], endpoints.IfMatch, endpoints.OwnerOnly, endpoints.AdminOnly),
		endpoints.On("DELETE", "/inspection_plans/{id}", endpoints.Guarded(endpoints.NoContent(s.DeletePlan)),
			httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly, endpoints.AdminOnly),
	}
}

func decodeListPlans(r *http.Request) (httpx.ListRequest[PlanFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "action_type", "asset_type_id", "asset_id")
	f := PlanFilter{ActionType: q.String("action_type"), AssetTypeID: q.UUID("asset_type_id"), AssetID: q.UUID("asset_id")}
	return httpx.ListRequest[PlanFilter]{Filter: f, Page: q.Page()}, q.Err()
}

// decodeNothing reads a request that carries nothing: no query, no body.
func decodeNothing(r *http.Request) (struct{}, error) { return struct{}{}, httpx.NoQuery(r) }
