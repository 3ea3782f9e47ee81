package actions

import (
	"context"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/model"
)

// The endpoints of actions that the adapters of pkg/endpoints do not make
// alone; the route table (transport.go) names the rest where it routes
// them.

// actionsBatch is a batch of actions with its ?find flag.
type actionsBatch struct {
	endpoints.BatchRequest
	Find bool
}

// createActions is a batch of creates, which reads ?find beside its items.
func createActions(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, req actionsBatch) (any, error) {
		return endpoints.Batch(func(ctx context.Context, by model.Caller, in []ActionInput, errs []error) ([]model.ItemOutcome, error) {
			return s.CreateActions(ctx, by, in, errs, req.Find)
		})(ctx, by, req.BatchRequest)
	})
}

func actionLocation(a ActionDetail) string { return "/actions/" + a.ID.String() }
