package actiontypes

import (
	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
)

// Endpoints holds one go-kit endpoint per operation on action types.
type Endpoints struct {
	ListActionTypes  endpoint.Endpoint
	CreateActionType endpoint.Endpoint
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		ListActionTypes:  endpoints.New(endpoints.List(s.ListActionTypes)),
		CreateActionType: endpoints.ByCaller(endpoints.Created(s.CreateActionType, typeLocation)),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

// typeLocation is where the type is listed: a type has no path of its
// own, its name is its identity.
func typeLocation(ActionType) string { return "/action_types" }
