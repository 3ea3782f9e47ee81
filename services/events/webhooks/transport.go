package webhooks

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes adds the subscriptions' routes to r. Only the client that made a
// subscription sees it (service.visible): to anyone else it does not
// exist, so the owner rule answers 404 here, and an admin may change or
// delete it.
func Routes(r *httpx.Router, e Endpoints) {
	handle := r.Handle
	handle("POST", "/webhooks", endpoints.Serve(e.CreateWebhook, httpx.Body[WebhookInput], endpoints.IdempotencyKey))
	handle("GET", "/webhooks", endpoints.Serve(e.ListWebhooks, decodeList))
	// A subscription is its maker's alone: to anyone else (but an admin)
	// it does not exist (Private, a 404), rather than being another's
	// (OwnerOnly's 403), which would tell that it exists.
	handle("GET", "/webhooks/{id}", endpoints.Serve(e.GetWebhook, httpx.PathID, endpoints.Private))
	handle("PATCH", "/webhooks/{id}", endpoints.Serve(e.UpdateWebhook, httpx.PathIDBody[WebhookPatch], endpoints.IfMatch, endpoints.Private))
	handle("DELETE", "/webhooks/{id}", endpoints.Serve(e.DeleteWebhook, httpx.PathID, endpoints.IfMatch, endpoints.Private))
	handle("POST", "/webhooks/{id}/rotate-secret", endpoints.Serve(e.RotateSecret, httpx.PathID, endpoints.IdempotencyKey, endpoints.Private))
	handle("GET", "/webhooks/{id}/deliveries", endpoints.Serve(e.ListDeliveries, decodeListDeliveries, endpoints.Private))
	handle("POST", "/webhooks/{id}/deliveries/{delivery_id}/retry", endpoints.Serve(e.RetryDelivery, decodeDeliveryPath, endpoints.IdempotencyKey, endpoints.Private))
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
	id, err := httpx.PathUUID(r, "id")
	if err != nil {
		return DeliveryPath{}, err
	}
	delivery, err := httpx.PathUUID(r, "delivery_id")
	if err != nil {
		return DeliveryPath{}, err
	}
	return DeliveryPath{WebhookID: id, ID: delivery}, httpx.NoQuery(r)
}
