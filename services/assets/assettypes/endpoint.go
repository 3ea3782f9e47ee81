package assettypes

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// The endpoints of asset types that the adapters of pkg/endpoints do not
// make alone; the route table (transport.go) names the rest where it
// routes them.

// attachment names one document of one asset type, from the path: the
// one request shape that is not among httpx's shared ones.
type attachment struct {
	AssetTypeID, DocumentID uuid.UUID
}

// findAssetTypes answers every match, as a list: no page, no ETag.
func findAssetTypes(s Service) endpoint.Endpoint {
	return endpoints.New(func(ctx context.Context, q BrandAndModel) (any, error) {
		types, err := s.FindAssetTypes(ctx, q)
		return httpx.List{Items: types}, err
	})
}

// attachDocument answers a new attachment with 201 and the attachment's
// own path, which DELETE detaches.
func attachDocument(s Service) endpoint.Endpoint {
	return endpoints.Guarded(func(ctx context.Context, g model.Guard, req httpx.IDBody[DocumentRef]) (any, error) {
		t, created, err := s.AttachDocument(ctx, g, req.ID, req.Body)
		if created {
			return httpx.Created{Value: t, Location: assetTypeLocation(t) + "/documents/" + req.Body.DocumentID.String()}, err
		}
		return t, err
	})
}

// detachDocument answers 204.
func detachDocument(s Service) endpoint.Endpoint {
	return endpoints.Guarded(func(ctx context.Context, g model.Guard, req attachment) (any, error) {
		return httpx.NoContent{}, s.DetachDocument(ctx, g, req.AssetTypeID, req.DocumentID)
	})
}

func assetTypeLocation(t AssetTypeDetail) string { return "/asset_types/" + t.ID.String() }
