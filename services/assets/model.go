package assets

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
)

// ExternalID ties a resource to its record in a client's system. Each
// (source_system, external_id) pair names one asset type and one asset at
// most; both compare exactly, after trimming.
type ExternalID struct {
	SourceSystem string `json:"source_system"`
	ExternalID   string `json:"external_id"`
}

// Document is a document as the documents service describes it. Documents
// never change, so the copy an asset type keeps when it attaches one (or
// takes it as its thumbnail) stays true, and the reference protocol keeps
// the document from being deleted while the copy exists.
type Document struct {
	ID           uuid.UUID `json:"id"`
	DocumentType string    `json:"document_type"`
	Filename     *string   `json:"filename"`
	ContentType  string    `json:"content_type"`
	Size         int64     `json:"size"`
	SHA256       string    `json:"sha256"`
	CreatedAt    time.Time `json:"created_at"`
	CreatedBy    string    `json:"created_by"`
	// SniffedType is what the documents service found the file to be;
	// checked when the document becomes a thumbnail, not shown.
	SniffedType string `json:"-"`
}

// documentFrom reads the attributes the documents service answers a
// reference check with.
func documentFrom(id uuid.UUID, a refs.Attrs) (Document, error) {
	d := Document{ID: id, DocumentType: a["document_type"], ContentType: a["content_type"], SHA256: a["sha256"], CreatedBy: a["created_by"],
		SniffedType: a["sniffed_type"]}
	if name, ok := a["filename"]; ok {
		d.Filename = &name
	}
	var err error
	if d.Size, err = strconv.ParseInt(a["size"], 10, 64); err != nil {
		return d, fmt.Errorf("document %s: size %q: %w", id, a["size"], err)
	}
	if d.CreatedAt, err = time.Parse(time.RFC3339Nano, a["created_at"]); err != nil {
		return d, fmt.Errorf("document %s: created_at %q: %w", id, a["created_at"], err)
	}
	return d, nil
}

// RasterImages are what a thumbnail may be: the types the documents
// service recognises from a file's first bytes, whatever the uploader
// declared. An SVG (which can carry scripts) or a file that only claims to
// be an image is refused.
var RasterImages = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// isRasterImage reports whether a document can be a thumbnail.
func isRasterImage(d Document) bool { return slices.Contains(RasterImages, d.SniffedType) }

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

// Asset is one piece of equipment, told apart by its serial number within
// its type.
type Asset struct {
	ID                  uuid.UUID    `json:"id" db:"id"`
	SerialNumber        string       `json:"serial_number" db:"serial_number"`
	AssetTypeID         uuid.UUID    `json:"asset_type_id" db:"asset_type_id"`
	ProductionYear      *int         `json:"production_year" db:"production_year"`
	Status              *string      `json:"status" db:"status"`
	ResponsiblePersonID *uuid.UUID   `json:"responsible_person_id" db:"responsible_person_id"`
	ExternalIDs         []ExternalID `json:"external_ids" db:"external_ids"`
	model.Audit
}

// Text size limits beyond validate's: a version or an emission class is a
// short label; a status is free text.
const (
	labelLen     = 100
	statusLen    = 1000
	maxExternals = 100
)

// firstProductionYear is the earliest production_year; the latest is next
// year (equipment is sold as next year's model).
const firstProductionYear = 1900

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
	in.Version = model.Optional(&v, "version", in.Version, labelLen)
	in.EmissionClass = model.Optional(&v, "emission_class", in.EmissionClass, labelLen)
	in.ExternalIDs = normalizeExternalIDs(&v, in.ExternalIDs)
	return in, v.Err()
}

// normalizeExternalIDs trims every pair and refuses blanks and a pair given
// twice; no external ids is an empty list, never nil.
func normalizeExternalIDs(v *apperr.Validation, ids []ExternalID) []ExternalID {
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
	if err := v.Err(); err != nil {
		return in, err
	}
	return in.Normalize()
}

