package actions

import (
	"context"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/model"
)

// Endpoints holds one go-kit endpoint per operation. Each adapts a Service
// method and says which success status applies; everything HTTP-specific
// beyond that lives in the transport.
type Endpoints struct {
	CreateAction  endpoint.Endpoint
	FindAction    endpoint.Endpoint
	CreateActions endpoint.Endpoint
	GetAction     endpoint.Endpoint
	ListActions   endpoint.Endpoint
	UpdateAction  endpoint.Endpoint
	UpdateActions endpoint.Endpoint
	DeleteAction  endpoint.Endpoint
}

// actionsBatch is a batch of actions with its ?find flag.
type actionsBatch struct {
	endpoints.BatchRequest
	Find bool
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateAction:  endpoints.ByCaller(endpoints.Created(s.CreateAction, actionLocation)),
		FindAction:    endpoints.ByCaller(endpoints.FindOrCreate(s.FindAction, actionLocation)),
		GetAction:     endpoints.ByCaller(s.GetAction),
		ListActions:   endpoints.ByCaller(endpoints.ListBy(s.ListActions)),
		UpdateAction:  endpoints.Guarded(endpoints.ByID(s.UpdateAction)),
		DeleteAction:  endpoints.Guarded(endpoints.NoContent(s.DeleteAction)),
		UpdateActions: endpoints.Guarded(endpoints.BatchPatch(s.UpdateActions)),
		// A batch of creates reads ?find beside its items.
		CreateActions: endpoints.ByCaller(func(ctx context.Context, by model.Caller, req actionsBatch) (any, error) {
			return endpoints.Batch(func(ctx context.Context, by model.Caller, in []ActionInput, errs []error) ([]model.ItemOutcome, error) {
				return s.CreateActions(ctx, by, in, errs, req.Find)
			})(ctx, by, req.BatchRequest)
		}),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

func actionLocation(a ActionDetail) string { return "/actions/" + a.ID.String() }
