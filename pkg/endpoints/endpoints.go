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
	"encoding/json"
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

// Request is what Serve hands an endpoint: the decoded request and the
// rules its route declared, as a value (model.Guard), so that they reach
// the service method as an argument rather than through the context.
type Request struct {
	Guard model.Guard
	In    any
}

// MarshalJSON is the decoded request's: what an Idempotency-Key's
// fingerprint is made of (the caller and the request id are not the
// request).
func (r Request) MarshalJSON() ([]byte, error) { return json.Marshal(r.In) }

// in unwraps what Serve decoded (an endpoint called directly, in tests,
// gets the request itself).
func in(request any) (any, model.Guard) {
	if r, ok := request.(Request); ok {
		return r.In, r.Guard
	}
	return request, model.Guard{}
}

// New adapts a typed function to go-kit's endpoint.Endpoint: an operation
// that obeys no rule of its route (a read).
func New[Req, Resp any](f func(ctx context.Context, req Req) (Resp, error)) endpoint.Endpoint {
	return func(ctx context.Context, request any) (any, error) {
		req, _ := in(request)
		return f(ctx, req.(Req))
	}
}

// Guarded adapts an operation that obeys its route's rules (If-Match, the
// owner rule, privacy) and records its caller: it gets them as a value.
func Guarded[Req, Resp any](f func(ctx context.Context, g model.Guard, req Req) (Resp, error)) endpoint.Endpoint {
	return func(ctx context.Context, request any) (any, error) {
		req, g := in(request)
		return f(ctx, g, req.(Req))
	}
}

