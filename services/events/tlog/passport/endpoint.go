package passport

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Endpoints holds one go-kit endpoint per operation.
type Endpoints struct {
	Passport endpoint.Endpoint
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		// A passport is written as it is read, and costs the gateway's
		// rate limit by its size (httpx.Streamed).
		Passport: endpoints.New(func(ctx context.Context, asset uuid.UUID) (httpx.Streamed, error) {
			b, err := s.Passport(ctx, asset)
			return httpx.Streamed{Size: b.Size, Write: b.WriteTo}, err
		}),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}
