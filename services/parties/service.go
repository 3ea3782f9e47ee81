// Package parties is the registry's service for organizations, people and
// the links between them. Its layers follow go-kit: Service (this file,
// plain Go types), endpoints (endpoint.go), HTTP transport (transport.go)
// and PostgreSQL store (store.go); finds are cached in Redis (cache.go).
package parties

import (
	"context"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
)

// Service is what the parties service does. Errors are *apperr.Error.
type Service interface {
	CreateOrganization(ctx context.Context, by model.Caller, in OrganizationInput) (OrganizationDetail, error)
	GetOrganization(ctx context.Context, id uuid.UUID) (OrganizationDetail, error)
	ListOrganizations(ctx context.Context, f OrganizationFilter, page model.Page) (model.Paged[Organization], error)
	FindOrganization(ctx context.Context, q OrganizationQuery) (OrganizationDetail, error)
	UpdateOrganization(ctx context.Context, g model.Guard, id uuid.UUID, p OrganizationPatch) (OrganizationDetail, error)
	DeleteOrganization(ctx context.Context, g model.Guard, id uuid.UUID) error
	// OrganizationPeople pages through every person linked to the
	// organization, in link order: the whole of what its answer's
	// associated_people begins.
	OrganizationPeople(ctx context.Context, id uuid.UUID, page model.LinkPage) (model.LinkPaged[AssociatedPerson], error)

	CreatePerson(ctx context.Context, by model.Caller, in PersonInput) (PersonDetail, error)
	GetPerson(ctx context.Context, id uuid.UUID) (PersonDetail, error)
	ListPeople(ctx context.Context, f PersonFilter, page model.Page) (model.Paged[Person], error)
	// FindPerson returns the person matching the criteria; with create it
	// creates one when none matches and reports created=true.
	FindPerson(ctx context.Context, by model.Caller, q PersonInput, create bool) (p PersonDetail, created bool, err error)
	UpdatePerson(ctx context.Context, g model.Guard, id uuid.UUID, p PersonPatch) (PersonDetail, error)
	DeletePerson(ctx context.Context, g model.Guard, id uuid.UUID) error
	// PersonOrganizations pages through every organization the person is
	// linked to, as OrganizationPeople does.
	PersonOrganizations(ctx context.Context, id uuid.UUID, page model.LinkPage) (model.LinkPaged[AssociatedOrganization], error)

	// Link relates a person to an organization; created=false when the
	// relation existed already.
	Link(ctx context.Context, by model.Caller, in LinkInput) (l Link, created bool, err error)
	Unlink(ctx context.Context, g model.Guard, in LinkInput) error
}

type service struct {
	store *Store
	refs  *refs.Registry
}

// NewService returns the service over store. People and organizations
// are deleted through the reference protocol (r), which asks the services
// that point at them first; r answers them from the store's tables.
func NewService(store *Store, r *refs.Registry) Service {
	r.Owns("person", refs.ExistsIn("people"))
	r.Owns("organization", refs.ExistsIn("organizations"))
	return &service{store: store, refs: r}
}

func (s *service) CreateOrganization(ctx context.Context, by model.Caller, in OrganizationInput) (OrganizationDetail, error) {
	in, err := in.Normalize()
	if err != nil {
		return OrganizationDetail{}, err
	}
	o, err := s.store.CreateOrganization(ctx, by, in)
	return OrganizationDetail{Organization: o, AssociatedPeople: []AssociatedPerson{}}, err
}

func (s *service) GetOrganization(ctx context.Context, id uuid.UUID) (OrganizationDetail, error) {
	return s.store.GetOrganization(ctx, id)
}

func (s *service) ListOrganizations(ctx context.Context, f OrganizationFilter, page model.Page) (model.Paged[Organization], error) {
	return s.store.ListOrganizations(ctx, f, page)
}

func (s *service) FindOrganization(ctx context.Context, q OrganizationQuery) (OrganizationDetail, error) {
	q, err := q.Normalize()
	if err != nil {
		return OrganizationDetail{}, err
	}
	matches, err := s.store.FindOrganizations(ctx, q)
	if err != nil {
		return OrganizationDetail{}, err
	}
	return model.FindOne(matches, "organization", func(o OrganizationDetail) any {
		return map[string]any{"id": o.ID, "name": o.Name, "registration_number": o.RegistrationNumber, "country": o.Country}
	})
}

