package assettypes

import (
	"context"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// Endpoints holds one go-kit endpoint per operation on asset types. Each
// adapts a Service method and says which success status applies;
// everything HTTP-specific beyond that lives in the transport.
type Endpoints struct {
	CreateAssetType    endpoint.Endpoint
	GetAssetType       endpoint.Endpoint
	AssetTypeDocuments endpoint.Endpoint
	ListAssetTypes     endpoint.Endpoint
	FindAssetTypes     endpoint.Endpoint
	UpdateAssetType    endpoint.Endpoint
	DeleteAssetType    endpoint.Endpoint
	AttachDocument     endpoint.Endpoint
	DetachDocument     endpoint.Endpoint
	SetThumbnail       endpoint.Endpoint
}

// attachment names one document of one asset type, from the path: the
// one request shape that is not among httpx's shared ones.
type attachment struct {
	AssetTypeID, DocumentID uuid.UUID
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateAssetType:    endpoints.ByCaller(endpoints.Created(s.CreateAssetType, assetTypeLocation)),
		GetAssetType:       endpoints.New(s.GetAssetType),
		AssetTypeDocuments: endpoints.New(endpoints.Links(s.AssetTypeDocuments)),
		ListAssetTypes:     endpoints.New(endpoints.List(s.ListAssetTypes)),
		// Every match, as a list: no page, no ETag.
		FindAssetTypes: endpoints.New(func(ctx context.Context, q BrandAndModel) (any, error) {
			types, err := s.FindAssetTypes(ctx, q)
			return httpx.List{Items: types}, err
		}),
		UpdateAssetType: endpoints.Guarded(endpoints.ByID(s.UpdateAssetType)),
		DeleteAssetType: endpoints.Guarded(endpoints.NoContent(s.DeleteAssetType)),
		AttachDocument: endpoints.Guarded(func(ctx context.Context, g model.Guard, req httpx.IDBody[DocumentRef]) (any, error) {
			t, created, err := s.AttachDocument(ctx, g, req.ID, req.Body)
			if created {
				// The attachment's own path: DELETE detaches it.
				return httpx.Created{Value: t, Location: assetTypeLocation(t) + "/documents/" + req.Body.DocumentID.String()}, err
			}
			return t, err
		}),
		DetachDocument: endpoints.Guarded(func(ctx context.Context, g model.Guard, req attachment) (any, error) {
			return httpx.NoContent{}, s.DetachDocument(ctx, g, req.AssetTypeID, req.DocumentID)
		}),
		SetThumbnail: endpoints.Guarded(endpoints.ByID(s.SetThumbnail)),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

func assetTypeLocation(t AssetTypeDetail) string { return "/asset_types/" + t.ID.String() }
