package assets

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/services/assets/assettypes"
)

// Asset is one piece of equipment, told apart by its serial number within
// its type.
type Asset struct {
	ID                  uuid.UUID               `json:"id" db:"id"`
	SerialNumber        string                  `json:"serial_number" db:"serial_number"`
	AssetTypeID         uuid.UUID               `json:"asset_type_id" db:"asset_type_id"`
	ProductionYear      *int                    `json:"production_year" db:"production_year"`
	Status              *string                 `json:"status" db:"status"`
	ResponsiblePersonID *uuid.UUID              `json:"responsible_person_id" db:"responsible_person_id"`
	ExternalIDs         []assettypes.ExternalID `json:"external_ids" db:"external_ids"`
	// ParentAssetID is the asset this one is a component of (null: none).
	ParentAssetID *uuid.UUID `json:"parent_asset_id" db:"parent_asset_id"`
	// OwnerOrganizationID is the organization that holds the asset (null:
	// none, the asset is shared with every client); see docs/tenancy.md.
	OwnerOrganizationID *uuid.UUID `json:"owner_organization_id" db:"owner_organization_id"`
	model.Audit
}

// A status is free text, up to statusLen.
const statusLen = 1000

// firstProductionYear is the earliest production_year; the latest is next
// year (equipment is sold as next year's model).
const firstProductionYear = 1900

// AssetInput is the body of an asset create, and the result of applying a
// patch.
type AssetInput struct {
	SerialNumber        string                  `json:"serial_number"`
	AssetTypeID         model.UUID              `json:"asset_type_id"`
	ProductionYear      *int                    `json:"production_year"`
	Status              *string                 `json:"status"`
	ResponsiblePersonID *model.UUID             `json:"responsible_person_id"`
	ExternalIDs         []assettypes.ExternalID `json:"external_ids"`
	ParentAssetID       *model.UUID             `json:"parent_asset_id"`
	// OwnerOrganizationID defaults to a bound caller's organization
	// (ownerFor); only an admin changes it in a patch.
	OwnerOrganizationID *model.UUID `json:"owner_organization_id"`
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
	in.ExternalIDs = assettypes.NormalizeExternalIDs(&v, in.ExternalIDs)
	return in, v.Err()
}

// AssetPatch is a JSON merge patch of an asset.
type AssetPatch struct {
	SerialNumber        model.PatchField[string]                  `json:"serial_number"`
	AssetTypeID         model.PatchField[model.UUID]              `json:"asset_type_id"`
	ProductionYear      model.PatchField[int]                     `json:"production_year"`
	Status              model.PatchField[string]                  `json:"status"`
	ResponsiblePersonID model.PatchField[model.UUID]              `json:"responsible_person_id"`
	ExternalIDs         model.PatchField[[]assettypes.ExternalID] `json:"external_ids"`
	ParentAssetID       model.PatchField[model.UUID]              `json:"parent_asset_id"`
	OwnerOrganizationID model.PatchField[model.UUID]              `json:"owner_organization_id"`
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
	p.ParentAssetID.ApplyOptional(&in.ParentAssetID)
	if id := in.ParentAssetID.Ptr(); id != nil && *id == a.ID {
		v.Add("parent_asset_id", "must name another asset: an asset cannot be a component of itself")
	}
	p.OwnerOrganizationID.ApplyOptional(&in.OwnerOrganizationID)
	return model.Patched(&v, in)
}

// assetInputOf is what an asset holds now, as an input.
func assetInputOf(a Asset) AssetInput {
	return AssetInput{SerialNumber: a.SerialNumber, AssetTypeID: model.ID(a.AssetTypeID), ProductionYear: a.ProductionYear,
		Status: a.Status, ResponsiblePersonID: model.OptionalID(a.ResponsiblePersonID), ExternalIDs: assettypes.NonNil(a.ExternalIDs),
		ParentAssetID: model.OptionalID(a.ParentAssetID), OwnerOrganizationID: model.OptionalID(a.OwnerOrganizationID)}
}

// AssetFilter narrows a list of assets.
type AssetFilter struct {
	AssetTypeID         *uuid.UUID
	SerialNumber        *string
	ResponsiblePersonID *uuid.UUID
	External            assettypes.ExternalFilter
	// ParentAssetID lists the components of an asset.
	ParentAssetID *uuid.UUID
	// VisibleTo is the bound caller's organization: only the assets it
	// sees are listed ("" lists every asset).
	VisibleTo string
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
func (q AssetQuery) typeCriteria() assettypes.BrandAndModel {
	return assettypes.BrandAndModel{Brand: *q.Brand, Model: *q.Model, Version: q.Version}
}

// Normalize checks the criteria: brand and model name a type together,
// and a version only narrows them.
func (q AssetQuery) Normalize() (AssetQuery, error) {
	var v apperr.Validation
	q.SerialNumber = model.Required(&v, "serial_number", q.SerialNumber, model.NumberLen)
	q.Brand = model.Optional(&v, "brand", q.Brand, model.NameLen)
	q.Model = model.Optional(&v, "model", q.Model, model.NameLen)
	q.Version = model.Optional(&v, "version", q.Version, assettypes.LabelLen)
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

func equalIDs(a, b *uuid.UUID) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// parentMissing is the 422 of a parent that does not exist.
func parentMissing(id uuid.UUID) error {
	return apperr.Invalid(apperr.FieldError{Field: "parent_asset_id",
		Message: fmt.Sprintf("must name an existing asset; %s does not exist", id)})
}

// componentChanges are the events of the asset component moving from the
// parent from to the parent to (nil: none): asset_component.deleted on the
// one it leaves, asset_component.created on the one it joins, each with
// that parent as its subject (so in its history) and the component as
// GET answers it after the change (as it was, when it was deleted) as its
// data. The component's own asset.created, asset.updated or asset.deleted
// says the same from its side.
func componentChanges(component Asset, from, to *uuid.UUID) []outbox.Change {
	var out []outbox.Change
	if from != nil {
		out = append(out, outbox.Deleted(outbox.KindAssetComponent, from.String(), component))
	}
	if to != nil {
		out = append(out, outbox.Created(outbox.KindAssetComponent, to.String(), component))
	}
	return out
}
