package parties

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
)

// Store is the PostgreSQL persistence of organizations, people and links.
// Every write commits through store.Write, which then makes stale the
// cached finds the write says it changed.
type Store struct {
	*store.Store
	organizations store.Updater[Organization, OrganizationInput]
	people        store.Updater[Person, PersonInput]
}

// NewStore returns the parties store over the kit's store.
func NewStore(s *store.Store) *Store {
	st := &Store{Store: s, organizations: organizationUpdater, people: personUpdater}
	// An update checks If-Match against the resource as a GET shows it.
	st.organizations.Representation = func(ctx context.Context, o Organization) (any, error) {
		return st.GetOrganization(ctx, o.ID)
	}
	st.people.Representation = func(ctx context.Context, p Person) (any, error) { return st.GetPerson(ctx, p.ID) }
	st.organizations.Kind, st.organizations.ID = outbox.KindOrganization, func(o Organization) uuid.UUID { return o.ID }
	st.people.Kind, st.people.ID = outbox.KindPerson, func(p Person) uuid.UUID { return p.ID }
	return st
}

const organizationColumns = `id, name, registration_number, organization_type, tax_registration_number,
	country, idp_id, created_at, created_by, updated_at, updated_by`

// Link order: when the link was made, then the other end's id and the
// relation type, which together tell any two links of one end apart. The
// indexes of migration 002 hold the links of either end in this order, so
// a page of them, and the embedded first page, are a range scan however
// many links there are.

// The first people linked to an organization (model.MaxEmbedded, in link
// order) as one JSON array, and whether more are linked.
var associatedPeopleSQL = fmt.Sprintf(`COALESCE((
	SELECT json_agg(e.item ORDER BY e.created_at, e.person_id, e.relation_type) FROM (
		SELECT json_build_object('id', p.id, 'first_name', p.first_name, 'last_name', p.last_name,
			'date_of_birth', p.date_of_birth, 'relation_type', l.relation_type) AS item, l.created_at, l.person_id, l.relation_type
		FROM person_organizations l JOIN people p ON p.id = l.person_id
		WHERE l.organization_id = o.id ORDER BY l.created_at, l.person_id, l.relation_type LIMIT %[1]d) e), '[]') AS associated_people,
	EXISTS (SELECT FROM person_organizations l WHERE l.organization_id = o.id
		ORDER BY l.created_at, l.person_id, l.relation_type OFFSET %[1]d) AS associated_people_truncated`, model.MaxEmbedded)

// CreateOrganization inserts a new organization.
func (s *Store) CreateOrganization(ctx context.Context, by model.Caller, in OrganizationInput) (Organization, error) {
	var o Organization
	err := s.Write(ctx, "create organization", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var err error
		o, err = store.One[Organization](ctx, tx, "insert organization", "organization", uuid.Nil,
			`INSERT INTO organizations (id, name, registration_number, organization_type, tax_registration_number,
				country, created_by, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING `+organizationColumns,
			store.NewID(), in.Name, in.RegistrationNumber, in.OrganizationType, in.TaxRegistrationNumber, in.Country, by.Subject)
		if err != nil {
			return nil, err
		}
		// As GET shows it: a new organization has no people yet, so the
		// row the insert returned is the whole of it (one read fewer).
		return []string{organizationFinds(in.RegistrationNumber)}, s.Record(ctx, tx, by,
			outbox.Created(outbox.KindOrganization, o.ID.String(), OrganizationDetail{Organization: o, AssociatedPeople: []AssociatedPerson{}}))
	})
	return o, s.organizationConflict(ctx, err, in.RegistrationNumber, in.Country)
}

// GetOrganization reads an organization with its people.
func (s *Store) GetOrganization(ctx context.Context, id uuid.UUID) (OrganizationDetail, error) {
	return store.One[OrganizationDetail](ctx, s.DB(ctx), "get organization", "organization", id,
		`SELECT `+organizationColumns+`, `+associatedPeopleSQL+` FROM organizations o WHERE id = $1`, id)
}

