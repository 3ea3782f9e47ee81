package httpx

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/google/uuid"
)

// writeJSON writes v and a newline to w as every answer renders it
// (model.Marshal: no HTML escaping).
func writeJSON(w io.Writer, v any) error { return model.EncodeJSON(w, v) }

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
	Items   any
	Next    uuid.UUID
	NextSub uint8
}

// LinkedList is a JSON array with the Link of the next page made by the
// service (a change feed's, which always has one), sent when Next is not
// empty; NextLink makes it.
type LinkedList struct {
	Items any
	Next  string
}

// NextLink is the request's own path and query with the parameter param
// set to value: the next page of a list whose positions the service
// numbers itself. It is relative, like every Link.
func NextLink(ctx context.Context, param, value string) string {
	info := RequestInfoFrom(ctx)
	q, _ := url.ParseQuery(info.RawQuery)
	q.Set(param, value)
	return (&url.URL{Path: info.Path, RawQuery: q.Encode()}).String()
}

// ListOf adapts a store result.
func ListOf[T any](r model.Paged[T]) List {
	return List{Items: r.Items, Next: r.Next, NextSub: r.NextSub}
}

// LinkList is one page of a list of links (model.LinkPaged), with the
// Link of the next when Next is set; Scope is what Query.LinkPage bound
// its cursor to.
type LinkList struct {
	Items any
	Next  *model.LinkKey
	Scope string
}

// LinkListOf adapts a store's page of links of the resource scope.
func LinkListOf[T any](r model.LinkPaged[T], scope string) LinkList {
	return LinkList{Items: r.Items, Next: r.Next, Scope: scope}
}

// Replay is an answer given before, sent again as it was (an
// Idempotency-Key's replay).
type Replay struct {
	Status   int
	Location string
	Body     []byte
}

// RawJSON is a 200 whose JSON body is already rendered (a find answered
// from the cache, which holds the body it once rendered): it is sent as it
// is, never decoded and encoded again.
type RawJSON []byte

// Raw is a 200 whose body is no JSON (a transparency log's tile of
// hashes, its checkpoint as text): sent as it is, with its media type and,
// when set, its caching rule instead of no-store and its strong ETag (a
// GET whose If-None-Match names it is a 304).
type Raw struct {
	ContentType  string
	CacheControl string
	ETag         string
	Body         []byte
}

// Render is what a single-resource response is on the wire: its status,
// Location and JSON body. Idempotency records store exactly this.
func Render(response any) (status int, location string, body []byte, err error) {
	switch r := response.(type) {
	case Created:
		body, err = model.Marshal(r.Value)
		return http.StatusCreated, r.Location, body, err
	case NoContent:
		return http.StatusNoContent, "", nil, nil
	case Replay:
		return r.Status, r.Location, r.Body, nil
	case RawJSON:
		return http.StatusOK, "", r, nil
	}
	body, err = model.Marshal(response)
	return http.StatusOK, "", body, err
}

// EncodeResponse is the go-kit EncodeResponseFunc of every endpoint. A
// single resource carries a strong ETag of its body, and a GET whose
// If-None-Match names it is a 304.
func EncodeResponse(ctx context.Context, w http.ResponseWriter, response any) error {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if s, ok := response.(Streamed); ok {
		return encodeStreamed(ctx, w, s)
	}
	if raw, ok := response.(Raw); ok {
		if raw.CacheControl != "" {
			h.Set("Cache-Control", raw.CacheControl)
		}
		if raw.ETag != "" {
			h.Set("ETag", raw.ETag)
			if notModified(ctx, raw.ETag) {
				w.WriteHeader(http.StatusNotModified)
				return nil
			}
		}
		h.Set("Content-Type", raw.ContentType)
		h.Set("Content-Length", strconv.Itoa(len(raw.Body)))
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(raw.Body)
		return err
	}
	if list, ok := response.(List); ok {
		if list.Next != uuid.Nil {
			h.Set("Link", nextLink(ctx, list.Next, list.NextSub))
		}
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		return writeJSON(w, list.Items)
	}
	if list, ok := response.(LinkList); ok {
		if list.Next != nil {
			info := RequestInfoFrom(ctx)
			q, _ := url.ParseQuery(info.RawQuery)
			h.Set("Link", "<"+NextLink(ctx, "cursor", model.EncodeLinkCursor(*list.Next, list.Scope+"\x00"+cursorBinding(q)))+`>; rel="next"`)
		}
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		return writeJSON(w, list.Items)
	}
	if list, ok := response.(LinkedList); ok {
		if list.Next != "" {
			h.Set("Link", "<"+list.Next+`>; rel="next"`)
		}
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if raw, ok := list.Items.([]json.RawMessage); ok {
			return writeRawArray(w, raw)
		}
		return writeJSON(w, list.Items)
	}
	status, location, body, err := Render(response)
	if err != nil {
		return err
	}
	if replay, ok := response.(Replay); ok && replay.Status != 0 {
		h.Set("Idempotent-Replayed", "true")
	}
	if location != "" {
		h.Set("Location", location)
	}
	if body == nil {
		w.WriteHeader(status)
		return nil
	}
	tag := model.ETagForBody(body)
	h.Set("ETag", tag)
	if status == http.StatusOK && notModified(ctx, tag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(body, '\n'))
	return err
}

// notModified says whether the request is a read whose If-None-Match
// names tag: its answer is a 304.
func notModified(ctx context.Context, tag string) bool {
	c := ConditionsFrom(ctx)
	return (c.Method == http.MethodGet || c.Method == http.MethodHead) && c.IfNoneMatch != "" && model.WeakMatch(c.IfNoneMatch, tag)
}

// writeRawArray writes items, each already JSON (a change feed's events as
// stored, which PostgreSQL checked when they were), as one array, exactly
// as the page's byte bound counts it: "[", the items with "," between
// them, "]\n". The encoder would validate and copy every item into one
// more buffer of the whole body first.
func writeRawArray(w io.Writer, items []json.RawMessage) error {
	sep := []byte("[")
	for _, item := range items {
		if _, err := w.Write(sep); err != nil {
			return err
		}
		if _, err := w.Write(item); err != nil {
			return err
		}
		sep = []byte(",")
	}
	if len(items) == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	_, err := io.WriteString(w, "]\n")
	return err
}

// nextLink keeps the request's own path and filters and swaps the cursor.
// It is a relative reference so it stays right behind any gateway or
// ingress host name.
func nextLink(ctx context.Context, after uuid.UUID, sub uint8) string {
	info := RequestInfoFrom(ctx)
	q, _ := url.ParseQuery(info.RawQuery)
	q.Set("cursor", model.EncodeCursorAt(after, sub, cursorBinding(q)))
	u := url.URL{Path: info.Path, RawQuery: q.Encode()}
	return "<" + u.String() + `>; rel="next"`
}
