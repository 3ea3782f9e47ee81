// Package assettypes is the assets service's component for asset types:
// a brand and model (and version) of equipment, with the documents
// attached to it and its thumbnail. Assets (the service's root) name their
// type; this package knows nothing of them but what the root hands it:
// which assets hold a type, asked when its delete is refused.
package assettypes

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// ExternalID ties a resource to its record in a client's system. Each
// (source_system, external_id) pair names one asset type and one asset at
// most; both compare exactly, after trimming.
type ExternalID struct {
	SourceSystem string `json:"source_system"`
	ExternalID   string `json:"external_id"`
}

// AssetType is a brand and model (and version) of equipment, as lists show it.
type AssetType struct {
	ID                  uuid.UUID    `json:"id" db:"id"`
	Brand               string       `json:"brand" db:"brand"`
	Model               string       `json:"model" db:"model"`
	Version             *string      `json:"version" db:"version"`
	EmissionClass       *string      `json:"emission_class" db:"emission_class"`
	ThumbnailDocumentID *uuid.UUID   `json:"thumbnail_document_id" db:"thumbnail_document_id"`
	ExternalIDs         []ExternalID `json:"external_ids" db:"external_ids"`
	model.Audit
}

// AssetTypeDetail is an asset type with its documents and thumbnail: the
// shape of every single-asset-type answer.
// Documents holds the first model.MaxEmbedded attached documents in
// attach order; DocumentsTruncated says more are attached, and GET
// /asset_types/{id}/documents pages through them all.
type AssetTypeDetail struct {
	AssetType
	Documents          []Document `json:"documents" db:"documents"`
	DocumentsTruncated bool       `json:"documents_truncated" db:"documents_truncated"`
	Thumbnail          *Document  `json:"thumbnail" db:"thumbnail"`
}

// Text size limits beyond validate's: a version or an emission class is a
// short label (an asset's find names a version too, so LabelLen is
// exported).
const (
	LabelLen     = 100
	maxExternals = 100
)

// The members of an asset type the service sets beyond the audit fields.
var assetTypeReadOnly = []string{"documents", "documents_truncated", "thumbnail"}

// ReadOnlyFields names an asset type's service-set members.
func (AssetTypeInput) ReadOnlyFields() []string { return assetTypeReadOnly }

// ReadOnlyFields names an asset type's service-set members.
func (AssetTypePatch) ReadOnlyFields() []string { return assetTypeReadOnly }

// AssetTypeInput is what a client writes: the body of a create, and the
// result of applying a patch.
type AssetTypeInput struct {
	Brand               string       `json:"brand"`
	Model               string       `json:"model"`
	Version             *string      `json:"version"`
	EmissionClass       *string      `json:"emission_class"`
	ThumbnailDocumentID *model.UUID  `json:"thumbnail_document_id"`
	ExternalIDs         []ExternalID `json:"external_ids"`
}

// Normalize trims the text and checks every field.
func (in AssetTypeInput) Normalize() (AssetTypeInput, error) {
	var v apperr.Validation
	in.Brand = model.Required(&v, "brand", in.Brand, model.NameLen)
	in.Model = model.Required(&v, "model", in.Model, model.NameLen)
	in.Version = model.Optional(&v, "version", in.Version, LabelLen)
	in.EmissionClass = model.Optional(&v, "emission_class", in.EmissionClass, LabelLen)
	in.ExternalIDs = NormalizeExternalIDs(&v, in.ExternalIDs)
	return in, v.Err()
}

// NormalizeExternalIDs trims every pair (an asset type's or an asset's) and refuses blanks and a pair given
// twice; no external ids is an empty list, never nil.
func NormalizeExternalIDs(v *apperr.Validation, ids []ExternalID) []ExternalID {
	if len(ids) > maxExternals {
		v.Add("external_ids", "must hold at most %d pairs", maxExternals)
	}
	out := make([]ExternalID, 0, len(ids))
	seen := map[ExternalID]int{}
	for i, x := range ids {
		field := fmt.Sprintf("external_ids[%d]", i)
		x.SourceSystem = model.Required(v, field+".source_system", x.SourceSystem, model.NumberLen)
		x.ExternalID = model.Required(v, field+".external_id", x.ExternalID, model.NameLen)
		if j, dup := seen[x]; dup {
			v.Add(field, "repeats external_ids[%d]", j)
		}
		seen[x] = i
		out = append(out, x)
	}
	return out
}