// ListOrganizations reads one page.
func (s *Store) ListOrganizations(ctx context.Context, f OrganizationFilter, page model.Page) (model.Paged[Organization], error) {
	var where store.Filter
	store.Equal(&where, "registration_number", f.RegistrationNumber)
	store.Equal(&where, "country", f.Country)
	store.Equal(&where, "organization_type", f.OrganizationType)
	return store.List(ctx, s.Reads(ctx), "list organizations", `SELECT `+organizationColumns+` FROM organizations`,
		where, page, func(o Organization) uuid.UUID { return o.ID })
}

// FindOrganizations returns the organizations with the registration number,
// in the given country or, without one, in any.
func (s *Store) FindOrganizations(ctx context.Context, q OrganizationQuery) ([]OrganizationDetail, error) {
	var where store.Filter
	where.Where("registration_number = ?", q.RegistrationNumber)
	store.Equal(&where, "country", q.Country)
	return store.Many[OrganizationDetail](ctx, s.Reads(ctx), "find organization",
		`SELECT `+organizationColumns+`, `+associatedPeopleSQL+` FROM organizations o`+where.SQL()+
			fmt.Sprintf(` ORDER BY id LIMIT %d`, model.FindLimit), where.Args()...)
}

// linkedPerson is an entry of an organization's people with its place in
// link order.
type linkedPerson struct {
	AssociatedPerson
	LinkedAt time.Time `db:"linked_at"`
}

// OrganizationPeople reads one page of the people linked to an
// organization, in link order; an unknown organization is a 404.
func (s *Store) OrganizationPeople(ctx context.Context, id uuid.UUID, page model.LinkPage) (model.LinkPaged[AssociatedPerson], error) {
	return linkedPage(ctx, s.Reads(ctx), "list people of organization", "organization", id, page,
		`SELECT p.id, p.first_name, p.last_name, p.date_of_birth, l.relation_type, l.created_at AS linked_at
		FROM person_organizations l JOIN people p ON p.id = l.person_id WHERE l.organization_id = $1`,
		"l.created_at, l.person_id, l.relation_type", `SELECT EXISTS (SELECT FROM organizations WHERE id = $1)`,
		func(p linkedPerson) (AssociatedPerson, model.LinkKey) {
			return p.AssociatedPerson, model.LinkKey{At: p.LinkedAt, ID: p.ID, Name: p.RelationType}
		})
}

// linkedPage reads one page of the links of one end (id, the query's $1)
// after page.After in link order (orderBy: the time, the other end's id
// and the relation type): rows of type R, each entry the other end as
// entry makes it with its place in link order. An empty page asks
// whether the end exists (exists, of $1): an unknown organization or
// person is a 404, not an empty list.
func linkedPage[R, E any](ctx context.Context, q store.Querier, op, resource string, id uuid.UUID, page model.LinkPage,
	selectSQL, orderBy, exists string, entry func(R) (E, model.LinkKey)) (model.LinkPaged[E], error) {
	args := []any{id}
	if page.After != nil {
		selectSQL += ` AND (` + orderBy + `) > ($2, $3, $4)`
		args = append(args, page.After.At, page.After.ID, page.After.Name)
	}
	rows, err := store.Many[R](ctx, q, op, fmt.Sprintf(`%s ORDER BY %s LIMIT %d`, selectSQL, orderBy, page.Limit+1), args...)
	if err != nil {
		return model.LinkPaged[E]{}, err
	}
	if len(rows) == 0 {
		found := false
		if err := q.QueryRow(ctx, exists, id).Scan(&found); err != nil {
			return model.LinkPaged[E]{}, store.Classify(err, op)
		}
		if !found {
			return model.LinkPaged[E]{}, apperr.NotFound(resource, id.String())
		}
	}
	paged := model.TrimLinks(rows, page, func(r R) model.LinkKey { _, k := entry(r); return k })
	out := model.LinkPaged[E]{Items: make([]E, len(paged.Items)), Next: paged.Next}
	for i, r := range paged.Items {
		out.Items[i], _ = entry(r)
	}
	return out, nil
}

