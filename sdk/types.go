package registry

import "time"

// Version carries the ETag a read gave; pass it to an update or delete as
// IfMatch(x.ETag) to refuse to overwrite a change you have not seen.
type Version struct {
	ETag string `json:"-"`
}

func (v *Version) setETag(etag string) { v.ETag = etag }

// Audit is who made a row and changed it last, and when. CreatedBy and
// UpdatedBy are the machine clients' token subjects.
type Audit struct {
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	UpdatedBy string    `json:"updated_by,omitempty"`
}

// Patch is a JSON merge patch (RFC 7396): members to set, nil to remove an
// optional member; members left out stay.
type Patch map[string]any

// Filter narrows a list: query parameters named after fields
// (registration_number, country, asset_id, performed_from, ...).
type Filter map[string]string

// Organization types.
const (
	OrganizationPrivate      = "private"
	OrganizationPublic       = "public"
	OrganizationNonProfit    = "non_profit"
	OrganizationGovernmental = "governmental"
	OrganizationUnclassified = "unclassified"
)

type Organization struct {
	Version
	ID                    string  `json:"id"`
	Name                  string  `json:"name"`
	RegistrationNumber    string  `json:"registration_number"`
	OrganizationType      string  `json:"organization_type"`
	TaxRegistrationNumber *string `json:"tax_registration_number"`
	Country               *string `json:"country"`
	IdpID                 *string `json:"idp_id"`
	Audit
	// AssociatedPeople is filled by GetOrganization only: the first 100
	// links; AssociatedPeopleTruncated says more exist, and
	// OrganizationPeople lists them all.
	AssociatedPeople          []AssociatedPerson `json:"associated_people,omitempty"`
	AssociatedPeopleTruncated bool               `json:"associated_people_truncated,omitempty"`
}

type AssociatedPerson struct {
	ID           string  `json:"id"`
	FirstName    string  `json:"first_name"`
	LastName     string  `json:"last_name"`
	DateOfBirth  *string `json:"date_of_birth"`
	RelationType string  `json:"relation_type"`
}

type OrganizationInput struct {
	Name                  string `json:"name"`
	RegistrationNumber    string `json:"registration_number"`
	OrganizationType      string `json:"organization_type"`
	TaxRegistrationNumber string `json:"tax_registration_number,omitempty"`
	Country               string `json:"country,omitempty"` // ISO 3166-1 alpha-2, any case
}

type Person struct {
	Version
	ID          string  `json:"id"`
	FirstName   string  `json:"first_name"`
	LastName    string  `json:"last_name"`
	DateOfBirth *string `json:"date_of_birth"` // YYYY-MM-DD
	Audit
	// AssociatedOrganizations is filled by GetPerson only: the first 100
	// links; AssociatedOrganizationsTruncated says more exist, and
	// PersonOrganizations lists them all.
	AssociatedOrganizations          []AssociatedOrganization `json:"associated_organizations,omitempty"`
	AssociatedOrganizationsTruncated bool                     `json:"associated_organizations_truncated,omitempty"`
}

type AssociatedOrganization struct {
	ID                 string  `json:"id"`
	Name               string  `json:"name"`
	RegistrationNumber string  `json:"registration_number"`
	OrganizationType   string  `json:"organization_type"`
	Country            *string `json:"country"`
	RelationType       string  `json:"relation_type"`
}

// PersonInput is a new person, or the criteria of a find (names compare
// case-insensitively after trimming).
type PersonInput struct {
	FirstName   string `json:"first_name"`
	LastName    string `json:"last_name"`
	DateOfBirth string `json:"date_of_birth,omitempty"` // YYYY-MM-DD
}

// Link is a person's relation to an organization.
type Link struct {
	PersonID       string    `json:"person_id"`
	OrganizationID string    `json:"organization_id"`
	RelationType   string    `json:"relation_type"`
	CreatedAt      time.Time `json:"created_at"`
}

// ExternalID names a resource in a client's system; each pair is unique
// per kind of resource.
type ExternalID struct {
	SourceSystem string `json:"source_system"`
	ExternalID   string `json:"external_id"`
}

type AssetType struct {
	Version
	ID                  string       `json:"id"`
	Brand               string       `json:"brand"`
	Model               string       `json:"model"`
	ModelVersion        *string      `json:"version"`
	EmissionClass       *string      `json:"emission_class"`
	ThumbnailDocumentID *string      `json:"thumbnail_document_id"`
	ExternalIDs         []ExternalID `json:"external_ids"`
	Audit
	// Documents and Thumbnail are filled by GetAssetType only: the first
	// 100 documents; DocumentsTruncated says more are attached, and
	// AssetTypeDocuments lists them all.
	Documents          []Document `json:"documents,omitempty"`
	DocumentsTruncated bool       `json:"documents_truncated,omitempty"`
	Thumbnail          *Document  `json:"thumbnail,omitempty"`
}

type AssetTypeInput struct {
	Brand               string       `json:"brand"`
	Model               string       `json:"model"`
	ModelVersion        string       `json:"version,omitempty"`
	EmissionClass       string       `json:"emission_class,omitempty"`
	ThumbnailDocumentID string       `json:"thumbnail_document_id,omitempty"`
	ExternalIDs         []ExternalID `json:"external_ids,omitempty"`
}

type Asset struct {
	Version
	ID                  string       `json:"id"`
	SerialNumber        string       `json:"serial_number"`
	AssetTypeID         string       `json:"asset_type_id"`
	ProductionYear      *int         `json:"production_year"`
	Status              *string      `json:"status"`
	ResponsiblePersonID *string      `json:"responsible_person_id"`
	ExternalIDs         []ExternalID `json:"external_ids"`
	// ParentAssetID is the asset this one is a component of (nil: none);
	// ListAssets with Filter{"parent_asset_id": id} lists an asset's
	// components.
	ParentAssetID *string `json:"parent_asset_id"`
	// OwnerOrganizationID is the organization that holds the asset; nil:
	// none, the asset is shared with every client.
	OwnerOrganizationID *string `json:"owner_organization_id"`
	Audit
}