// AssetTypePatch is a JSON merge patch of an asset type. external_ids is
// replaced as a whole (null: none).
type AssetTypePatch struct {
	Brand               model.PatchField[string]       `json:"brand"`
	Model               model.PatchField[string]       `json:"model"`
	Version             model.PatchField[string]       `json:"version"`
	EmissionClass       model.PatchField[string]       `json:"emission_class"`
	ThumbnailDocumentID model.PatchField[model.UUID]   `json:"thumbnail_document_id"`
	ExternalIDs         model.PatchField[[]ExternalID] `json:"external_ids"`
}

// Apply returns the input that results from patching t.
func (p AssetTypePatch) Apply(t AssetType) (AssetTypeInput, error) {
	in := assetTypeInputOf(t)
	var v apperr.Validation
	model.Keep(&v, "brand", p.Brand, &in.Brand)
	model.Keep(&v, "model", p.Model, &in.Model)
	p.Version.ApplyOptional(&in.Version)
	p.EmissionClass.ApplyOptional(&in.EmissionClass)
	p.ThumbnailDocumentID.ApplyOptional(&in.ThumbnailDocumentID)
	if p.ExternalIDs.Set {
		in.ExternalIDs = p.ExternalIDs.Value // nil when null: none
	}
	return model.Patched(&v, in)
}

// assetTypeInputOf is what an asset type holds now, as an input.
func assetTypeInputOf(t AssetType) AssetTypeInput {
	return AssetTypeInput{Brand: t.Brand, Model: t.Model, Version: t.Version, EmissionClass: t.EmissionClass,
		ThumbnailDocumentID: model.OptionalID(t.ThumbnailDocumentID), ExternalIDs: NonNil(t.ExternalIDs)}
}

// AssetTypeFilter narrows a list; brand, model and version match
// case-insensitively, external ids exactly.
type AssetTypeFilter struct {
	Brand, Model, Version *string
	External              ExternalFilter
}

// ExternalFilter narrows a list to resources with an external id of
// SourceSystem (and, when given, ExternalID).
type ExternalFilter struct {
	SourceSystem, ExternalID *string
}

// BrandAndModel are the criteria of GET /asset_types/by_brand_and_model;
// without Version every version matches.
type BrandAndModel struct {
	Brand, Model string
	Version      *string
}

// Normalize checks the criteria.
func (q BrandAndModel) Normalize() (BrandAndModel, error) {
	var v apperr.Validation
	q.Brand = model.Required(&v, "brand", q.Brand, model.NameLen)
	q.Model = model.Required(&v, "model", q.Model, model.NameLen)
	q.Version = model.Optional(&v, "version", q.Version, LabelLen)
	return q, v.Err()
}

// DocumentRef is the body that attaches a document or sets the thumbnail.
type DocumentRef struct {
	DocumentID model.UUID `json:"document_id"`
}

// Validate checks that the body names a document.
func (r DocumentRef) Validate() (uuid.UUID, error) {
	var v apperr.Validation
	id := model.RequiredID(&v, "document_id", r.DocumentID)
	return id, v.Err()
}

// NonNil is s, or an empty slice for nil: an answer lists no external ids
// as [], never null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func foldOptional(s *string) *string {
	if s == nil {
		return nil
	}
	f := model.Fold(*s)
	return &f
}

func equalIDs(a, b *uuid.UUID) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// typeIdentity is the comparable form of an asset type's identity.
func typeIdentity(brand, modelName string, version *string) string {
	v := foldOptional(version)
	if v == nil {
		return model.Fold(brand) + "\x00" + model.Fold(modelName)
	}
	return model.Fold(brand) + "\x00" + model.Fold(modelName) + "\x00" + *v
}
