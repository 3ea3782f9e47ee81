package webhooks

import (
	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
)

// Endpoints holds one go-kit endpoint per operation.
type Endpoints struct {
	CreateWebhook  endpoint.Endpoint
	GetWebhook     endpoint.Endpoint
	ListWebhooks   endpoint.Endpoint
	UpdateWebhook  endpoint.Endpoint
	DeleteWebhook  endpoint.Endpoint
	RotateSecret   endpoint.Endpoint
	ListDeliveries endpoint.Endpoint
	RetryDelivery  endpoint.Endpoint
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateWebhook:  endpoints.ByCaller(endpoints.Created(s.CreateWebhook, webhookLocation)),
		GetWebhook:     endpoints.Guarded(s.GetWebhook),
		ListWebhooks:   endpoints.ByCaller(endpoints.ListBy(s.ListWebhooks)),
		UpdateWebhook:  endpoints.Guarded(endpoints.ByID(s.UpdateWebhook)),
		DeleteWebhook:  endpoints.Guarded(endpoints.NoContent(s.DeleteWebhook)),
		RotateSecret:   endpoints.Guarded(s.RotateSecret),
		ListDeliveries: endpoints.Guarded(endpoints.ListBy(s.ListDeliveries)),
		RetryDelivery:  endpoints.Guarded(s.RetryDelivery),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

func webhookLocation(w Webhook) string { return "/webhooks/" + w.ID.String() }
