package plans

import (
	"context"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
)

// planPresets answers the presets, which take no request.
func planPresets(s Service) endpoint.Endpoint {
	return endpoints.New(func(ctx context.Context, _ struct{}) ([]Preset, error) { return s.PlanPresets(ctx) })
}

func planLocation(p Plan) string { return "/inspection_plans/" + p.ID.String() }