var organizationUpdater = store.Updater[Organization, OrganizationInput]{
	Resource: "organization",
	Select:   `SELECT ` + organizationColumns + ` FROM organizations WHERE id = $1`,
	Input: func(o Organization) OrganizationInput {
		return OrganizationInput{Name: o.Name, RegistrationNumber: o.RegistrationNumber, OrganizationType: o.OrganizationType,
			TaxRegistrationNumber: o.TaxRegistrationNumber, Country: o.Country}
	},
	Save: func(ctx context.Context, tx pgx.Tx, old Organization, in OrganizationInput, actor string) ([]string, error) {
		_, err := tx.Exec(ctx, `UPDATE organizations SET name = $2, registration_number = $3, organization_type = $4,
			tax_registration_number = $5, country = $6, updated_at = now(), updated_by = $7 WHERE id = $1`,
			old.ID, in.Name, in.RegistrationNumber, in.OrganizationType, in.TaxRegistrationNumber, in.Country, actor)
		// People list their organizations, so every person find may change.
		return []string{organizationFinds(old.RegistrationNumber), organizationFinds(in.RegistrationNumber), everyPersonFind},
			store.Classify(err, "update organization")
	},
}

// UpdateOrganization applies apply to the locked organization under g.
func (s *Store) UpdateOrganization(ctx context.Context, g model.Guard, id uuid.UUID,
	apply func(Organization) (OrganizationInput, error)) error {
	in, err := s.organizations.Update(ctx, s.Store, g, id, apply)
	return s.organizationConflict(ctx, err, in.RegistrationNumber, in.Country)
}

// organizationConflict turns a natural-key violation into a 409 that names
// the organization already holding the key.
func (s *Store) organizationConflict(ctx context.Context, err error, number string, country *string) error {
	where := "without a country"
	if country != nil {
		where = "in country " + *country
	}
	return s.Duplicate(ctx, err, fmt.Sprintf("an organization with registration_number %s %s exists already", number, where),
		`SELECT id FROM organizations WHERE registration_number = $1 AND country IS NOT DISTINCT FROM $2`, number, country)
}

// DeleteOrganization is the write that removes an organization and its
// links on behalf of by, for the service to run once the reference
// protocol found nothing in another service naming it (refs.DeleteRow).
func (s *Store) DeleteOrganization(by model.Caller, id uuid.UUID) func(ctx context.Context, tx pgx.Tx) ([]string, error) {
	return func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var number string
		if err := s.deleteLinks(ctx, tx, by, "organization_id", id); err != nil {
			return nil, err
		}
		err := store.Delete(ctx, tx, "organization", id, `DELETE FROM organizations WHERE id = $1 RETURNING registration_number`, &number)
		return []string{organizationFinds(number), everyPersonFind}, err
	}
}

const personColumns = `id, first_name, last_name, date_of_birth, created_at, created_by, updated_at, updated_by`

// The first organizations a person is linked to, as associatedPeopleSQL.
var associatedOrganizationsSQL = fmt.Sprintf(`COALESCE((
	SELECT json_agg(e.item ORDER BY e.created_at, e.organization_id, e.relation_type) FROM (
		SELECT json_build_object('id', o.id, 'name', o.name, 'registration_number', o.registration_number,
			'organization_type', o.organization_type, 'country', o.country, 'relation_type', l.relation_type) AS item,
			l.created_at, l.organization_id, l.relation_type
		FROM person_organizations l JOIN organizations o ON o.id = l.organization_id
		WHERE l.person_id = p.id ORDER BY l.created_at, l.organization_id, l.relation_type LIMIT %[1]d) e), '[]') AS associated_organizations,
	EXISTS (SELECT FROM person_organizations l WHERE l.person_id = p.id
		ORDER BY l.created_at, l.organization_id, l.relation_type OFFSET %[1]d) AS associated_organizations_truncated`, model.MaxEmbedded)

