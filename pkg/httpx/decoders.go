package httpx

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
)

// Decoder reads a typed request from HTTP; the shapes every service uses
// are below, so a transport only writes the decoders of its own shapes.
type Decoder[Req any] func(r *http.Request) (Req, error)

// IDBody is a request addressed to one resource with a JSON body.
type IDBody[T any] struct {
	ID   uuid.UUID
	Body T
}

// PathID decodes the {id} path parameter of an operation that takes no
// query parameters.
func PathID(r *http.Request) (uuid.UUID, error) {
	id, err := PathUUID(r, "id")
	if err != nil {
		return id, err
	}
	return id, NoQuery(r)
}

// NoQuery is the query rule of an operation without query parameters:
// any parameter is unknown, a 400, so a misplaced filter is never
// silently ignored.
func NoQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	return ParseQuery(r).Err()
}

// Body decodes a strict JSON body of an operation that takes no query
// parameters.
func Body[T any](r *http.Request) (T, error) {
	var body T
	if err := NoQuery(r); err != nil {
		return body, err
	}
	err := DecodeJSON(r, &body)
	return body, err
}

// PathIDBody decodes {id} and a strict JSON body; the id is checked first so
// a malformed path is a 400 whatever the body holds.
func PathIDBody[T any](r *http.Request) (IDBody[T], error) {
	id, err := PathID(r)
	if err != nil {
		return IDBody[T]{}, err
	}
	body, err := Body[T](r)
	return IDBody[T]{ID: id, Body: body}, err
}

// ListRequest is a list's filters and page.
type ListRequest[F any] struct {
	Filter F
	Page   model.Page
}

// LinksRequest asks for one page of what links to the resource ID (an
// organization's people): the paged sub-resource behind a list its answer
// embeds only the first model.MaxEmbedded entries of.
type LinksRequest struct {
	ID   uuid.UUID
	Page model.LinkPage
}

// PathLinks decodes such a request: the {id} path parameter, limit and
// cursor, the cursor bound to the id.
func PathLinks(r *http.Request) (LinksRequest, error) {
	id, err := PathUUID(r, "id")
	if err != nil {
		return LinksRequest{}, err
	}
	q := ParseQuery(r, "limit", "cursor")
	return LinksRequest{ID: id, Page: q.LinkPage(id.String())}, q.Err()
}

// FindRequest is a find's criteria and its create flag.
type FindRequest[T any] struct {
	Criteria T
	Create   bool
}

// Find decodes a find: criteria in the body, ?create=true|false when the
// find can create (otherwise no query parameter is known).
func Find[T any](allowCreate bool) Decoder[FindRequest[T]] {
	return func(r *http.Request) (FindRequest[T], error) {
		var req FindRequest[T]
		known := []string{}
		if allowCreate {
			known = append(known, "create")
		}
		q := ParseQuery(r, known...)
		if allowCreate {
			if create := q.Bool("create"); create != nil {
				req.Create = *create
			}
		}
		if err := q.Err(); err != nil {
			return req, err
		}
		return req, DecodeJSON(r, &req.Criteria)
	}
}
