// Package endpoints keeps go-kit's boilerplate in one place and says what
// each operation does besides calling its service method: typed endpoints
// built from plain service methods, the endpoint middleware applied once to
// every endpoint of a set, the go-kit HTTP server for one endpoint with the
// shared response and problem encoders, and idempotency keys, which make a
// POST safe to retry. Decoders live in httpx, beside the rest of the HTTP
// reading.
package endpoints

import (
	"context"
	"net/http"
	"reflect"
	"time"

	"github.com/go-kit/kit/endpoint"
	kithttp "github.com/go-kit/kit/transport/http"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// New adapts a typed function to go-kit's endpoint.Endpoint.
func New[Req, Resp any](f func(ctx context.Context, req Req) (Resp, error)) endpoint.Endpoint {
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

// Created adapts a create to an endpoint answering 201 with the Location
// that location derives from the created value.
func Created[Req, Resp any](create func(context.Context, Req) (Resp, error), location func(Resp) string) func(context.Context, Req) (any, error) {
	return func(ctx context.Context, req Req) (any, error) {
		v, err := create(ctx, req)
		if err != nil {
			return nil, err
		}
		return httpx.Created{Value: v, Location: location(v)}, nil
	}
}

// ByID adapts an operation on one resource with a body (a PATCH, a PUT) to
// the request httpx.PathIDBody decodes.
func ByID[B, T any](f func(context.Context, uuid.UUID, B) (T, error)) func(context.Context, httpx.IDBody[B]) (T, error) {
	return func(ctx context.Context, req httpx.IDBody[B]) (T, error) { return f(ctx, req.ID, req.Body) }
}

// List adapts a list to an endpoint answering one page, with the Link of
// the next when more rows follow.
func List[F, T any](list func(context.Context, F, model.Page) (model.Paged[T], error)) func(context.Context, httpx.ListRequest[F]) (any, error) {
	return func(ctx context.Context, req httpx.ListRequest[F]) (any, error) {
		r, err := list(ctx, req.Filter, req.Page)
		return httpx.ListOf(r), err
	}
}

// FindOrCreate adapts a find that may create (?create=true): 201 with the
// Location that location derives when it created, else 200.
func FindOrCreate[Q, T any](find func(context.Context, Q, bool) (T, bool, error), location func(T) string) func(context.Context, httpx.FindRequest[Q]) (any, error) {
	return func(ctx context.Context, req httpx.FindRequest[Q]) (any, error) {
		v, created, err := find(ctx, req.Criteria, req.Create)
		if err != nil {
			return nil, err
		}
		if created {
			return httpx.Created{Value: v, Location: location(v)}, nil
		}
		return v, nil
	}
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

// Rule is what an operation declares beside its body and its service
// method: the request headers it takes, and whether only the owner may
// change what it changes. A service's transport.go says per route which
// rules apply, and the route table carries them (the conformance tests
// compare them with the API document).
type Rule string

const (
	// IfMatch: a write that refuses with 412 a request whose If-Match no
	// longer names the resource as a GET shows it. Without it, the header
	// is ignored.
	IfMatch Rule = "If-Match"
	// IdempotencyKey: a create whose retry with the same Idempotency-Key
	// replays the first answer instead of acting twice. Without it, the
	// header is ignored.
	IdempotencyKey Rule = IdempotencyKeyHeader
	// OwnerOnly: a change or delete that only the client that created the
	// row (or one holding registry:admin) may make; anyone else gets a 403
	// not-owner problem and nothing changes (auth.MayChange).
	OwnerOnly Rule = "owner-only"
	// AdminOnly: an operator's write (an inspection plan): besides the
	// operation's scope, the token must hold registry:admin, checked with
	// the scope before anything else (auth.RequireScope), else a 403.
	AdminOnly Rule = auth.AdminOnlyRule
)

// Serve is the go-kit HTTP server for one endpoint with the shared response
// encoder (ETags, 304 on If-None-Match) and problem error encoder, under
// the rules the route declares.
func Serve[Req any](e endpoint.Endpoint, decode httpx.Decoder[Req], rules ...Rule) http.Handler {
	conditions := httpx.WithReadConditions
	before := []kithttp.RequestFunc{}
	declared := make([]string, 0, len(rules))
	for _, rule := range rules {
		switch rule {
		case IfMatch:
			conditions = httpx.WithConditions
		case IdempotencyKey:
			e = Idempotent(e)
			before = append(before, IdempotencyBefore)
		case OwnerOnly:
			before = append(before, func(ctx context.Context, _ *http.Request) context.Context { return auth.RequireOwner(ctx) })
		case AdminOnly:
			// Declared to the router, whose scope check refuses the call.
		default:
			panic("endpoints: no rule " + string(rule))
		}
		declared = append(declared, string(rule))
	}
	return declaredServer{
		Handler: kithttp.NewServer(e,
			func(_ context.Context, r *http.Request) (any, error) { return decode(r) },
			httpx.EncodeResponse,
			kithttp.ServerErrorEncoder(httpx.WriteProblem),
			kithttp.ServerBefore(append([]kithttp.RequestFunc{conditions}, before...)...),
		),
		rules: declared,
	}
}

// declaredServer is a go-kit server that tells the router its rules.
type declaredServer struct {
	http.Handler
	rules []string
}

func (s declaredServer) Rules() []string { return s.rules }
