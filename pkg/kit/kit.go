// Package kit keeps go-kit's boilerplate in one place: typed endpoints built
// from plain service methods, request decoders for the shapes every service
// uses, the per-endpoint middleware and the HTTP server for one endpoint.
package kit

import (
	"context"
	"net/http"
	"reflect"
	"time"

	"github.com/go-kit/kit/endpoint"
	kithttp "github.com/go-kit/kit/transport/http"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/problem"
)

// Endpoint adapts a typed function to go-kit's endpoint.Endpoint.
func Endpoint[Req, Resp any](f func(ctx context.Context, req Req) (Resp, error)) endpoint.Endpoint {
	return func(ctx context.Context, request any) (any, error) {
		return f(ctx, request.(Req))
	}
}

// Wrap applies middleware, first listed outermost, to every endpoint field
// of the struct set points to, so cross-cutting behaviour is added in one
// place and a new endpoint cannot miss it.
func Wrap(set any, middleware ...endpoint.Middleware) {
	v := reflect.ValueOf(set).Elem()
	endpointType := reflect.TypeFor[endpoint.Endpoint]()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Type() != endpointType || f.IsNil() {
			continue
		}
		e := f.Interface().(endpoint.Endpoint)
		for j := len(middleware) - 1; j >= 0; j-- {
			e = middleware[j](e)
		}
		f.Set(reflect.ValueOf(e))
	}
}

// NoContent adapts a delete to an endpoint answering 204.
func NoContent(del func(context.Context, uuid.UUID) error) func(context.Context, uuid.UUID) (any, error) {
	return func(ctx context.Context, id uuid.UUID) (any, error) { return httpx.NoContent{}, del(ctx, id) }
}

// Timeout bounds every endpoint call. Work that outlives it (a stuck
// database) ends with a deadline error that the stores report as
// "unavailable", so callers get a 503 instead of a hung connection.
func Timeout(d time.Duration) endpoint.Middleware {
	return func(next endpoint.Endpoint) endpoint.Endpoint {
		return func(ctx context.Context, request any) (any, error) {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return next(ctx, request)
		}
	}
}

// Decoder reads a typed request from HTTP.
type Decoder[Req any] func(r *http.Request) (Req, error)

// Serve is the go-kit HTTP server for one endpoint with the shared response
// encoder and problem error encoder.
func Serve[Req any](e endpoint.Endpoint, decode Decoder[Req]) http.Handler {
	return kithttp.NewServer(e,
		func(_ context.Context, r *http.Request) (any, error) { return decode(r) },
		httpx.EncodeResponse,
		kithttp.ServerErrorEncoder(problem.Write),
	)
}

// IDBody is a request addressed to one resource with a JSON body.
type IDBody[T any] struct {
	ID   uuid.UUID
	Body T
}

// PathID decodes the {id} path parameter.
func PathID(r *http.Request) (uuid.UUID, error) { return httpx.PathUUID(r, "id") }

// Body decodes a strict JSON body.
func Body[T any](r *http.Request) (T, error) {
	var body T
	err := httpx.DecodeJSON(r, &body)
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

// FindRequest is a find's criteria and its create flag.
type FindRequest[T any] struct {
	Criteria T
	Create   bool
}

// Find decodes a find: criteria in the body, ?create=true|false.
func Find[T any](allowCreate bool) Decoder[FindRequest[T]] {
	return func(r *http.Request) (FindRequest[T], error) {
		var req FindRequest[T]
		known := []string{}
		if allowCreate {
			known = append(known, "create")
		}
		q := httpx.ParseQuery(r, known...)
		if allowCreate {
			if create := q.Bool("create"); create != nil {
				req.Create = *create
			}
		}
		if err := q.Err(); err != nil {
			return req, err
		}
		var err error
		req.Criteria, err = Body[T](r)
		return req, err
	}
}
