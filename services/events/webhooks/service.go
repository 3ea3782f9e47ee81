// Package webhooks is the events service's subscriptions and their
// deliveries: the fan-out of stored events to the subscriptions that name
// their types, the dispatcher that sends them signed, retried and in
// order per subject, and where deliveries may go.
package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Service is the subscriptions' domain. Subscriptions are private to the
// client that made them (their routes declare endpoints.Private): anyone
// else but an admin is told one does not exist (404, model.Guard.Sees).
type Service interface {
	CreateWebhook(ctx context.Context, by model.Caller, in WebhookInput) (Webhook, error)
	GetWebhook(ctx context.Context, g model.Guard, id uuid.UUID) (Webhook, error)
	// ListWebhooks lists the caller's own subscriptions.
	ListWebhooks(ctx context.Context, by model.Caller, _ struct{}, page model.Page) (model.Paged[Webhook], error)
	UpdateWebhook(ctx context.Context, g model.Guard, id uuid.UUID, patch WebhookPatch) (Webhook, error)
	DeleteWebhook(ctx context.Context, g model.Guard, id uuid.UUID) error
	RotateSecret(ctx context.Context, g model.Guard, id uuid.UUID) (Webhook, error)
	ListDeliveries(ctx context.Context, g model.Guard, f DeliveryFilter, page model.Page) (model.Paged[Delivery], error)
	RetryDelivery(ctx context.Context, g model.Guard, p DeliveryPath) (Delivery, error)
}

// Settings are the subscriptions' rules that an operator sets.
type Settings struct {
	Policy AddressPolicy
	// RotationOverlap is how long the previous secret still signs after a
	// rotation.
	RotationOverlap time.Duration
	// MaxPerClient is how many subscriptions one client may have: each
	// one multiplies the deliveries every event makes.
	MaxPerClient int
}

type service struct {
	store    *Store
	settings Settings
}

// NewService returns the service over st.
func NewService(st *Store, settings Settings) Service { return &service{store: st, settings: settings} }

// DeliveryFilter selects one subscription's deliveries.
type DeliveryFilter struct {
	WebhookID uuid.UUID
	Status    *string
}

func (s *service) CreateWebhook(ctx context.Context, by model.Caller, in WebhookInput) (Webhook, error) {
	in, u, err := in.Normalize()
	if err != nil {
		return Webhook{}, err
	}
	if err := s.settings.Policy.Check(ctx, u); err != nil {
		return Webhook{}, err
	}
	secret := NewSecret()
	w, err := s.store.CreateWebhook(ctx, by, in, secret, func(owned int) error {
		if owned >= s.settings.MaxPerClient {
			return errSubscriptionLimit(s.settings.MaxPerClient)
		}
		return nil
	})
	w.Secret = secret
	return w, err
}

// errSubscriptionLimit is the 409 of a subscription over the client's cap:
// nothing was created, and deleting one makes room.
func errSubscriptionLimit(most int) error {
	e := apperr.Conflict(fmt.Sprintf("this client has %d webhook subscriptions, the most the registry allows one client; delete one it no longer needs (or widen the types of another) first", most))
	e.Code = "subscription-limit"
	return e.With("limit", most)
}

// visible is the rule of subscriptions, as their routes declare it
// (endpoints.Private): only the client that made one sees it, and an admin
// may change or delete it; anyone else is told it does not exist.
func visible(g model.Guard, w webhookRow) error {
	if g.Sees(w.CreatedBy) {
		return nil
	}
	return apperr.NotFound("webhook", w.ID.String())
}

func (s *service) GetWebhook(ctx context.Context, g model.Guard, id uuid.UUID) (Webhook, error) {
	w, err := s.store.GetWebhook(ctx, id)
	if err == nil {
		err = visible(g, w)
	}
	return w.Webhook, err
}

func (s *service) ListWebhooks(ctx context.Context, by model.Caller, _ struct{}, page model.Page) (model.Paged[Webhook], error) {
	return s.store.ListWebhooks(ctx, by.Subject, page)
}

func (s *service) UpdateWebhook(ctx context.Context, g model.Guard, id uuid.UUID, patch WebhookPatch) (Webhook, error) {
	w, err := s.store.UpdateWebhook(ctx, g, id, func(w webhookRow) error { return visible(g, w) }, func(w webhookRow) (webhookRow, error) {
		in, u, err := patch.Apply(WebhookInput{URL: w.URL, Types: w.Types, Description: w.Description})
		if err != nil {
			return w, err
		}
		if patch.URL.Set {
			if err := s.settings.Policy.Check(ctx, u); err != nil {
				return w, err
			}
		}
		w.URL, w.Types, w.Description = in.URL, in.Types, in.Description
		return w, nil
	})
	return w.Webhook, err
}

func (s *service) DeleteWebhook(ctx context.Context, g model.Guard, id uuid.UUID) error {
	return s.store.DeleteWebhook(ctx, g, id, func(w webhookRow) error { return visible(g, w) })
}

// RotateSecret gives the subscription a new secret; the one it replaces
// still signs (beside the new one) for the overlap, so a receiver can
// switch without losing a delivery.
func (s *service) RotateSecret(ctx context.Context, g model.Guard, id uuid.UUID) (Webhook, error) {
	secret := NewSecret()
	w, err := s.store.UpdateWebhook(ctx, g, id, func(w webhookRow) error { return visible(g, w) }, func(w webhookRow) (webhookRow, error) {
		until := time.Now().UTC().Add(s.settings.RotationOverlap).Truncate(time.Microsecond)
		previous := w.Secret
		w.Secret, w.PreviousSecret, w.PreviousSecretUntil = secret, &previous, &until
		return w, nil
	})
	out := w.Webhook
	out.Secret = secret
	return out, err
}

// subscription reads a subscription the caller may see.
func (s *service) subscription(ctx context.Context, g model.Guard, id uuid.UUID) error {
	w, err := s.store.GetWebhook(ctx, id)
	if err != nil {
		return err
	}
	return visible(g, w)
}

func (s *service) ListDeliveries(ctx context.Context, g model.Guard, f DeliveryFilter, page model.Page) (model.Paged[Delivery], error) {
	if err := s.subscription(ctx, g, f.WebhookID); err != nil {
		return model.Paged[Delivery]{}, err
	}
	return s.store.ListDeliveries(ctx, f.WebhookID, f.Status, page)
}

func (s *service) RetryDelivery(ctx context.Context, g model.Guard, p DeliveryPath) (Delivery, error) {
	if err := s.subscription(ctx, g, p.WebhookID); err != nil {
		return Delivery{}, err
	}
	return s.store.RetryDelivery(ctx, p)
}