// assetTypeInputOf is what an asset type holds now, as an input.
func assetTypeInputOf(t AssetType) AssetTypeInput {
	return AssetTypeInput{Brand: t.Brand, Model: t.Model, Version: t.Version, EmissionClass: t.EmissionClass,
		ThumbnailDocumentID: model.OptionalID(t.ThumbnailDocumentID), ExternalIDs: nonNil(t.ExternalIDs)}
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
	q.Version = model.Optional(&v, "version", q.Version, labelLen)
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

// AssetInput is the body of an asset create, and the result of applying a
// patch.
type AssetInput struct {
	SerialNumber        string       `json:"serial_number"`
	AssetTypeID         model.UUID   `json:"asset_type_id"`
	ProductionYear      *int         `json:"production_year"`
	Status              *string      `json:"status"`
	ResponsiblePersonID *model.UUID  `json:"responsible_person_id"`
	ExternalIDs         []ExternalID `json:"external_ids"`
}

// Normalize trims the text and checks every field.
func (in AssetInput) Normalize() (AssetInput, error) {
	var v apperr.Validation
	in.SerialNumber = model.Required(&v, "serial_number", in.SerialNumber, model.NumberLen)
	model.RequiredID(&v, "asset_type_id", in.AssetTypeID)
	if y := in.ProductionYear; y != nil {
		if last := time.Now().UTC().Year() + 1; *y < firstProductionYear || *y > last {
			v.Add("production_year", "must be a year from %d to %d", firstProductionYear, last)
		}
	}
	in.Status = model.Optional(&v, "status", in.Status, statusLen)
	in.ExternalIDs = normalizeExternalIDs(&v, in.ExternalIDs)
	return in, v.Err()
}

// AssetPatch is a JSON merge patch of an asset.
type AssetPatch struct {
	SerialNumber        model.PatchField[string]       `json:"serial_number"`
	AssetTypeID         model.PatchField[model.UUID]   `json:"asset_type_id"`
	ProductionYear      model.PatchField[int]          `json:"production_year"`
	Status              model.PatchField[string]       `json:"status"`
	ResponsiblePersonID model.PatchField[model.UUID]   `json:"responsible_person_id"`
	ExternalIDs         model.PatchField[[]ExternalID] `json:"external_ids"`
}

// Apply returns the input that results from patching a.
func (p AssetPatch) Apply(a Asset) (AssetInput, error) {
	in := assetInputOf(a)
	var v apperr.Validation
	model.Keep(&v, "serial_number", p.SerialNumber, &in.SerialNumber)
	model.Keep(&v, "asset_type_id", p.AssetTypeID, &in.AssetTypeID)
	p.ProductionYear.ApplyOptional(&in.ProductionYear)
	p.Status.ApplyOptional(&in.Status)
	p.ResponsiblePersonID.ApplyOptional(&in.ResponsiblePersonID)
	if p.ExternalIDs.Set {
		in.ExternalIDs = p.ExternalIDs.Value
	}
	if err := v.Err(); err != nil {
		return in, err
	}
	return in.Normalize()
}

// assetInputOf is what an asset holds now, as an input.
func assetInputOf(a Asset) AssetInput {
	return AssetInput{SerialNumber: a.SerialNumber, AssetTypeID: model.ID(a.AssetTypeID), ProductionYear: a.ProductionYear,
		Status: a.Status, ResponsiblePersonID: model.OptionalID(a.ResponsiblePersonID), ExternalIDs: nonNil(a.ExternalIDs)}
}

// AssetFilter narrows a list of assets.
type AssetFilter struct {
	AssetTypeID         *uuid.UUID
	SerialNumber        *string
	ResponsiblePersonID *uuid.UUID
	External            ExternalFilter
}

// AssetQuery is the body of an asset find: a serial number and, to name
// the type, its brand and model (and version).
type AssetQuery struct {
	SerialNumber string  `json:"serial_number"`
	Brand        *string `json:"brand"`
	Model        *string `json:"model"`
	Version      *string `json:"version"`
}

// NamesType reports whether the criteria name an asset type.
func (q AssetQuery) NamesType() bool { return q.Brand != nil }

// typeFields are the fields that name the type.
func (q AssetQuery) typeFields() []string {
	if q.Version != nil {
		return []string{"brand", "model", "version"}
	}
	return []string{"brand", "model"}
}

// typeCriteria are the criteria's asset type part.
func (q AssetQuery) typeCriteria() BrandAndModel {
	return BrandAndModel{Brand: *q.Brand, Model: *q.Model, Version: q.Version}
}

// Normalize checks the criteria: brand and model name a type together,
// and a version only narrows them.
func (q AssetQuery) Normalize() (AssetQuery, error) {
	var v apperr.Validation
	q.SerialNumber = model.Required(&v, "serial_number", q.SerialNumber, model.NumberLen)
	q.Brand = model.Optional(&v, "brand", q.Brand, model.NameLen)
	q.Model = model.Optional(&v, "model", q.Model, model.NameLen)
	q.Version = model.Optional(&v, "version", q.Version, labelLen)
	switch {
	case q.Brand == nil && q.Model != nil:
		v.Add("brand", "is required with model")
	case q.Brand != nil && q.Model == nil:
		v.Add("model", "is required with brand")
	case q.Brand == nil && q.Version != nil:
		v.Add("version", "narrows brand and model, which are missing")
	}
	return q, v.Err()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
