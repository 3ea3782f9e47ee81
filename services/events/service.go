// Package events is the change feed, each resource's history and the
// webhooks of the registry: it consumes the stream every service's outbox
// is published to (NATS JetStream), stores each event once in a global
// order, serves GET /events and GET /<resource>/{id}/history, and delivers
// events to subscribed URLs, signed, retried and in order per subject.
package events

import (
	"context"
	"encoding/json"

	"github.com/assetregistry/registry/services/events/feed"
)

// Service is the events service's domain.
type Service interface {
	Feed(ctx context.Context, q feed.FeedQuery) (feed.Feed, error)
	History(ctx context.Context, q feed.HistoryQuery) (feed.History, error)
	// AsOf is a resource as it was at an instant, from its history.
	AsOf(ctx context.Context, q feed.AsOfQuery) (json.RawMessage, error)
}

type service struct {
	store *Store
}

// NewService returns the service over st.
func NewService(st *Store) Service { return &service{store: st} }

func (s *service) Feed(ctx context.Context, q feed.FeedQuery) (feed.Feed, error) {
	return s.store.Feed(ctx, q)
}

func (s *service) History(ctx context.Context, q feed.HistoryQuery) (feed.History, error) {
	return s.store.History(ctx, q)
}

func (s *service) AsOf(ctx context.Context, q feed.AsOfQuery) (json.RawMessage, error) {
	return s.store.AsOf(ctx, q.Kind, q.ID, q.At)
}