func (s *service) UpdateOrganization(ctx context.Context, g model.Guard, id uuid.UUID, p OrganizationPatch) (OrganizationDetail, error) {
	if err := s.store.UpdateOrganization(ctx, g, id, p.Apply); err != nil {
		return OrganizationDetail{}, err
	}
	return s.store.GetOrganization(ctx, id)
}

// DeleteOrganization removes an organization unless something in another
// service still names it: the protocol asks them, then runs the store's
// delete under g.
func (s *service) DeleteOrganization(ctx context.Context, g model.Guard, id uuid.UUID) error {
	current := func(ctx context.Context) (any, error) { return s.store.GetOrganization(ctx, id) }
	return s.refs.DeleteRow(ctx, g, "organization", "organizations", id, current, s.store.DeleteOrganization(g.Caller, id))
}

func (s *service) OrganizationPeople(ctx context.Context, id uuid.UUID, page model.LinkPage) (model.LinkPaged[AssociatedPerson], error) {
	return s.store.OrganizationPeople(ctx, id, page)
}

func (s *service) CreatePerson(ctx context.Context, by model.Caller, in PersonInput) (PersonDetail, error) {
	in, err := in.Normalize()
	if err != nil {
		return PersonDetail{}, err
	}
	p, err := s.store.CreatePerson(ctx, by, in)
	return PersonDetail{Person: p, AssociatedOrganizations: []AssociatedOrganization{}}, err
}

func (s *service) GetPerson(ctx context.Context, id uuid.UUID) (PersonDetail, error) {
	return s.store.GetPerson(ctx, id)
}

func (s *service) ListPeople(ctx context.Context, f PersonFilter, page model.Page) (model.Paged[Person], error) {
	return s.store.ListPeople(ctx, f, page)
}

// FindPerson matches names case-insensitively and, when given, the date of
// birth. Without a date of birth any date matches, so several people can
// match (a 409 listing them). With create and no match, the person is
// created; a concurrent identical call gets the same person.
func (s *service) FindPerson(ctx context.Context, by model.Caller, q PersonInput, create bool) (PersonDetail, bool, error) {
	q, err := q.Normalize()
	if err != nil {
		return PersonDetail{}, false, err
	}
	matches, err := s.store.FindPeople(ctx, q)
	if err != nil {
		return PersonDetail{}, false, err
	}
	if len(matches) > 0 || !create {
		p, err := model.FindOne(matches, "person", func(p PersonDetail) any {
			return map[string]any{"id": p.ID, "first_name": p.FirstName, "last_name": p.LastName, "date_of_birth": p.DateOfBirth}
		})
		return p, false, err
	}
	p, created, err := s.store.CreatePersonIfAbsent(ctx, by, q)
	if err != nil {
		return PersonDetail{}, false, err
	}
	if !created {
		// Another caller created it between our find and our insert; it
		// may have links by now, so read it whole.
		detail, err := s.store.GetPerson(ctx, p.ID)
		return detail, false, err
	}
	return PersonDetail{Person: p, AssociatedOrganizations: []AssociatedOrganization{}}, true, nil
}

func (s *service) UpdatePerson(ctx context.Context, g model.Guard, id uuid.UUID, p PersonPatch) (PersonDetail, error) {
	if err := s.store.UpdatePerson(ctx, g, id, p.Apply); err != nil {
		return PersonDetail{}, err
	}
	return s.store.GetPerson(ctx, id)
}

// DeletePerson removes a person unless something in another service still
// names them, as DeleteOrganization does.
func (s *service) DeletePerson(ctx context.Context, g model.Guard, id uuid.UUID) error {
	current := func(ctx context.Context) (any, error) { return s.store.GetPerson(ctx, id) }
	return s.refs.DeleteRow(ctx, g, "person", "people", id, current, s.store.DeletePerson(g.Caller, id))
}

func (s *service) PersonOrganizations(ctx context.Context, id uuid.UUID, page model.LinkPage) (model.LinkPaged[AssociatedOrganization], error) {
	return s.store.PersonOrganizations(ctx, id, page)
}

func (s *service) Link(ctx context.Context, by model.Caller, in LinkInput) (Link, bool, error) {
	if err := in.Validate(); err != nil {
		return Link{}, false, err
	}
	return s.store.Link(ctx, by, in)
}

func (s *service) Unlink(ctx context.Context, g model.Guard, in LinkInput) error {
	if err := in.Validate(); err != nil {
		return err
	}
	return s.store.Unlink(ctx, g, in)
}
