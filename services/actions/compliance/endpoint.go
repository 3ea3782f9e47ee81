package compliance

import (
	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
)

// Endpoints holds the component's go-kit endpoint.
type Endpoints struct {
	Compliance endpoint.Endpoint
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{Compliance: endpoints.ByCaller(endpoints.ListBy(s.Compliance))}
	endpoints.Wrap(&e, middleware...)
	return e
}
