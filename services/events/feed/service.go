package feed

import (
	"context"
	"encoding/json"
)

// Service is the events service's domain.
type Service interface {
	Feed(ctx context.Context, q FeedQuery) (Feed, error)
	History(ctx context.Context, q HistoryQuery) (History, error)
	// AsOf is a resource as it was at an instant, from its history.
	AsOf(ctx context.Context, q AsOfQuery) (json.RawMessage, error)
}

type service struct {
	store *Store
}

// NewService returns the service over st.
func NewService(st *Store) Service { return &service{store: st} }

func (s *service) Feed(ctx context.Context, q FeedQuery) (Feed, error) {
	return s.store.Feed(ctx, q)
}

func (s *service) History(ctx context.Context, q HistoryQuery) (History, error) {
	return s.store.History(ctx, q)
}

func (s *service) AsOf(ctx context.Context, q AsOfQuery) (json.RawMessage, error) {
	return s.store.AsOf(ctx, q.Kind, q.ID, q.At)
}
