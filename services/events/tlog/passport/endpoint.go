package passport

import (
	"context"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// The endpoints of passports that the adapters of pkg/endpoints do not
// make alone; the route table (transport.go) names the rest where it
// routes them.

// createLink answers 201 with the link's URL, absolute, as its Location:
// the one place its token is shown.
func createLink(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(endpoints.Created(endpoints.ByID(s.CreateLink), func(l Link) string { return l.URL }))
}

// deleteLink answers 204.
func deleteLink(s Service) endpoint.Endpoint {
	return endpoints.Guarded(func(ctx context.Context, g model.Guard, p LinkPath) (any, error) {
		return httpx.NoContent{}, s.DeleteLink(ctx, g, p)
	})
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
