package feed

import (
	"context"
	"encoding/json"

	"github.com/assetregistry/registry/pkg/model"
)

// Service is the events service's domain.
type Service interface {
	// Each read keeps what by sees (docs/events.md, "Who sees which event").
	Feed(ctx context.Context, by model.Caller, q FeedQuery) (Feed, error)
	History(ctx context.Context, by model.Caller, q HistoryQuery) (History, error)
	// AsOf is a resource as it was at an instant, from its history.
	AsOf(ctx context.Context, by model.Caller, q AsOfQuery) (json.RawMessage, error)
}

type service struct {
	store *Store
}

// NewService returns the service over st.
func NewService(st *Store) Service { return &service{store: st} }

// Each read by a bound caller keeps what its organization sees, the copy
// of the assets' access refreshed first (access.Copy.ForRead): a grant,
// its removal or a transfer committed before the call is in force for it.

func (s *service) Feed(ctx context.Context, by model.Caller, q FeedQuery) (Feed, error) {
	var err error
	if q.Organization, err = s.store.Access().ForRead(ctx, by); err != nil {
		return Feed{}, err
	}
	return s.store.Feed(ctx, q)
}

func (s *service) History(ctx context.Context, by model.Caller, q HistoryQuery) (History, error) {
	var err error
	if q.Organization, err = s.store.Access().ForRead(ctx, by); err != nil {
		return History{}, err
	}
	return s.store.History(ctx, q)
}

func (s *service) AsOf(ctx context.Context, by model.Caller, q AsOfQuery) (json.RawMessage, error) {
	var err error
	if q.Organization, err = s.store.Access().ForRead(ctx, by); err != nil {
		return nil, err
	}
	return s.store.AsOf(ctx, q)
}