const personDuplicate = "a person with this first_name, last_name and date_of_birth exists already"

// CreatePerson inserts a person; an existing identity is a 409.
func (s *Store) CreatePerson(ctx context.Context, by model.Caller, in PersonInput) (Person, error) {
	p, created, err := s.CreatePersonIfAbsent(ctx, by, in)
	if err == nil && !created {
		err = apperr.Duplicate(personDuplicate, p.ID.String())
	}
	return p, err
}

// CreatePersonIfAbsent inserts a person unless the identity exists, in
// which case it returns the existing one. Concurrent callers with the same
// identity all get the one row: the unique index arbitrates.
func (s *Store) CreatePersonIfAbsent(ctx context.Context, by model.Caller, in PersonInput) (Person, bool, error) {
	var p Person
	created := false
	err := s.Write(ctx, "create person", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var err error
		p, created, err = store.Inserted(ctx, tx, "insert person",
			`INSERT INTO people (id, first_name, last_name, first_name_key, last_name_key, date_of_birth, created_by, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING RETURNING `+personColumns,
			[]any{store.NewID(), in.FirstName, in.LastName, identityKey(in.FirstName), identityKey(in.LastName), in.DateOfBirth, by.Subject},
			func() (Person, error) {
				return store.One[Person](ctx, tx, "get person by identity", "person", uuid.Nil,
					`SELECT `+personColumns+` FROM people WHERE `+identityMatch, identityKey(in.FirstName), identityKey(in.LastName), in.DateOfBirth)
			})
		if !created || err != nil {
			return nil, err
		}
		return []string{personFinds(in.FirstName, in.LastName)}, s.RecordCreated(ctx, tx, by, outbox.KindPerson, p.ID,
			func() (any, error) { return s.GetPerson(ctx, p.ID) })
	})
	return p, created, err
}

const identityMatch = `first_name_key = $1 AND last_name_key = $2 AND date_of_birth IS NOT DISTINCT FROM $3`

// GetPerson reads a person with their organizations.
func (s *Store) GetPerson(ctx context.Context, id uuid.UUID) (PersonDetail, error) {
	return store.One[PersonDetail](ctx, s.DB(ctx), "get person", "person", id,
		`SELECT `+personColumns+`, `+associatedOrganizationsSQL+` FROM people p WHERE id = $1`, id)
}

// ListPeople reads one page; names match case-insensitively.
func (s *Store) ListPeople(ctx context.Context, f PersonFilter, page model.Page) (model.Paged[Person], error) {
	var where store.Filter
	if f.FirstName != nil {
		where.Where("first_name_key = ?", identityKey(*f.FirstName))
	}
	if f.LastName != nil {
		where.Where("last_name_key = ?", identityKey(*f.LastName))
	}
	store.Equal(&where, "date_of_birth", f.DateOfBirth)
	return store.List(ctx, s.Reads(ctx), "list people", `SELECT `+personColumns+` FROM people`,
		where, page, func(p Person) uuid.UUID { return p.ID })
}

// FindPeople returns the people with the names and, when given, the date of
// birth.
func (s *Store) FindPeople(ctx context.Context, in PersonInput) ([]PersonDetail, error) {
	var where store.Filter
	where.Where("first_name_key = ?", identityKey(in.FirstName))
	where.Where("last_name_key = ?", identityKey(in.LastName))
	store.Equal(&where, "date_of_birth", in.DateOfBirth)
	return store.Many[PersonDetail](ctx, s.Reads(ctx), "find person",
		`SELECT `+personColumns+`, `+associatedOrganizationsSQL+` FROM people p`+where.SQL()+
			fmt.Sprintf(` ORDER BY id LIMIT %d`, model.FindLimit), where.Args()...)
}

// linkedOrganization is an entry of a person's organizations with its
// place in link order.
type linkedOrganization struct {
	AssociatedOrganization
	LinkedAt time.Time `db:"linked_at"`
}

