package parties

import (
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// OrganizationTypes are the wire values of organization_type.
var OrganizationTypes = []string{"private", "public", "non_profit", "governmental", "unclassified"}

// Organization is a company or other body people work for.
type Organization struct {
	ID                    uuid.UUID `json:"id" db:"id"`
	Name                  string    `json:"name" db:"name"`
	RegistrationNumber    string    `json:"registration_number" db:"registration_number"`
	OrganizationType      string    `json:"organization_type" db:"organization_type"`
	TaxRegistrationNumber *string   `json:"tax_registration_number" db:"tax_registration_number"`
	Country               *string   `json:"country" db:"country"`
	IDPID                 *string   `json:"idp_id" db:"idp_id"`
	model.Audit
}

// AssociatedPerson is a person linked to an organization, as listed on it.
type AssociatedPerson struct {
	ID           uuid.UUID   `json:"id" db:"id"`
	FirstName    string      `json:"first_name" db:"first_name"`
	LastName     string      `json:"last_name" db:"last_name"`
	DateOfBirth  *model.Date `json:"date_of_birth" db:"date_of_birth"`
	RelationType string      `json:"relation_type" db:"relation_type"`
}

// OrganizationDetail is an organization with the first people linked to
// it (model.MaxEmbedded, in link order): the shape of every
// single-organization answer. AssociatedPeopleTruncated says more are
// linked; GET /organizations/{id}/people pages through them all.
type OrganizationDetail struct {
	Organization
	AssociatedPeople          []AssociatedPerson `json:"associated_people"`
	AssociatedPeopleTruncated bool               `json:"associated_people_truncated"`
}

// Person is a natural person, identified by name and date of birth.
type Person struct {
	ID          uuid.UUID   `json:"id" db:"id"`
	FirstName   string      `json:"first_name" db:"first_name"`
	LastName    string      `json:"last_name" db:"last_name"`
	DateOfBirth *model.Date `json:"date_of_birth" db:"date_of_birth"`
	model.Audit
}

// AssociatedOrganization is an organization linked to a person, as listed
// on the person.
type AssociatedOrganization struct {
	ID                 uuid.UUID `json:"id" db:"id"`
	Name               string    `json:"name" db:"name"`
	RegistrationNumber string    `json:"registration_number" db:"registration_number"`
	OrganizationType   string    `json:"organization_type" db:"organization_type"`
	Country            *string   `json:"country" db:"country"`
	RelationType       string    `json:"relation_type" db:"relation_type"`
}

// PersonDetail is a person with the first organizations linked to them,
// as OrganizationDetail has its people; GET /people/{id}/organizations
// pages through them all.
type PersonDetail struct {
	Person
	AssociatedOrganizations          []AssociatedOrganization `json:"associated_organizations"`
	AssociatedOrganizationsTruncated bool                     `json:"associated_organizations_truncated"`
}

// Link ties a person to an organization with a relation type.
type Link struct {
	PersonID       uuid.UUID `json:"person_id" db:"person_id"`
	OrganizationID uuid.UUID `json:"organization_id" db:"organization_id"`
	RelationType   string    `json:"relation_type" db:"relation_type"`
	CreatedAt      time.Time `json:"created_at" db:"created_at"`
}

// The members of an organization and of a person that the service sets
// beyond the audit fields every resource has: sending one is a 422 that
// says it is read-only, not just unknown.
var (
	organizationReadOnly = []string{"idp_id", "associated_people", "associated_people_truncated"}
	personReadOnly       = []string{"associated_organizations", "associated_organizations_truncated"}
)

// ReadOnlyFields names an organization's service-set members.
func (OrganizationInput) ReadOnlyFields() []string { return organizationReadOnly }

// ReadOnlyFields names an organization's service-set members.
func (OrganizationPatch) ReadOnlyFields() []string { return organizationReadOnly }

// ReadOnlyFields names a person's service-set members.
func (PersonInput) ReadOnlyFields() []string { return personReadOnly }

// ReadOnlyFields names a person's service-set members.
func (PersonPatch) ReadOnlyFields() []string { return personReadOnly }

// OrganizationInput is what a client writes: the body of a create, and the
// result of applying a patch.
type OrganizationInput struct {
	Name                  string  `json:"name"`
	RegistrationNumber    string  `json:"registration_number"`
	OrganizationType      string  `json:"organization_type"`
	TaxRegistrationNumber *string `json:"tax_registration_number"`
	// TaxIdentificationNumber is an input alias of TaxRegistrationNumber
	// (the interface's example uses this name); output uses the canonical one.
	TaxIdentificationNumber *string `json:"tax_identification_number"`
	Country                 *string `json:"country"`
}

// Normalize trims and canonicalises the input and checks every field.
func (in OrganizationInput) Normalize() (OrganizationInput, error) {
	var v apperr.Validation
	in.Name = model.Required(&v, "name", in.Name, model.NameLen)
	in.RegistrationNumber = model.Required(&v, "registration_number", in.RegistrationNumber, model.NumberLen)
	model.OneOf(&v, "organization_type", in.OrganizationType, OrganizationTypes)
	tax, alias := model.Optional(&v, "tax_registration_number", in.TaxRegistrationNumber, model.NumberLen),
		model.Optional(&v, "tax_identification_number", in.TaxIdentificationNumber, model.NumberLen)
	if tax != nil && alias != nil && *tax != *alias {
		v.Add("tax_identification_number", "is an alias of tax_registration_number and differs from it")
	}
	if tax == nil {
		tax = alias
	}
	in.TaxRegistrationNumber, in.TaxIdentificationNumber = tax, nil
	in.Country = optionalCountry(&v, in.Country)
	return in, v.Err()
}

// OrganizationPatch is a JSON merge patch of an organization.
type OrganizationPatch struct {
	Name                    model.PatchField[string] `json:"name"`
	RegistrationNumber      model.PatchField[string] `json:"registration_number"`
	OrganizationType        model.PatchField[string] `json:"organization_type"`
	TaxRegistrationNumber   model.PatchField[string] `json:"tax_registration_number"`
	TaxIdentificationNumber model.PatchField[string] `json:"tax_identification_number"`
	Country                 model.PatchField[string] `json:"country"`
}

// Apply returns the input that results from patching o.
func (p OrganizationPatch) Apply(o Organization) (OrganizationInput, error) {
	in := OrganizationInput{
		Name:                  o.Name,
		RegistrationNumber:    o.RegistrationNumber,
		OrganizationType:      o.OrganizationType,
		TaxRegistrationNumber: o.TaxRegistrationNumber,
		Country:               o.Country,
	}
	var v apperr.Validation
	model.Keep(&v, "name", p.Name, &in.Name)
	model.Keep(&v, "registration_number", p.RegistrationNumber, &in.RegistrationNumber)
	model.Keep(&v, "organization_type", p.OrganizationType, &in.OrganizationType)
	if p.TaxIdentificationNumber.Set && !p.TaxRegistrationNumber.Set {
		p.TaxRegistrationNumber, p.TaxIdentificationNumber = p.TaxIdentificationNumber, model.PatchField[string]{}
	}
	p.TaxRegistrationNumber.ApplyOptional(&in.TaxRegistrationNumber)
	p.TaxIdentificationNumber.ApplyOptional(&in.TaxIdentificationNumber)
	p.Country.ApplyOptional(&in.Country)
	return model.Patched(&v, in)
}

// OrganizationQuery is the body of an organization find.
type OrganizationQuery struct {
	RegistrationNumber string  `json:"registration_number"`
	Country            *string `json:"country"`
}

// Normalize checks the criteria.
func (q OrganizationQuery) Normalize() (OrganizationQuery, error) {
	var v apperr.Validation
	q.RegistrationNumber = model.Required(&v, "registration_number", q.RegistrationNumber, model.NumberLen)
	q.Country = optionalCountry(&v, q.Country)
	return q, v.Err()
}

// OrganizationFilter narrows a list; nil fields do not filter.
type OrganizationFilter struct {
	RegistrationNumber *string
	Country            *string
	OrganizationType   *string
}

// PersonInput is the body of a person create and the criteria of a find.
type PersonInput struct {
	FirstName   string      `json:"first_name"`
	LastName    string      `json:"last_name"`
	DateOfBirth *model.Date `json:"date_of_birth"`
}

// Normalize trims names and checks every field.
func (in PersonInput) Normalize() (PersonInput, error) {
	var v apperr.Validation
	in.FirstName = model.Required(&v, "first_name", in.FirstName, model.NameLen)
	in.LastName = model.Required(&v, "last_name", in.LastName, model.NameLen)
	if in.DateOfBirth != nil && in.DateOfBirth.After(model.Today()) {
		v.Add("date_of_birth", "must not be in the future")
	}
	return in, v.Err()
}

// PersonPatch is a JSON merge patch of a person.
type PersonPatch struct {
	FirstName   model.PatchField[string]     `json:"first_name"`
	LastName    model.PatchField[string]     `json:"last_name"`
	DateOfBirth model.PatchField[model.Date] `json:"date_of_birth"`
}

// Apply returns the input that results from patching p.
func (p PersonPatch) Apply(current Person) (PersonInput, error) {
	in := PersonInput{FirstName: current.FirstName, LastName: current.LastName, DateOfBirth: current.DateOfBirth}
	var v apperr.Validation
	model.Keep(&v, "first_name", p.FirstName, &in.FirstName)
	model.Keep(&v, "last_name", p.LastName, &in.LastName)
	p.DateOfBirth.ApplyOptional(&in.DateOfBirth)
	return model.Patched(&v, in)
}

// PersonFilter narrows a list; names match case-insensitively.
type PersonFilter struct {
	FirstName   *string
	LastName    *string
	DateOfBirth *model.Date
}

// LinkInput names a person-organization relation.
type LinkInput struct {
	PersonID       uuid.UUID
	OrganizationID uuid.UUID
	RelationType   string
}

// Validate checks the relation type.
func (in LinkInput) Validate() error {
	var v apperr.Validation
	model.Token(&v, "relation_type", in.RelationType, "relation_type=employee")
	return v.Err()
}

// identityKey is how names compare (model.Fold).
func identityKey(name string) string { return model.Fold(name) }
