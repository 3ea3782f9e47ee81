package meters

import (
	"context"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/model"
)

// Endpoints holds one go-kit endpoint per operation on meter readings.
type Endpoints struct {
	CreateReading, CreateReadings, GetReading, ListReadings endpoint.Endpoint
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateReading: endpoints.ByCaller(endpoints.Created(endpoints.ByID(s.CreateReading), readingLocation)),
		CreateReadings: endpoints.ByCaller(func(ctx context.Context, by model.Caller, req readingsBatch) (any, error) {
			return endpoints.Batch(func(ctx context.Context, by model.Caller, in []ReadingInput, errs []error) ([]model.ItemOutcome, error) {
				return s.CreateReadings(ctx, by, req.AssetID, in, errs)
			})(ctx, by, req.BatchRequest)
		}),
		GetReading: endpoints.ByCaller(func(ctx context.Context, by model.Caller, req readingPath) (Reading, error) {
			return s.GetReading(ctx, by, req.AssetID, req.ID)
		}),
		ListReadings: endpoints.ByCaller(endpoints.ListBy(s.ListReadings)),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

func readingLocation(r Reading) string {
	return "/assets/" + r.AssetID.String() + "/meter_readings/" + r.ID.String()
}
