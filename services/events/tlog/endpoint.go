package tlog

import (
	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
)

// Endpoints holds one go-kit endpoint per operation.
type Endpoints struct {
	Checkpoint  endpoint.Endpoint
	LogKeys     endpoint.Endpoint
	Inclusion   endpoint.Endpoint
	Consistency endpoint.Endpoint
	Entry       endpoint.Endpoint
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		Checkpoint:  endpoints.New(s.Checkpoint),
		LogKeys:     endpoints.New(s.LogKeys),
		Inclusion:   endpoints.New(s.Inclusion),
		Consistency: endpoints.New(s.Consistency),
		Entry:       endpoints.New(s.Entry),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}
