package assets

import (
	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
)

// Endpoints holds one go-kit endpoint per operation on assets. Each adapts
// a Service method and says which success status applies; everything
// HTTP-specific beyond that lives in the transport.
type Endpoints struct {
	CreateAsset  endpoint.Endpoint
	CreateAssets endpoint.Endpoint
	GetAsset     endpoint.Endpoint
	ListAssets   endpoint.Endpoint
	FindAsset    endpoint.Endpoint
	UpdateAsset  endpoint.Endpoint
	UpdateAssets endpoint.Endpoint
	DeleteAsset  endpoint.Endpoint
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateAsset:  endpoints.ByCaller(endpoints.Created(s.CreateAsset, assetLocation)),
		CreateAssets: endpoints.ByCaller(endpoints.Batch(s.CreateAssets)),
		GetAsset:     endpoints.ByCaller(s.GetAsset),
		ListAssets:   endpoints.ByCaller(endpoints.ListBy(s.ListAssets)),
		FindAsset:    endpoints.ByCaller(endpoints.FindOrCreate(s.FindAsset, assetLocation)),
		UpdateAsset:  endpoints.Guarded(endpoints.ByID(s.UpdateAsset)),
		UpdateAssets: endpoints.Guarded(endpoints.BatchPatch(s.UpdateAssets)),
		DeleteAsset:  endpoints.Guarded(endpoints.NoContent(s.DeleteAsset)),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

func assetLocation(a Asset) string { return "/assets/" + a.ID.String() }
