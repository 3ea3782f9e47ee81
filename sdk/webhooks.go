package registry

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// Webhook is a subscription: the events of Types (a type, or a kind's
// "action.*") are delivered to URL, signed with the secret. Secret is set
// only in the answers of a create and a rotation: keep it then.
type Webhook struct {
	Version
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Types       []string `json:"types"`
	Description *string  `json:"description"`
	Secret      string   `json:"secret,omitempty"`
	Audit
}

// WebhookInput is a subscription's create body.
type WebhookInput struct {
	URL         string   `json:"url"`
	Types       []string `json:"types"`
	Description string   `json:"description,omitempty"`
}

// Delivery is one event sent, or to be sent, to one subscription; Status
// is pending, succeeded or failed.
type Delivery struct {
	ID             string     `json:"id"`
	EventID        string     `json:"event_id"`
	Attempts       int        `json:"attempts"`
	Status         string     `json:"status"`
	LastStatusCode *int       `json:"last_status_code"`
	LastError      *string    `json:"last_error"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
}

// Webhooks: a client sees and changes only its own subscriptions.

func (c *Client) ListWebhooks(ctx context.Context, f Filter) iter.Seq2[Webhook, error] {
	return list[Webhook](ctx, c, "/webhooks", f)
}
func (c *Client) GetWebhook(ctx context.Context, id string) (*Webhook, error) {
	return get[Webhook](ctx, c, "/webhooks/"+url.PathEscape(id))
}
func (c *Client) CreateWebhook(ctx context.Context, in WebhookInput, opts ...CallOption) (*Webhook, error) {
	return create[Webhook](ctx, c, "/webhooks", in, opts)
}
func (c *Client) UpdateWebhook(ctx context.Context, id string, p Patch, opts ...CallOption) (*Webhook, error) {
	return update[Webhook](ctx, c, "/webhooks/"+url.PathEscape(id), p, opts)
}
func (c *Client) DeleteWebhook(ctx context.Context, id string, opts ...CallOption) error {
	return c.delete(ctx, "/webhooks/"+url.PathEscape(id), nil, opts)
}

// RotateWebhookSecret gives the subscription a new secret (in the answer);
// the old one still signs beside it for the registry's overlap (24 h by
// default), so the receiver can switch without losing a delivery.
func (c *Client) RotateWebhookSecret(ctx context.Context, id string, opts ...CallOption) (*Webhook, error) {
	return send[Webhook](ctx, c, &call{method: http.MethodPost, path: "/webhooks/" + url.PathEscape(id) + "/rotate-secret", keyed: true}, opts)
}

// WebhookDeliveries pages through a subscription's delivery log, in the
// order the deliveries were queued; status (pending, succeeded, failed)
// narrows it, "" is every status.
func (c *Client) WebhookDeliveries(ctx context.Context, id, status string) iter.Seq2[Delivery, error] {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	return listQuery[Delivery](ctx, c, "/webhooks/"+url.PathEscape(id)+"/deliveries", q)
}

// RetryWebhookDelivery queues a failed delivery again with a fresh retry
// schedule; a pending one is answered as it is, a succeeded one is a 409.
func (c *Client) RetryWebhookDelivery(ctx context.Context, id, deliveryID string, opts ...CallOption) (*Delivery, error) {
	return send[Delivery](ctx, c, &call{method: http.MethodPost,
		path: "/webhooks/" + url.PathEscape(id) + "/deliveries/" + url.PathEscape(deliveryID) + "/retry", keyed: true}, opts)
}
