package plans

import (
	"context"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
)

// Endpoints holds one go-kit endpoint per operation.
type Endpoints struct {
	CreatePlan, GetPlan, ListPlans, UpdatePlan, DeletePlan, PlanPresets endpoint.Endpoint
}

// MakeEndpoints adapts s, an endpoint per operation in Endpoints' order;
// every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	presets := func(ctx context.Context, _ struct{}) ([]Preset, error) { return s.PlanPresets(ctx) }
	e := Endpoints{endpoints.ByCaller(endpoints.Created(s.CreatePlan, planLocation)), endpoints.New(s.GetPlan),
		endpoints.New(endpoints.List(s.ListPlans)), endpoints.Guarded(endpoints.ByID(s.UpdatePlan)),
		endpoints.Guarded(endpoints.NoContent(s.DeletePlan)), endpoints.New(presets)}
	endpoints.Wrap(&e, middleware...)
	return e
}

func planLocation(p Plan) string { return "/inspection_plans/" + p.ID.String() }
