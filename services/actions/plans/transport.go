package plans

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes adds the routes of inspection plans to r (the actions' router).
// Plans are an admin's to write. The presets' literal segment is matched
// before a plan's id.
func Routes(r *httpx.Router, e Endpoints) {
	handle := r.Handle
	handle("GET", "/inspection_plans/presets", endpoints.Serve(e.PlanPresets, decodeNothing))
	handle("POST", "/inspection_plans", endpoints.Serve(e.CreatePlan, httpx.Body[PlanInput], endpoints.IdempotencyKey, endpoints.AdminOnly))
	handle("GET", "/inspection_plans", endpoints.Serve(e.ListPlans, decodeListPlans))
	handle("GET", "/inspection_plans/{id}", endpoints.Serve(e.GetPlan, httpx.PathID))
	handle("PATCH", "/inspection_plans/{id}", endpoints.Serve(e.UpdatePlan, httpx.PathIDBody[PlanPatch], endpoints.IfMatch, endpoints.OwnerOnly, endpoints.AdminOnly))
	handle("DELETE", "/inspection_plans/{id}", endpoints.Serve(e.DeletePlan, httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly, endpoints.AdminOnly))
}

func decodeListPlans(r *http.Request) (httpx.ListRequest[PlanFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "action_type", "asset_type_id", "asset_id")
	f := PlanFilter{ActionType: q.String("action_type"), AssetTypeID: q.UUID("asset_type_id"), AssetID: q.UUID("asset_id")}
	return httpx.ListRequest[PlanFilter]{Filter: f, Page: q.Page()}, q.Err()
}

// decodeNothing reads a request that carries nothing: no query, no body.
func decodeNothing(r *http.Request) (struct{}, error) { return struct{}{}, httpx.NoQuery(r) }