// PersonOrganizations reads one page of the organizations a person is
// linked to, in link order; an unknown person is a 404.
func (s *Store) PersonOrganizations(ctx context.Context, id uuid.UUID, page model.LinkPage) (model.LinkPaged[AssociatedOrganization], error) {
	return linkedPage(ctx, s.Reads(ctx), "list organizations of person", "person", id, page,
		`SELECT o.id, o.name, o.registration_number, o.organization_type, o.country, l.relation_type, l.created_at AS linked_at
		FROM person_organizations l JOIN organizations o ON o.id = l.organization_id WHERE l.person_id = $1`,
		"l.created_at, l.organization_id, l.relation_type", `SELECT EXISTS (SELECT FROM people WHERE id = $1)`,
		func(o linkedOrganization) (AssociatedOrganization, model.LinkKey) {
			return o.AssociatedOrganization, model.LinkKey{At: o.LinkedAt, ID: o.ID, Name: o.RelationType}
		})
}

var personUpdater = store.Updater[Person, PersonInput]{
	Resource: "person",
	Select:   `SELECT ` + personColumns + ` FROM people WHERE id = $1`,
	Input: func(p Person) PersonInput {
		return PersonInput{FirstName: p.FirstName, LastName: p.LastName, DateOfBirth: p.DateOfBirth}
	},
	Save: func(ctx context.Context, tx pgx.Tx, old Person, in PersonInput, actor string) ([]string, error) {
		_, err := tx.Exec(ctx, `UPDATE people SET first_name = $2, last_name = $3, first_name_key = $4, last_name_key = $5,
			date_of_birth = $6, updated_at = now(), updated_by = $7 WHERE id = $1`,
			old.ID, in.FirstName, in.LastName, identityKey(in.FirstName), identityKey(in.LastName), in.DateOfBirth, actor)
		// Organizations list their people, so every organization find may change.
		return []string{personFinds(old.FirstName, old.LastName), personFinds(in.FirstName, in.LastName), everyOrganizationFind},
			store.Classify(err, "update person")
	},
}

// UpdatePerson applies apply to the locked person under g.
func (s *Store) UpdatePerson(ctx context.Context, g model.Guard, id uuid.UUID, apply func(Person) (PersonInput, error)) error {
	in, err := s.people.Update(ctx, s.Store, g, id, apply)
	return s.Duplicate(ctx, err, personDuplicate,
		`SELECT id FROM people WHERE `+identityMatch, identityKey(in.FirstName), identityKey(in.LastName), in.DateOfBirth)
}

// DeletePerson is the write that removes a person and their links on
// behalf of by, for the service to run once the reference protocol found
// nothing in another service naming them (refs.DeleteRow).
func (s *Store) DeletePerson(by model.Caller, id uuid.UUID) func(ctx context.Context, tx pgx.Tx) ([]string, error) {
	return func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var first, last string
		if err := s.deleteLinks(ctx, tx, by, "person_id", id); err != nil {
			return nil, err
		}
		err := store.Delete(ctx, tx, "person", id, `DELETE FROM people WHERE id = $1 RETURNING first_name, last_name`, &first, &last)
		return []string{personFinds(first, last), everyOrganizationFind}, err
	}
}

const linkColumns = `person_id, organization_id, relation_type, created_at`

// Link relates a person to an organization; an existing relation is
// returned as it is (created=false).
func (s *Store) Link(ctx context.Context, by model.Caller, in LinkInput) (Link, bool, error) {
	var link Link
	created := false
	err := s.Write(ctx, "link person", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		changed, err := linkEnds(ctx, tx, in)
		if err != nil {
			return nil, err
		}
		link, created, err = store.Inserted(ctx, tx, "insert link",
			`INSERT INTO person_organizations (person_id, organization_id, relation_type, created_by)
			VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING `+linkColumns,
			[]any{in.PersonID, in.OrganizationID, in.RelationType, by.Subject},
			func() (Link, error) {
				return store.One[Link](ctx, tx, "get link", "link", uuid.Nil,
					`SELECT `+linkColumns+` FROM person_organizations
					WHERE person_id = $1 AND organization_id = $2 AND relation_type = $3`,
					in.PersonID, in.OrganizationID, in.RelationType)
			})
		if !created || err != nil {
			return nil, err
		}
		return changed, s.Record(ctx, tx, by, outbox.Created(outbox.KindPersonOrganization, linkID(link), link))
	})
	return link, created, err
}

