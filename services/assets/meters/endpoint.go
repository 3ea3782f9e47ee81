package meters

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// Endpoints holds one go-kit endpoint per operation on meter readings.
type Endpoints struct {
	CreateReading endpoint.Endpoint
	GetReading    endpoint.Endpoint
	ListReadings  endpoint.Endpoint
}

// readingPath names one reading of one asset, from the path.
type readingPath struct{ AssetID, ID uuid.UUID }

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	create := func(ctx context.Context, by model.Caller, req httpx.IDBody[ReadingInput]) (Reading, error) {
		return s.CreateReading(ctx, by, req.ID, req.Body)
	}
	e := Endpoints{
		CreateReading: endpoints.ByCaller(endpoints.Created(create, readingLocation)),
		GetReading: endpoints.New(func(ctx context.Context, req readingPath) (Reading, error) {
			return s.GetReading(ctx, req.AssetID, req.ID)
		}),
		ListReadings: endpoints.New(endpoints.List(s.ListReadings)),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

func readingLocation(r Reading) string {
	return "/assets/" + r.AssetID.String() + "/meter_readings/" + r.ID.String()
}
