package meters

import (
	"context"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/model"
)

// The endpoints of meter readings that the adapters of pkg/endpoints do
// not make alone; the route table (transport.go) names the rest where it
// routes them.

// createReadings answers a batch of readings of the asset in the path, an
// outcome per item.
func createReadings(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, req readingsBatch) (any, error) {
		return endpoints.Batch(func(ctx context.Context, by model.Caller, in []ReadingInput, errs []error) ([]model.ItemOutcome, error) {
			return s.CreateReadings(ctx, by, req.AssetID, in, errs)
		})(ctx, by, req.BatchRequest)
	})
}

// getReading answers one reading of one asset.
func getReading(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, req readingPath) (Reading, error) {
		return s.GetReading(ctx, by, req.AssetID, req.ID)
	})
}

func readingLocation(r Reading) string {
	return "/assets/" + r.AssetID.String() + "/meter_readings/" + r.ID.String()
}
