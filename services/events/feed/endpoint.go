package feed

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// The endpoints of the feed and the histories; the route table
// (transport.go) routes them.

// feedBinding and historyBinding tie cursors to what issued them: a feed
// position is global (valid with any type filter), a history position is
// one subject's.
const feedBinding = "events feed"

func historyBinding(kind string, id uuid.UUID) string { return "history " + kind + " " + id.String() }

// feed always links its next page, also when empty: a client polls by
// following it.
func feed(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, q FeedQuery) (any, error) {
		feed, err := s.Feed(ctx, by, q)
		if err != nil {
			return nil, err
		}
		next := httpx.NextLink(ctx, "after", model.EncodeSequenceCursor(feed.Next, feedBinding))
		return httpx.LinkedList{Items: feed.Events, Next: next}, nil
	})
}

// history links its next page while more events follow.
func history(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, q HistoryQuery) (any, error) {
		h, err := s.History(ctx, by, q)
		if err != nil {
			return nil, err
		}
		list := httpx.LinkedList{Items: h.Events}
		if h.Next != 0 {
			list.Next = httpx.NextLink(ctx, "cursor", model.EncodeSequenceCursor(h.Next, historyBinding(q.Kind, q.ID)))
		}
		return list, nil
	})
}

// asOf answers the resource as its owner's GET answered it then: its
// bytes as the event holds them.
func asOf(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, q AsOfQuery) (httpx.RawJSON, error) {
		data, err := s.AsOf(ctx, by, q)
		return httpx.RawJSON(data), err
	})
}
