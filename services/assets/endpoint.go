package assets

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/listing"
)

// Endpoints holds one go-kit endpoint per operation. Each adapts a Service
// method and says which success status applies; everything HTTP-specific
// beyond that lives in the transport.
type Endpoints struct {
	CreateAssetType endpoint.Endpoint
	GetAssetType    endpoint.Endpoint
	ListAssetTypes  endpoint.Endpoint
	FindAssetTypes  endpoint.Endpoint
	UpdateAssetType endpoint.Endpoint
	DeleteAssetType endpoint.Endpoint
	AttachDocument  endpoint.Endpoint
	DetachDocument  endpoint.Endpoint
	SetThumbnail    endpoint.Endpoint

	CreateAsset endpoint.Endpoint
	GetAsset    endpoint.Endpoint
	ListAssets  endpoint.Endpoint
	FindAsset   endpoint.Endpoint
	UpdateAsset endpoint.Endpoint
	DeleteAsset endpoint.Endpoint
}

// Request types that are not one of httpx's shared shapes.
type (
	listAssetTypesRequest struct {
		Filter AssetTypeFilter
		Page   listing.Page
	}
	listAssetsRequest struct {
		Filter AssetFilter
		Page   listing.Page
	}
	// attachment names one document of one asset type, from the path.
	attachment struct {
		AssetTypeID, DocumentID uuid.UUID
	}
)

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateAssetType: endpoints.New(endpoints.Created(s.CreateAssetType, assetTypeLocation)),
		GetAssetType:    endpoints.New(s.GetAssetType),
		ListAssetTypes: endpoints.New(func(ctx context.Context, req listAssetTypesRequest) (any, error) {
			r, err := s.ListAssetTypes(ctx, req.Filter, req.Page)
			return httpx.ListOf(r), err
		}),
		FindAssetTypes: endpoints.New(s.FindAssetTypes),
		UpdateAssetType: endpoints.New(func(ctx context.Context, req httpx.IDBody[AssetTypePatch]) (AssetTypeDetail, error) {
			return s.UpdateAssetType(ctx, req.ID, req.Body)
		}),
		DeleteAssetType: endpoints.New(endpoints.NoContent(s.DeleteAssetType)),
		AttachDocument: endpoints.New(func(ctx context.Context, req httpx.IDBody[DocumentRef]) (any, error) {
			t, created, err := s.AttachDocument(ctx, req.ID, req.Body)
			if created {
				// The attachment's own path: DELETE detaches it.
				return httpx.Created{Value: t, Location: assetTypeLocation(t) + "/documents/" + req.Body.DocumentID.String()}, err
			}
			return t, err
		}),
		DetachDocument: endpoints.New(func(ctx context.Context, req attachment) (any, error) {
			return httpx.NoContent{}, s.DetachDocument(ctx, req.AssetTypeID, req.DocumentID)
		}),
		SetThumbnail: endpoints.New(func(ctx context.Context, req httpx.IDBody[DocumentRef]) (AssetTypeDetail, error) {
			return s.SetThumbnail(ctx, req.ID, req.Body)
		}),

		CreateAsset: endpoints.New(endpoints.Created(s.CreateAsset, assetLocation)),
		GetAsset:    endpoints.New(s.GetAsset),
		ListAssets: endpoints.New(func(ctx context.Context, req listAssetsRequest) (any, error) {
			r, err := s.ListAssets(ctx, req.Filter, req.Page)
			return httpx.ListOf(r), err
		}),
		FindAsset: endpoints.New(func(ctx context.Context, req httpx.FindRequest[AssetQuery]) (any, error) {
			a, created, err := s.FindAsset(ctx, req.Criteria, req.Create)
			if created {
				return httpx.Created{Value: a, Location: assetLocation(a)}, err
			}
			return a, err
		}),
		UpdateAsset: endpoints.New(func(ctx context.Context, req httpx.IDBody[AssetPatch]) (Asset, error) {
			return s.UpdateAsset(ctx, req.ID, req.Body)
		}),
		DeleteAsset: endpoints.New(endpoints.NoContent(s.DeleteAsset)),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

func assetTypeLocation(t AssetTypeDetail) string { return "/asset_types/" + t.ID.String() }

func assetLocation(a Asset) string { return "/assets/" + a.ID.String() }
