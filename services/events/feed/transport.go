package feed

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// Routes is the route table of the feed and the histories: per route the
// operation's endpoint, its decoder and its rules. A history sits under
// its resource's own path; the gateway sends it here because the catalog
// declares it (catalog.Resource.Under).
func Routes(s Service) []endpoints.Route {
	routes := []endpoints.Route{endpoints.On("GET", "/events", feed(s), decodeFeed)}
	history, asOf := history(s), asOf(s)
	for prefix := range HistoryKinds {
		routes = append(routes, endpoints.On("GET", "/"+prefix+"/{id}/history", history, decodeHistory),
			// The gateway sends here only a GET carrying as_of
			// (catalog.Resource.Query); the resource's owner answers the rest.
			endpoints.On("GET", "/"+prefix+"/{id}", asOf, decodeAsOf))
	}
	return routes
}

// decodeFeed reads after (a cursor, or "now"), type (repeatable) and
// limit. A cursor the registry did not issue is a 400, an unknown type a
// 422 naming type.
func decodeFeed(r *http.Request) (FeedQuery, error) {
	q := httpx.ParseQueryRepeating(r, []string{"type"}, "after", "type", "limit")
	v := FeedQuery{Oldest: true, Limit: q.Limit()}
	var invalid apperr.Validation
	v.Filter = ParseTypes(&invalid, "type", q.Strings("type"), false)
	for _, f := range invalid.Fields() {
		q.Invalid(f.Field, "%s", f.Message)
	}
	switch after := q.String("after"); {
	case after == nil:
	case *after == "now":
		v.Oldest, v.Now = false, true
	default:
		seq, err := model.DecodeSequenceCursor(*after, feedBinding)
		if err != nil {
			q.Bad("after", "is not a cursor of this feed: follow the Link of a previous page, or use now")
		}
		v.Oldest, v.After = false, seq
	}
	return v, q.Err()
}

// pathSubject reads whose history a path names: the kind of resource (the
// path's first segment) and its id.
func pathSubject(r *http.Request) (kind string, id uuid.UUID, err error) {
	id, err = httpx.PathUUID(r, "id")
	if err != nil {
		return "", uuid.Nil, err
	}
	prefix, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return HistoryKinds[prefix], id, nil
}

// decodeHistory reads the resource (the path's first segment), its id and
// the page.
func decodeHistory(r *http.Request) (HistoryQuery, error) {
	kind, id, err := pathSubject(r)
	if err != nil {
		return HistoryQuery{}, err
	}
	hq := HistoryQuery{Kind: kind, ID: id}
	q := httpx.ParseQuery(r, "limit", "cursor")
	hq.Limit = q.Limit()
	if c := q.String("cursor"); c != nil {
		seq, err := model.DecodeSequenceCursor(*c, historyBinding(hq.Kind, id))
		if err != nil {
			q.Bad("cursor", "%s", err.Error())
		}
		hq.After = seq
	}
	return hq, q.Err()
}

// decodeAsOf reads the resource, its id and as_of, which is required: a
// value that is no RFC 3339 timestamp is a 400, one that names no real
// instant a 422.
func decodeAsOf(r *http.Request) (AsOfQuery, error) {
	kind, id, err := pathSubject(r)
	if err != nil {
		return AsOfQuery{}, err
	}
	aq := AsOfQuery{Kind: kind, ID: id}
	q := httpx.ParseQuery(r, "as_of")
	switch v := q.String("as_of"); {
	case v == nil:
		q.Invalid("as_of", "is required here: the instant to read the resource as it was, e.g. 2025-03-14T09:26:53Z")
	default:
		at, err := ParseInstant(*v)
		switch {
		case errors.Is(err, ErrInstantShape):
			q.Bad("as_of", "%s", err.Error())
		case err != nil:
			q.Invalid("as_of", "%s", err.Error())
		}
		aq.At = at
	}
	return aq, q.Err()
}
