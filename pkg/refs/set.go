package refs

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/peer"
)

// Paths of the protocol; internal, so the gateway never routes them and
// only the services' own identities may call them.
const (
	ExistsPath    = peer.InternalPrefix + "refs/exists"
	ExistsAllPath = peer.InternalPrefix + "refs/exists-all"
	ReferrersPath = peer.InternalPrefix + "refs/referrers"
	ListPath      = peer.InternalPrefix + "refs/list"
)

// Wire types of the protocol.
type (
	ExistsRequest struct {
		Kind string      `json:"kind"`
		IDs  []uuid.UUID `json:"ids"`
	}
	ExistsResponse struct {
		Found []Found `json:"found"`
	}
	// ExistsAllRequest asks about several kinds at once.
	ExistsAllRequest struct {
		Asks []Ask `json:"asks"`
	}
	ExistsAllResponse struct {
		Found []KindFound `json:"found"`
	}
	KindFound struct {
		Kind  string    `json:"kind"`
		ID    uuid.UUID `json:"id"`
		Attrs Attrs     `json:"attrs,omitempty"`
	}
	Found struct {
		ID    uuid.UUID `json:"id"`
		Attrs Attrs     `json:"attrs,omitempty"`
	}
	ReferrersRequest struct {
		Kind   string    `json:"kind"`
		ID     uuid.UUID `json:"id"`
		Settle bool      `json:"settle"`
	}
	ReferrersResponse struct {
		Referrers []Ref `json:"referrers"`
	}
	ListRequest struct {
		Kind  string    `json:"kind"`
		After uuid.UUID `json:"after"`
		Limit int       `json:"limit"`
	}
	ListResponse struct {
		Found []Found `json:"found"`
	}
)

// Set is the protocol's endpoints, in the manner of go-kit's addsvc: the
// same Set serves a service's own Registry over HTTP (MakeServerEndpoints)
// and is the typed client of a peer (NewClient), implementing Service.
type Set struct {
	ExistsEndpoint    endpoint.Endpoint
	ExistsAllEndpoint endpoint.Endpoint
	ReferrersEndpoint endpoint.Endpoint
	ListEndpoint      endpoint.Endpoint
}

// MakeServerEndpoints adapts s, with the middleware on every endpoint.
func MakeServerEndpoints(s Service, middleware ...endpoint.Middleware) Set {
	set := Set{
		ExistsEndpoint: endpoints.New(func(ctx context.Context, req ExistsRequest) (ExistsResponse, error) {
			found, err := s.Exists(ctx, req.Kind, req.IDs)
			resp := ExistsResponse{Found: make([]Found, 0, len(found))}
			for id, attrs := range found {
				resp.Found = append(resp.Found, Found{ID: id, Attrs: attrs})
			}
			return resp, err
		}),
		ExistsAllEndpoint: endpoints.New(func(ctx context.Context, req ExistsAllRequest) (ExistsAllResponse, error) {
			found, err := s.ExistsAll(ctx, req.Asks)
			resp := ExistsAllResponse{Found: make([]KindFound, 0, len(found))}
			for k, attrs := range found {
				resp.Found = append(resp.Found, KindFound{Kind: k.Kind, ID: k.ID, Attrs: attrs})
			}
			return resp, err
		}),
		ReferrersEndpoint: endpoints.New(func(ctx context.Context, req ReferrersRequest) (ReferrersResponse, error) {
			refs, err := s.Referrers(ctx, req.Kind, req.ID, req.Settle)
			return ReferrersResponse{Referrers: refs}, err
		}),
		ListEndpoint: endpoints.New(func(ctx context.Context, req ListRequest) (ListResponse, error) {
			found, err := s.List(ctx, req.Kind, req.After, req.Limit)
			return ListResponse{Found: found}, err
		}),
	}
	endpoints.Wrap(&set, middleware...)
	return set
}

// Mount adds the protocol's internal routes to a service's router.
func (s Set) Mount(r *httpx.Router) {
	r.Handle("POST", ExistsPath, endpoints.Serve(s.ExistsEndpoint, httpx.Body[ExistsRequest]))
	r.Handle("POST", ExistsAllPath, endpoints.Serve(s.ExistsAllEndpoint, httpx.Body[ExistsAllRequest]))
	r.Handle("POST", ReferrersPath, endpoints.Serve(s.ReferrersEndpoint, httpx.Body[ReferrersRequest]))
	r.Handle("POST", ListPath, endpoints.Serve(s.ListEndpoint, httpx.Body[ListRequest]))
}

// NewClient is the typed client of a peer's side of the protocol.
func NewClient(c *peer.Client) Set {
	return Set{
		ExistsEndpoint: func(ctx context.Context, request any) (any, error) {
			var resp ExistsResponse
			err := c.Call(ctx, "POST", ExistsPath, request, &resp)
			return resp, err
		},
		ExistsAllEndpoint: func(ctx context.Context, request any) (any, error) {
			var resp ExistsAllResponse
			err := c.Call(ctx, "POST", ExistsAllPath, request, &resp)
			return resp, err
		},
		ReferrersEndpoint: func(ctx context.Context, request any) (any, error) {
			var resp ReferrersResponse
			err := c.Call(ctx, "POST", ReferrersPath, request, &resp)
			return resp, err
		},
		ListEndpoint: func(ctx context.Context, request any) (any, error) {
			var resp ListResponse
			err := c.Call(ctx, "POST", ListPath, request, &resp)
			return resp, err
		},
	}
}

// Exists implements Service over the set's endpoint.
func (s Set) Exists(ctx context.Context, kind string, ids []uuid.UUID) (map[uuid.UUID]Attrs, error) {
	resp, err := s.ExistsEndpoint(ctx, ExistsRequest{Kind: kind, IDs: ids})
	if err != nil {
		return nil, err
	}
	found := map[uuid.UUID]Attrs{}
	for _, f := range resp.(ExistsResponse).Found {
		found[f.ID] = f.Attrs
	}
	return found, nil
}

// ExistsAll implements Service over the set's endpoint.
func (s Set) ExistsAll(ctx context.Context, asks []Ask) (map[Key]Attrs, error) {
	resp, err := s.ExistsAllEndpoint(ctx, ExistsAllRequest{Asks: asks})
	if err != nil {
		return nil, err
	}
	found := map[Key]Attrs{}
	for _, f := range resp.(ExistsAllResponse).Found {
		found[Key{f.Kind, f.ID}] = f.Attrs
	}
	return found, nil
}

// Referrers implements Service over the set's endpoint.
func (s Set) Referrers(ctx context.Context, kind string, id uuid.UUID, settle bool) ([]Ref, error) {
	resp, err := s.ReferrersEndpoint(ctx, ReferrersRequest{Kind: kind, ID: id, Settle: settle})
	if err != nil {
		return nil, err
	}
	return resp.(ReferrersResponse).Referrers, nil
}

// List implements Service over the set's endpoint.
func (s Set) List(ctx context.Context, kind string, after uuid.UUID, limit int) ([]Found, error) {
	resp, err := s.ListEndpoint(ctx, ListRequest{Kind: kind, After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	return resp.(ListResponse).Found, nil
}
