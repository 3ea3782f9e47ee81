package custody

import (
	"context"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"
)

// The endpoints of custody that the adapters of pkg/endpoints do not make
// alone; the route table (transport.go) names the rest where it routes
// them.

// grantOf names one organization's grant on one asset, from the path.
type grantOf struct {
	AssetID, OrganizationID uuid.UUID
}

// accessPage asks for the access changes after a version.
type accessPage struct {
	After int64
	Limit int
}

// putGrant answers a new grant with 201 and the grant's own path, which
// DELETE removes.
func putGrant(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, req httpx.IDBody[GrantInput]) (any, error) {
		g, created, err := s.PutGrant(ctx, by, req.ID, req.Body)
		if created {
			return httpx.Created{Value: g, Location: "/assets/" + req.ID.String() + "/grants/" + g.OrganizationID.String()}, err
		}
		return g, err
	})
}

// listGrants answers every grant, as a list: an asset has few.
func listGrants(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, assetID uuid.UUID) (any, error) {
		grants, err := s.ListGrants(ctx, by, assetID)
		return httpx.List{Items: grants}, err
	})
}

// deleteGrant answers 204.
func deleteGrant(s Service) endpoint.Endpoint {
	return endpoints.Guarded(func(ctx context.Context, g model.Guard, req grantOf) (any, error) {
		return httpx.NoContent{}, s.DeleteGrant(ctx, g, req.AssetID, req.OrganizationID)
	})
}

// createTransfer answers 201 with the transfer's Location.
func createTransfer(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, req httpx.IDBody[TransferInput]) (any, error) {
		t, err := s.CreateTransfer(ctx, by, req.ID, req.Body)
		if err != nil {
			return nil, err
		}
		return httpx.Created{Value: t, Location: "/transfers/" + t.ID.String()}, nil
	})
}

// accessChanges answers one page of the access log.
func accessChanges(s Service) endpoint.Endpoint {
	return endpoints.New(func(ctx context.Context, req accessPage) (AccessChanges, error) {
		return s.AccessChanges(ctx, req.After, req.Limit)
	})
}

// moving adapts MoveTransfer to one move.
func moving(s Service, move Move) func(context.Context, model.Caller, uuid.UUID) (Transfer, error) {
	return func(ctx context.Context, by model.Caller, id uuid.UUID) (Transfer, error) {
		return s.MoveTransfer(ctx, by, id, move)
	}
}
