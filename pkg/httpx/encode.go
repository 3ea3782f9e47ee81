package httpx

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/listing"
	"github.com/assetregistry/registry/pkg/reqinfo"
)

// Response wrappers let an endpoint say which success status applies
// without knowing about http.ResponseWriter; EncodeResponse turns them into
// headers and a JSON body.

// Created is a 201 with a Location header.
type Created struct {
	Value    any
	Location string
}

// NoContent is a 204.
type NoContent struct{}

// List is a JSON array with a Link rel="next" header when more rows follow.
type List struct {
	Items any
	Next  uuid.UUID
}

// ListOf adapts a store result.
func ListOf[T any](r listing.Result[T]) List { return List{Items: r.Items, Next: r.Next} }

// EncodeResponse is the go-kit EncodeResponseFunc of every endpoint.
func EncodeResponse(ctx context.Context, w http.ResponseWriter, response any) error {
	status := http.StatusOK
	body := response
	switch r := response.(type) {
	case Created:
		status, body = http.StatusCreated, r.Value
		w.Header().Set("Location", r.Location)
	case NoContent:
		w.WriteHeader(http.StatusNoContent)
		return nil
	case List:
		body = r.Items
		if r.Next != uuid.Nil {
			w.Header().Set("Link", nextLink(ctx, r.Next))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(body)
}

// nextLink keeps the request's own path and filters and swaps the cursor.
// It is a relative reference so it stays right behind any gateway or
// ingress host name.
func nextLink(ctx context.Context, after uuid.UUID) string {
	info := reqinfo.From(ctx)
	q, _ := url.ParseQuery(info.RawQuery)
	q.Set("cursor", listing.EncodeCursor(after, cursorBinding(q)))
	u := url.URL{Path: info.Path, RawQuery: q.Encode()}
	return "<" + u.String() + `>; rel="next"`
}

// ETagMatches reports whether an If-None-Match or If-Match header names
// etag: "*" matches anything; weak validators compare by their opaque part
// (weak comparison, which is what If-None-Match uses).
func ETagMatches(header, etag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		candidate = strings.TrimSpace(candidate)
		if candidate == "*" || strings.TrimPrefix(candidate, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}
