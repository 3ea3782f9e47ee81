package passport

import (
	"context"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// Endpoints holds one go-kit endpoint per operation.
type Endpoints struct {
	Passport, LinkedPassport          endpoint.Endpoint // a passport, by its asset or by a link
	CreateLink, ListLinks, DeleteLink endpoint.Endpoint // an asset's links
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		// A passport is written as it is read, and costs the gateway's
		// rate limit by its size (httpx.Streamed).
		Passport:       endpoints.ByCaller(streamedBy(s.Passport)),
		LinkedPassport: endpoints.New(streamed(s.LinkedPassport)),
		// A link's Location is its URL, absolute: the one place its token
		// is shown.
		CreateLink: endpoints.ByCaller(endpoints.Created(endpoints.ByID(s.CreateLink), func(l Link) string { return l.URL })),
		ListLinks:  endpoints.ByCaller(endpoints.ListBy(s.ListLinks)),
		DeleteLink: endpoints.Guarded(func(ctx context.Context, g model.Guard, p LinkPath) (any, error) {
			return httpx.NoContent{}, s.DeleteLink(ctx, g, p)
		}),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

// streamed answers a passport as it is read.
// streamedBy is streamed for an operation that takes its caller.
func streamedBy[K any](passport func(context.Context, model.Caller, K) (Bundle, error)) func(context.Context, model.Caller, K) (httpx.Streamed, error) {
	return func(ctx context.Context, by model.Caller, key K) (httpx.Streamed, error) {
		b, err := passport(ctx, by, key)
		return httpx.Streamed{Size: b.Size, Write: b.WriteTo}, err
	}
}

func streamed[K any](passport func(context.Context, K) (Bundle, error)) func(context.Context, K) (httpx.Streamed, error) {
	return func(ctx context.Context, key K) (httpx.Streamed, error) {
		b, err := passport(ctx, key)
		return httpx.Streamed{Size: b.Size, Write: b.WriteTo}, err
	}
}
