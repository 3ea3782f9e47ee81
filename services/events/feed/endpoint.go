package feed

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// Endpoints holds one go-kit endpoint per operation.
type Endpoints struct {
	Feed    endpoint.Endpoint
	History endpoint.Endpoint
	AsOf    endpoint.Endpoint
}

// feedBinding and historyBinding tie cursors to what issued them: a feed
// position is global (valid with any type filter), a history position is
// one subject's.
const feedBinding = "events feed"

func historyBinding(kind string, id uuid.UUID) string { return "history " + kind + " " + id.String() }

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		// The feed always links its next page, also when empty: a client
		// polls by following it.
		Feed: endpoints.ByCaller(func(ctx context.Context, by model.Caller, q FeedQuery) (any, error) {
			feed, err := s.Feed(ctx, by, q)
			if err != nil {
				return nil, err
			}
			next := httpx.NextLink(ctx, "after", model.EncodeSequenceCursor(feed.Next, feedBinding))
			return httpx.LinkedList{Items: feed.Events, Next: next}, nil
		}),
		History: endpoints.ByCaller(func(ctx context.Context, by model.Caller, q HistoryQuery) (any, error) {
			h, err := s.History(ctx, by, q)
			if err != nil {
				return nil, err
			}
			list := httpx.LinkedList{Items: h.Events}
			if h.Next != 0 {
				list.Next = httpx.NextLink(ctx, "cursor", model.EncodeSequenceCursor(h.Next, historyBinding(q.Kind, q.ID)))
			}
			return list, nil
		}),

		// The resource as its owner's GET answered it then: its bytes as
		// the event holds them.
		AsOf: endpoints.ByCaller(func(ctx context.Context, by model.Caller, q AsOfQuery) (httpx.RawJSON, error) {
			data, err := s.AsOf(ctx, by, q)
			return httpx.RawJSON(data), err
		}),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}
