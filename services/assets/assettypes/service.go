package assettypes

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
)

// Service is what the asset types component does. Errors are *apperr.Error.
type Service interface {
	// Asset types, read.
	GetAssetType(ctx context.Context, id uuid.UUID) (AssetTypeDetail, error)
	// AssetTypeDocuments pages through every document attached to the
	// asset type, in attach order: the whole of what its answer's
	// documents begins.
	AssetTypeDocuments(ctx context.Context, id uuid.UUID, page model.LinkPage) (model.LinkPaged[json.RawMessage], error)
	ListAssetTypes(ctx context.Context, f AssetTypeFilter, page model.Page) (model.Paged[AssetType], error)
	// FindAssetTypes returns every asset type of a brand and model (and
	// version): GET /asset_types/by_brand_and_model.
	FindAssetTypes(ctx context.Context, q BrandAndModel) ([]AssetType, error)
	// Asset types, written.
	CreateAssetType(ctx context.Context, by model.Caller, in AssetTypeInput) (AssetTypeDetail, error)
	UpdateAssetType(ctx context.Context, g model.Guard, id uuid.UUID, p AssetTypePatch) (AssetTypeDetail, error)
	DeleteAssetType(ctx context.Context, g model.Guard, id uuid.UUID) error
	// AttachDocument attaches a document; created=false when it was
	// attached already.
	AttachDocument(ctx context.Context, g model.Guard, id uuid.UUID, ref DocumentRef) (t AssetTypeDetail, created bool, err error)
	DetachDocument(ctx context.Context, g model.Guard, id, documentID uuid.UUID) error
	SetThumbnail(ctx context.Context, g model.Guard, id uuid.UUID, ref DocumentRef) (AssetTypeDetail, error)
}

// service holds the rules: what an input must be and which references a
// write makes. It asks the documents service (refs.Registry.Checking) and
// hands the store the check, which the store confirms under the
// documents' locks in its transaction (the thumbnail's content type is the
// owner's answer, read there).
type service struct {
	store *Store
	refs  *refs.Registry
}

// NewService returns the service over store, asking peers through r (the
// registry store declared its side of the reference protocol in).
func NewService(store *Store, r *refs.Registry) Service { return &service{store: store, refs: r} }

// documentTarget is an asset type's reference to a document (attached or
// its thumbnail); field names it in the 422.
func documentTarget(field string, id uuid.UUID) refs.Target {
	return refs.Target{Field: field, Kind: "document", ID: id}
}

func (s *service) CreateAssetType(ctx context.Context, by model.Caller, in AssetTypeInput) (AssetTypeDetail, error) {
	in, err := in.Normalize()
	if err != nil {
		return AssetTypeDetail{}, err
	}
	return refs.CheckingFor(ctx, s.refs, func(checked *refs.Checked) (AssetTypeDetail, error) {
		return s.store.CreateAssetType(ctx, by, in, checked)
	})
}

func (s *service) FindAssetTypes(ctx context.Context, q BrandAndModel) ([]AssetType, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	return s.store.FindAssetTypes(ctx, q)
}

func (s *service) UpdateAssetType(ctx context.Context, g model.Guard, id uuid.UUID, p AssetTypePatch) (AssetTypeDetail, error) {
	if err := s.refs.Checking(ctx, func(checked *refs.Checked) error {
		return s.store.UpdateAssetType(ctx, g, id, p.Apply, checked)
	}); err != nil {
		return AssetTypeDetail{}, err
	}
	return s.store.GetAssetType(ctx, id)
}

func (s *service) AttachDocument(ctx context.Context, g model.Guard, id uuid.UUID, ref DocumentRef) (AssetTypeDetail, bool, error) {
	documentID, err := ref.Validate()
	if err != nil {
		return AssetTypeDetail{}, false, err
	}
	var created bool
	if err := s.refs.Checking(ctx, func(checked *refs.Checked) error {
		created, err = s.store.AttachDocument(ctx, g, id, documentID, checked)
		return err
	}); err != nil {
		return AssetTypeDetail{}, false, err
	}
	t, err := s.store.GetAssetType(ctx, id)
	return t, created, err
}

func (s *service) DetachDocument(ctx context.Context, g model.Guard, id, documentID uuid.UUID) error {
	return s.store.DetachDocument(ctx, g, id, documentID)
}

func (s *service) SetThumbnail(ctx context.Context, g model.Guard, id uuid.UUID, ref DocumentRef) (AssetTypeDetail, error) {
	documentID, err := ref.Validate()
	if err != nil {
		return AssetTypeDetail{}, err
	}
	if err := s.refs.Checking(ctx, func(checked *refs.Checked) error {
		return s.store.SetThumbnail(ctx, g, id, documentID, "document_id", checked)
	}); err != nil {
		return AssetTypeDetail{}, err
	}
	return s.store.GetAssetType(ctx, id)
}

// Reads and deletes have no rules beyond the store's.

func (s *service) GetAssetType(ctx context.Context, id uuid.UUID) (AssetTypeDetail, error) {
	return s.store.GetAssetType(ctx, id)
}

func (s *service) AssetTypeDocuments(ctx context.Context, id uuid.UUID, page model.LinkPage) (model.LinkPaged[json.RawMessage], error) {
	return s.store.AssetTypeDocuments(ctx, id, page)
}

func (s *service) ListAssetTypes(ctx context.Context, f AssetTypeFilter, page model.Page) (model.Paged[AssetType], error) {
	return s.store.ListAssetTypes(ctx, f, page)
}

// DeleteAssetType removes an asset type unless something still names it:
// the protocol asks the services that may, then runs the store's delete
// under g.
func (s *service) DeleteAssetType(ctx context.Context, g model.Guard, id uuid.UUID) error {
	current := func(ctx context.Context) (any, error) { return s.store.GetAssetType(ctx, id) }
	return s.refs.DeleteRow(ctx, g, "asset_type", "asset_types", id, current, s.store.DeleteAssetType(id))
}