type AssetInput struct {
	SerialNumber        string       `json:"serial_number"`
	AssetTypeID         string       `json:"asset_type_id"`
	ProductionYear      int          `json:"production_year,omitempty"`
	Status              string       `json:"status,omitempty"`
	ResponsiblePersonID string       `json:"responsible_person_id,omitempty"`
	ExternalIDs         []ExternalID `json:"external_ids,omitempty"`
	ParentAssetID       string       `json:"parent_asset_id,omitempty"`
	// OwnerOrganizationID: empty is the caller's own organization for a
	// client bound to one, none for a client bound to none.
	OwnerOrganizationID string `json:"owner_organization_id,omitempty"`
}

// AssetQuery finds an asset by serial number; with Brand and Model the
// asset type is resolved first (and must exist for a create).
type AssetQuery struct {
	SerialNumber string `json:"serial_number"`
	Brand        string `json:"brand,omitempty"`
	Model        string `json:"model,omitempty"`
	ModelVersion string `json:"version,omitempty"`
}

// Action types.
const (
	ActionExpertControl    = "expert_control"
	ActionMaintenance      = "maintenance"
	ActionPreUseInspection = "pre_use_inspection"
	ActionRepair           = "repair"
)

type Action struct {
	Version
	ID                      string         `json:"id"`
	AssetID                 string         `json:"asset_id"`
	ActionType              string         `json:"action_type"`
	ActionSubtype           *string        `json:"action_subtype"`
	PerformedAt             string         `json:"performed_at"` // YYYY-MM-DD
	PersonID                *string        `json:"person_id"`
	PerformedByPerson       *string        `json:"performed_by_person"`
	OrganizationID          *string        `json:"organization_id"`
	PerformedByOrganization *string        `json:"performed_by_organization"`
	Reference               *string        `json:"reference"`
	Status                  *string        `json:"status"`
	StatusOK                *bool          `json:"status_ok"`
	StatusUseOK             *bool          `json:"status_use_ok"`
	StatusFinalized         *bool          `json:"status_finalized"`
	StatusValidThrough      *string        `json:"status_valid_through"`
	SourceSystem            *string        `json:"source_system"`
	SourceReference         *string        `json:"source_reference"`
	Data                    map[string]any `json:"data"`
	MetaData                map[string]any `json:"meta_data"`
	Audit
	// ActionDocuments is filled by GetAction only: the action's first 100
	// action documents; ActionDocumentsTruncated says it has more, and
	// ActionDocumentsOf lists them all.
	ActionDocuments          []ActionDocument `json:"action_documents,omitempty"`
	ActionDocumentsTruncated bool             `json:"action_documents_truncated,omitempty"`
}

type ActionInput struct {
	AssetID                 string         `json:"asset_id"`
	ActionType              string         `json:"action_type"`
	PerformedAt             string         `json:"performed_at"` // YYYY-MM-DD
	ActionSubtype           string         `json:"action_subtype,omitempty"`
	PersonID                string         `json:"person_id,omitempty"`
	PerformedByPerson       string         `json:"performed_by_person,omitempty"`
	OrganizationID          string         `json:"organization_id,omitempty"`
	PerformedByOrganization string         `json:"performed_by_organization,omitempty"`
	Reference               string         `json:"reference,omitempty"`
	Status                  string         `json:"status,omitempty"`
	StatusOK                *bool          `json:"status_ok,omitempty"`
	StatusUseOK             *bool          `json:"status_use_ok,omitempty"` // status_ok when nil
	StatusFinalized         *bool          `json:"status_finalized,omitempty"`
	StatusValidThrough      string         `json:"status_valid_through,omitempty"`
	SourceSystem            string         `json:"source_system,omitempty"`
	SourceReference         string         `json:"source_reference,omitempty"`
	Data                    map[string]any `json:"data,omitempty"`
	MetaData                map[string]any `json:"meta_data,omitempty"`
}

// Bool is a helper for the optional booleans of ActionInput.
func Bool(b bool) *bool { return &b }

type Document struct {
	Version
	ID           string    `json:"id"`
	DocumentType string    `json:"document_type"`
	Filename     *string   `json:"filename"`
	ContentType  string    `json:"content_type"`
	Size         int64     `json:"size"`
	SHA256       string    `json:"sha256"`
	CreatedAt    time.Time `json:"created_at"`
	CreatedBy    string    `json:"created_by"`
	// ActionDocuments is filled by GetDocument only: the first 100;
	// ActionDocumentsTruncated says more link the document, and
	// DocumentActionDocuments lists them all.
	ActionDocuments          []ActionDocument `json:"action_documents,omitempty"`
	ActionDocumentsTruncated bool             `json:"action_documents_truncated,omitempty"`
}

// ActionDocument links an action to a document. Inside a document's
// ActionDocuments the audit fields other than CreatedAt are empty.
type ActionDocument struct {
	Version
	ID              string `json:"id"`
	ActionID        string `json:"action_id"`
	DocumentID      string `json:"document_id"`
	SourceSystem    string `json:"source_system"`
	SourceReference string `json:"source_reference"`
	Audit
}

type ActionDocumentInput struct {
	DocumentID      string `json:"document_id"`
	SourceSystem    string `json:"source_system"`
	SourceReference string `json:"source_reference"`
}

// GetETag returns the ETag the read gave.
func (v *Version) GetETag() string { return v.ETag }
