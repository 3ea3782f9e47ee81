package webhooks

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes is the route table of the subscriptions: per route the
// operation's endpoint, its decoder and its rules. Only the client that
// made a subscription sees it (service.visible): to anyone else it does
// not exist, so the owner rule answers 404 here, and an admin may change
// or delete it.
func Routes(s Service) []endpoints.Route {
	return []endpoints.Route{
		endpoints.On("POST", "/webhooks", endpoints.ByCaller(endpoints.Created(s.CreateWebhook, webhookLocation)),
			httpx.Body[WebhookInput], endpoints.IdempotencyKey),
		endpoints.On("GET", "/webhooks", endpoints.ByCaller(endpoints.ListBy(s.ListWebhooks)), decodeList),
		// A subscription is its maker's alone: to anyone else (but an admin)
		// it does not exist (Private, a 404), rather than being another's
		// (OwnerOnly's 403), which would tell that it exists.
		endpoints.On("GET", "/webhooks/{id}", endpoints.Guarded(s.GetWebhook), httpx.PathID, endpoints.Private),
		endpoints.On("PATCH", "/webhooks/{id}", endpoints.Guarded(endpoints.ByID(s.UpdateWebhook)),
			httpx.PathIDBody[WebhookPatch], endpoints.IfMatch, endpoints.Private),
		endpoints.On("DELETE", "/webhooks/{id}", endpoints.Guarded(endpoints.NoContent(s.DeleteWebhook)),
			httpx.PathID, endpoints.IfMatch, endpoints.Private),
		endpoints.On("POST", "/webhooks/{id}/rotate-secret", endpoints.Guarded(s.RotateSecret),
			httpx.PathID, endpoints.IdempotencyKey, endpoints.Private),
		endpoints.On("GET", "/webhooks/{id}/deliveries", endpoints.Guarded(endpoints.ListBy(s.ListDeliveries)),
			decodeListDeliveries, endpoints.Private),
		endpoints.On("POST", "/webhooks/{id}/deliveries/{delivery_id}/retry", endpoints.Guarded(s.RetryDelivery),
			decodeDeliveryPath, endpoints.IdempotencyKey, endpoints.Private),
	}
}

func decodeList(r *http.Request) (httpx.ListRequest[struct{}], error) {
	q := httpx.ParseQuery(r, "limit", "cursor")
	return httpx.ListRequest[struct{}]{Page: q.Page()}, q.Err()
}

func decodeListDeliveries(r *http.Request) (httpx.ListRequest[DeliveryFilter], error) {
	id, err := httpx.PathUUID(r, "id")
	if err != nil {
		return httpx.ListRequest[DeliveryFilter]{}, err
	}
	q := httpx.ParseQuery(r, "limit", "cursor", "status")
	f := DeliveryFilter{WebhookID: id, Status: q.Enum("status", []string{StatusPending, StatusSucceeded, StatusFailed})}
	return httpx.ListRequest[DeliveryFilter]{Filter: f, Page: q.Page()}, q.Err()
}

func decodeDeliveryPath(r *http.Request) (DeliveryPath, error) {
	ids, err := httpx.PathUUIDs(r, "id", "delivery_id")
	if err != nil {
		return DeliveryPath{}, err
	}
	return DeliveryPath{WebhookID: ids[0], ID: ids[1]}, httpx.NoQuery(r)
}