// Unlink removes one relation under g (a link is its maker's).
func (s *Store) Unlink(ctx context.Context, g model.Guard, in LinkInput) error {
	return s.Write(ctx, "unlink person", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		changed, err := linkEnds(ctx, tx, in)
		if err != nil {
			return nil, err
		}
		var (
			createdBy string
			link      Link
		)
		err = tx.QueryRow(ctx, `DELETE FROM person_organizations
			WHERE person_id = $1 AND organization_id = $2 AND relation_type = $3 RETURNING created_by, `+linkColumns,
			in.PersonID, in.OrganizationID, in.RelationType).Scan(&createdBy, &link.PersonID, &link.OrganizationID, &link.RelationType, &link.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, apperr.New(apperr.KindNotFound, fmt.Sprintf(
				"person %s is not linked to organization %s as %s", in.PersonID, in.OrganizationID, in.RelationType))
		}
		if err != nil {
			return nil, store.Classify(err, "delete link")
		}
		// A link is its maker's: anyone else's unlink rolls back.
		name := fmt.Sprintf("of person %s to organization %s as %s", in.PersonID, in.OrganizationID, in.RelationType)
		if err := g.MayChange("link", name, createdBy); err != nil {
			return nil, err
		}
		return changed, s.Record(ctx, tx, g.Caller, outbox.Deleted(outbox.KindPersonOrganization, linkID(link), link))
	})
}

// linkID is a link's id in its events: "<person_id>:<organization_id>:<relation_type>".
func linkID(l Link) string {
	return l.PersonID.String() + ":" + l.OrganizationID.String() + ":" + l.RelationType
}

// deleteLinks removes the links of a person or an organization (column
// person_id or organization_id) that is being deleted, each with its event,
// before the row's delete would cascade to them unseen.
func (s *Store) deleteLinks(ctx context.Context, tx pgx.Tx, by model.Caller, column string, id uuid.UUID) error {
	links, err := store.Many[Link](ctx, tx, "delete links",
		`DELETE FROM person_organizations WHERE `+pgx.Identifier{column}.Sanitize()+` = $1 RETURNING `+linkColumns, id)
	if err != nil {
		return err
	}
	slices.SortFunc(links, func(a, b Link) int { return a.CreatedAt.Compare(b.CreatedAt) })
	changes := make([]outbox.Change, len(links))
	for i, l := range links {
		changes[i] = outbox.Deleted(outbox.KindPersonOrganization, linkID(l), l)
	}
	return s.Record(ctx, tx, by, changes...)
}

// linkEnds locks the person and the organization against a concurrent
// delete for the rest of the transaction, says which one is missing, and
// returns the finds a change of their link affects.
func linkEnds(ctx context.Context, tx pgx.Tx, in LinkInput) ([]string, error) {
	var first, last, number *string
	err := tx.QueryRow(ctx, `SELECT
		(SELECT first_name FROM people WHERE id = $1 FOR SHARE),
		(SELECT last_name FROM people WHERE id = $1),
		(SELECT registration_number FROM organizations WHERE id = $2 FOR SHARE)`,
		in.PersonID, in.OrganizationID).Scan(&first, &last, &number)
	switch {
	case err != nil:
		return nil, store.Classify(err, "check link ends")
	case first == nil:
		return nil, apperr.NotFound("person", in.PersonID.String())
	case number == nil:
		return nil, apperr.NotFound("organization", in.OrganizationID.String())
	}
	return []string{personFinds(*first, *last), organizationFinds(*number)}, nil
}