// ByCaller adapts an operation that only records or depends on who calls
// (a create, a list of one's own).
func ByCaller[Req, Resp any](f func(ctx context.Context, by model.Caller, req Req) (Resp, error)) endpoint.Endpoint {
	return func(ctx context.Context, request any) (any, error) {
		req, g := in(request)
		return f(ctx, g.Caller, req.(Req))
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

// NoContent adapts a delete, which obeys its route's rules (R is a
// model.Guard), to an endpoint answering 204.
func NoContent[R any](del func(context.Context, R, uuid.UUID) error) func(context.Context, R, uuid.UUID) (any, error) {
	return func(ctx context.Context, rules R, id uuid.UUID) (any, error) {
		return httpx.NoContent{}, del(ctx, rules, id)
	}
}

// Created adapts a create (R is its model.Caller) to an endpoint answering
// 201 with the Location that location derives from the created value.
func Created[R, Req, Resp any](create func(context.Context, R, Req) (Resp, error), location func(Resp) string) func(context.Context, R, Req) (any, error) {
	return func(ctx context.Context, rules R, req Req) (any, error) {
		v, err := create(ctx, rules, req)
		if err != nil {
			return nil, err
		}
		return httpx.Created{Value: v, Location: location(v)}, nil
	}
}

// ByID adapts an operation on one resource with a body (a PATCH, a PUT;
// R is its model.Guard) to the request httpx.PathIDBody decodes.
func ByID[R, B, T any](f func(context.Context, R, uuid.UUID, B) (T, error)) func(context.Context, R, httpx.IDBody[B]) (T, error) {
	return func(ctx context.Context, rules R, req httpx.IDBody[B]) (T, error) {
		return f(ctx, rules, req.ID, req.Body)
	}
}

// List adapts a list to an endpoint answering one page, with the Link of
// the next when more rows follow.
func List[F, T any](list func(context.Context, F, model.Page) (model.Paged[T], error)) func(context.Context, httpx.ListRequest[F]) (any, error) {
	return func(ctx context.Context, req httpx.ListRequest[F]) (any, error) {
		r, err := list(ctx, req.Filter, req.Page)
		return httpx.ListOf(r), err
	}
}

// Links adapts a paged list of what links to one resource (an
// organization's people) to an endpoint answering one page, with the Link
// of the next when more follow.
func Links[T any](list func(context.Context, uuid.UUID, model.LinkPage) (model.LinkPaged[T], error)) func(context.Context, httpx.LinksRequest) (any, error) {
	return func(ctx context.Context, req httpx.LinksRequest) (any, error) {
		r, err := list(ctx, req.ID, req.Page)
		return httpx.LinkListOf(r, req.ID.String()), err
	}
}

// ListBy is List for a list that depends on its caller's rules (R: the
// subscriptions a client made, the deliveries of a subscription only its
// maker sees).
func ListBy[R, F, T any](list func(context.Context, R, F, model.Page) (model.Paged[T], error)) func(context.Context, R, httpx.ListRequest[F]) (any, error) {
	return func(ctx context.Context, rules R, req httpx.ListRequest[F]) (any, error) {
		r, err := list(ctx, rules, req.Filter, req.Page)
		return httpx.ListOf(r), err
	}
}

// FindOrCreate adapts a find that may create (?create=true; R is its
// model.Caller): 201 with the Location that location derives when it
// created, else 200.
func FindOrCreate[R, Q, T any](find func(context.Context, R, Q, bool) (T, bool, error), location func(T) string) func(context.Context, R, httpx.FindRequest[Q]) (any, error) {
	return func(ctx context.Context, rules R, req httpx.FindRequest[Q]) (any, error) {
		v, created, err := find(ctx, rules, req.Criteria, req.Create)
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
// method: the request headers it takes, and who may change or see what it
// touches. A service's transport.go says per route which rules apply; Serve
// hands them to the endpoint as a model.Guard, and the route table carries
// them (the conformance tests compare them with the API document and
// require an ownership case for each OwnerOnly and Private route).
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
	// not-owner problem and nothing changes (model.Guard.MayChange).
	OwnerOnly Rule = "owner-only"
	// AdminOnly: an operator's write (an inspection plan): besides the
	// operation's scope, the token must hold registry:admin, checked with
	// the scope before anything else (auth.RequireScope), else a 403.
	AdminOnly Rule = auth.AdminOnlyRule
	// Private: an operation on a row that only the client that created it
	// (or one holding registry:admin) may know of; anyone else is told it
	// does not exist, a 404 (model.Guard.Sees): a webhook subscription.
	Private Rule = "private"
	// Anonymous: a read that answers without a token (the log's checkpoint
	// and keys, which a verifier holding only a passport needs). The
	// catalog names the same route among its resource's Anonymous ones, so
	// that the gateway lets it through; the document gives it `security: []`.
	Anonymous Rule = auth.AnonymousRule
)

// Serve is the go-kit HTTP server for one endpoint with the shared response
// encoder (ETags, 304 on If-None-Match) and problem error encoder, under
// the rules the route declares: the endpoint gets the decoded request
// with those rules and the caller as a model.Guard (Request).
func Serve[Req any](e endpoint.Endpoint, decode httpx.Decoder[Req], rules ...Rule) http.Handler {
	before := []kithttp.RequestFunc{httpx.WithConditions}
	declared := make([]string, 0, len(rules))
	var takesIfMatch, ownerOnly, private bool
	for _, rule := range rules {
		switch rule {
		case IfMatch:
			takesIfMatch = true
		case IdempotencyKey:
			e = Idempotent(e)
			before = append(before, IdempotencyBefore)
		case OwnerOnly:
			ownerOnly = true
		case Private:
			private = true
		case AdminOnly, Anonymous:
			// Declared to the router: its scope check refuses the call, or
			// lets it through unasked.
		default:
			panic("endpoints: no rule " + string(rule))
		}
		declared = append(declared, string(rule))
	}
	return declaredServer{
		Handler: kithttp.NewServer(e,
			func(ctx context.Context, r *http.Request) (any, error) {
				req, err := decode(r)
				if err != nil {
					return nil, err
				}
				g := model.Guard{Caller: CallerOf(ctx), OwnerOnly: ownerOnly, Private: private}
				if takesIfMatch {
					g.IfMatch = r.Header.Get("If-Match")
				}
				return Request{Guard: g, In: req}, nil
			},
			httpx.EncodeResponse,
			kithttp.ServerErrorEncoder(httpx.WriteProblem),
			kithttp.ServerBefore(before...),
		),
		rules: declared,
	}
}

// CallerOf is the request's caller: the verified token's subject (the
// integration's, for a service calling on its behalf), whether it holds
// registry:admin in a token of its own, and the request id.
func CallerOf(ctx context.Context) model.Caller {
	p, _ := auth.PrincipalFrom(ctx)
	return model.Caller{
		Subject:   auth.Subject(ctx),
		Admin:     p.OnBehalfOf == "" && p.HasScope(auth.ScopeAdmin),
		RequestID: httpx.RequestInfoFrom(ctx).ID,
		// An admin sees every row even when its client is bound.
		Organization: auth.Organization(ctx),
	}
}

// declaredServer is a go-kit server that tells the router its rules.
type declaredServer struct {
	http.Handler
	rules []string
}

func (s declaredServer) Rules() []string { return s.rules }
