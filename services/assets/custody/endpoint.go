package custody

import (
	"context"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"
)

// Endpoints holds one go-kit endpoint per operation of custody. Each
// adapts a Service method and says which success status applies;
// everything HTTP-specific beyond that lives in the transport.
type Endpoints struct {
	PutGrant       endpoint.Endpoint
	ListGrants     endpoint.Endpoint
	DeleteGrant    endpoint.Endpoint
	CreateTransfer endpoint.Endpoint
	GetTransfer    endpoint.Endpoint
	ListTransfers  endpoint.Endpoint
	AcceptTransfer endpoint.Endpoint
	RejectTransfer endpoint.Endpoint
	CancelTransfer endpoint.Endpoint
	SetOwners      endpoint.Endpoint
	AccessChanges  endpoint.Endpoint
	LookupAccess   endpoint.Endpoint
}

// grantOf names one organization's grant on one asset, from the path.
type grantOf struct {
	AssetID, OrganizationID uuid.UUID
}

// accessPage asks for the access changes after a version.
type accessPage struct {
	After int64
	Limit int
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		PutGrant: endpoints.ByCaller(func(ctx context.Context, by model.Caller, req httpx.IDBody[GrantInput]) (any, error) {
			g, created, err := s.PutGrant(ctx, by, req.ID, req.Body)
			if created {
				// The grant's own path: DELETE removes it.
				return httpx.Created{Value: g, Location: "/assets/" + req.ID.String() + "/grants/" + g.OrganizationID.String()}, err
			}
			return g, err
		}),
		// Every grant, as a list: an asset has few.
		ListGrants: endpoints.ByCaller(func(ctx context.Context, by model.Caller, assetID uuid.UUID) (any, error) {
			grants, err := s.ListGrants(ctx, by, assetID)
			return httpx.List{Items: grants}, err
		}),
		DeleteGrant: endpoints.Guarded(func(ctx context.Context, g model.Guard, req grantOf) (any, error) {
			return httpx.NoContent{}, s.DeleteGrant(ctx, g, req.AssetID, req.OrganizationID)
		}),
		CreateTransfer: endpoints.ByCaller(func(ctx context.Context, by model.Caller, req httpx.IDBody[TransferInput]) (any, error) {
			t, err := s.CreateTransfer(ctx, by, req.ID, req.Body)
			if err != nil {
				return nil, err
			}
			return httpx.Created{Value: t, Location: "/transfers/" + t.ID.String()}, nil
		}),
		GetTransfer:    endpoints.ByCaller(s.GetTransfer),
		ListTransfers:  endpoints.ByCaller(endpoints.ListBy(s.ListTransfers)),
		AcceptTransfer: endpoints.ByCaller(moving(s, Accept)),
		RejectTransfer: endpoints.ByCaller(moving(s, Reject)),
		CancelTransfer: endpoints.ByCaller(moving(s, Cancel)),
		SetOwners:      endpoints.ByCaller(s.SetOwners),
		AccessChanges: endpoints.New(func(ctx context.Context, req accessPage) (AccessChanges, error) {
			return s.AccessChanges(ctx, req.After, req.Limit)
		}),
		LookupAccess: endpoints.New(s.LookupAccess),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

// moving adapts MoveTransfer to one move.
func moving(s Service, move Move) func(context.Context, model.Caller, uuid.UUID) (Transfer, error) {
	return func(ctx context.Context, by model.Caller, id uuid.UUID) (Transfer, error) {
		return s.MoveTransfer(ctx, by, id, move)
	}
}
