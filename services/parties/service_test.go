package parties

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

type fixture struct {
	svc   Service
	store *Store
	ctx   context.Context
	by    model.Caller // the caller of creates
	g     model.Guard  // what changes and deletes obey: no route's rule
}

// newFixture is the service as production wires it, over a fresh schema of
// the real PostgreSQL and a private key space of the real Redis.
func newFixture(t testing.TB, redisURL string) fixture {
	t.Helper()
	kit, finds := servicetest.StoreWithFinds(t, Spec(), redisURL)
	peers, _ := servicetest.StandInClients(t, "parties")
	st := NewStore(kit)
	return fixture{svc: WithFindCache(NewService(st, refs.New("parties", kit, peers)), finds), store: st, ctx: t.Context(),
		by: servicetest.Caller("test-client"), g: servicetest.Guard("test-client")}
}

func TestOrganizationLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	in := OrganizationInput{Name: "Acme AS", RegistrationNumber: "999888777", OrganizationType: "private", Country: new("NO")}
	created := servicetest.Must[OrganizationDetail](t)(f.svc.CreateOrganization(f.ctx, f.by, in))
	if created.ID.Version() != 7 || *created.Country != "no" || created.CreatedBy != "test-client" || created.AssociatedPeople == nil {
		t.Fatalf("created = %+v", created)
	}
	got := servicetest.Must[OrganizationDetail](t)(f.svc.GetOrganization(f.ctx, created.ID))
	if !got.CreatedAt.Equal(created.CreatedAt) || got.Name != "Acme AS" {
		t.Errorf("get = %+v", got)
	}

	_, err := f.svc.CreateOrganization(f.ctx, f.by, in)
	if e := servicetest.WantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != created.ID.String() {
		t.Errorf("duplicate: existing_id = %v", e.Extensions["existing_id"])
	}
	// Same number in another country is another organization.
	other := in
	other.Country = new("se")
	servicetest.Must[OrganizationDetail](t)(f.svc.CreateOrganization(f.ctx, f.by, other))

	updated := servicetest.Must[OrganizationDetail](t)(f.svc.UpdateOrganization(f.ctx, f.g, created.ID, OrganizationPatch{
		Name: model.PatchField[string]{Set: true, Value: "Acme Norge AS"}, TaxRegistrationNumber: model.PatchField[string]{Set: true, Value: "NO999888777MVA"},
	}))
	if updated.Name != "Acme Norge AS" || *updated.TaxRegistrationNumber != "NO999888777MVA" || !updated.UpdatedAt.After(created.UpdatedAt) {
		t.Errorf("updated = %+v", updated)
	}
	unchanged := servicetest.Must[OrganizationDetail](t)(f.svc.UpdateOrganization(f.ctx, f.g, created.ID, OrganizationPatch{}))
	if !unchanged.UpdatedAt.Equal(updated.UpdatedAt) {
		t.Error("an empty patch must not touch updated_at")
	}
	// Moving onto another organization's natural key is a duplicate.
	_, err = f.svc.UpdateOrganization(f.ctx, f.g, created.ID, OrganizationPatch{Country: model.PatchField[string]{Set: true, Value: "se"}})
	servicetest.WantKind(t, err, apperr.KindConflict)

	if err := f.svc.DeleteOrganization(f.ctx, f.g, created.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.GetOrganization(f.ctx, created.ID)
	servicetest.WantKind(t, err, apperr.KindNotFound)
	servicetest.WantKind(t, f.svc.DeleteOrganization(f.ctx, f.g, created.ID), apperr.KindNotFound)
	_, err = f.svc.UpdateOrganization(f.ctx, f.g, created.ID, OrganizationPatch{})
	servicetest.WantKind(t, err, apperr.KindNotFound)
}

func TestOrganizationWithoutCountryIsUniqueByNumber(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	in := OrganizationInput{Name: "A", RegistrationNumber: "42", OrganizationType: "unclassified"}
	servicetest.Must[OrganizationDetail](t)(f.svc.CreateOrganization(f.ctx, f.by, in))
	_, err := f.svc.CreateOrganization(f.ctx, f.by, in)
	servicetest.WantKind(t, err, apperr.KindConflict)
}

func TestListOrganizations(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	var ids []uuid.UUID
	for i := range 5 {
		typ := []string{"private", "public"}[i%2]
		o := servicetest.Must[OrganizationDetail](t)(f.svc.CreateOrganization(f.ctx, f.by, OrganizationInput{
			Name: "Org " + strconv.Itoa(i), RegistrationNumber: strconv.Itoa(i), OrganizationType: typ, Country: new("no"),
		}))
		ids = append(ids, o.ID)
	}
	all := servicetest.Must[model.Paged[Organization]](t)(f.svc.ListOrganizations(f.ctx, OrganizationFilter{}, model.Page{Limit: 100}))
	if len(all.Items) != 5 || all.Next != uuid.Nil {
		t.Fatalf("all = %d items, next %v", len(all.Items), all.Next)
	}
	for i, o := range all.Items {
		if o.ID != ids[i] {
			t.Fatal("list is not in creation order")
		}
	}
	private := "private"
	page := servicetest.Must[model.Paged[Organization]](t)(f.svc.ListOrganizations(f.ctx, OrganizationFilter{OrganizationType: &private}, model.Page{Limit: 2}))
	if len(page.Items) != 2 || page.Items[0].ID != ids[0] || page.Items[1].ID != ids[2] || page.Next != ids[2] {
		t.Fatalf("page 1 = %+v", page)
	}
	page = servicetest.Must[model.Paged[Organization]](t)(f.svc.ListOrganizations(f.ctx, OrganizationFilter{OrganizationType: &private}, model.Page{Limit: 2, After: page.Next}))
	if len(page.Items) != 1 || page.Items[0].ID != ids[4] || page.Next != uuid.Nil {
		t.Fatalf("page 2 = %+v", page)
	}
}

func TestFindOrganization(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	no := servicetest.Must[OrganizationDetail](t)(f.svc.CreateOrganization(f.ctx, f.by, OrganizationInput{Name: "A", RegistrationNumber: "77", OrganizationType: "private", Country: new("no")}))
	servicetest.Must[OrganizationDetail](t)(f.svc.CreateOrganization(f.ctx, f.by, OrganizationInput{Name: "B", RegistrationNumber: "77", OrganizationType: "private", Country: new("se")}))

	got := servicetest.Must[OrganizationDetail](t)(f.svc.FindOrganization(f.ctx, OrganizationQuery{RegistrationNumber: "77", Country: new("NO")}))
	if got.ID != no.ID {
		t.Errorf("found %v, want %v", got.ID, no.ID)
	}
	_, err := f.svc.FindOrganization(f.ctx, OrganizationQuery{RegistrationNumber: "77"})
	if e := servicetest.WantKind(t, err, apperr.KindConflict); len(e.Extensions["candidates"].([]any)) != 2 {
		t.Errorf("candidates = %v", e.Extensions["candidates"])
	}
	_, err = f.svc.FindOrganization(f.ctx, OrganizationQuery{RegistrationNumber: "78", Country: new("no")})
	servicetest.WantKind(t, err, apperr.KindNotFound)
	_, err = f.svc.FindOrganization(f.ctx, OrganizationQuery{Country: new("no")})
	servicetest.WantKind(t, err, apperr.KindInvalid)
}

func TestFindPersonCreatesExactlyOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	q := PersonInput{FirstName: "Grace", LastName: "Hopper", DateOfBirth: &model.Date{Year: 1906, Month: 12, Day: 9}}
	const callers = 50
	type result struct {
		id      uuid.UUID
		created bool
		err     error
	}
	results := make(chan result, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			// Vary the spelling: identity ignores case and surrounding space.
			in := q
			if i%2 == 0 {
				in.FirstName, in.LastName = " GRACE", "hopper "
			}
			p, created, err := f.svc.FindPerson(f.ctx, f.by, in, true)
			results <- result{p.ID, created, err}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	var first uuid.UUID
	creators := 0
	for r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if first == uuid.Nil {
			first = r.id
		}
		if r.id != first {
			t.Fatalf("two people created: %v and %v", first, r.id)
		}
		if r.created {
			creators++
		}
	}
	if creators != 1 {
		t.Fatalf("%d callers report creating the person, want exactly 1", creators)
	}
	var count int
	if err := f.store.Pool.QueryRow(t.Context(), "SELECT count(*) FROM people").Scan(&count); err != nil || count != 1 {
		t.Fatalf("people rows = %d (%v), want 1", count, err)
	}
}

func TestFindPerson(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	dob := &model.Date{Year: 1980, Month: 1, Day: 2}
	_, _, err := f.svc.FindPerson(f.ctx, f.by, PersonInput{FirstName: "Ola", LastName: "Nordmann", DateOfBirth: dob}, false)
	servicetest.WantKind(t, err, apperr.KindNotFound)
	p, created, err := f.svc.FindPerson(f.ctx, f.by, PersonInput{FirstName: "Ola", LastName: "Nordmann", DateOfBirth: dob}, true)
	if err != nil || !created {
		t.Fatalf("create: %v created=%v", err, created)
	}
	again, created, err := f.svc.FindPerson(f.ctx, f.by, PersonInput{FirstName: "ola", LastName: "NORDMANN"}, true)
	if err != nil || created || again.ID != p.ID {
		t.Fatalf("find without birth date: %v created=%v id=%v", err, created, again.ID)
	}
	// A namesake with another birth date makes a name-only find ambiguous.
	servicetest.Must[PersonDetail](t)(f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "Ola", LastName: "Nordmann", DateOfBirth: &model.Date{Year: 1990, Month: 5, Day: 6}}))
	_, _, err = f.svc.FindPerson(f.ctx, f.by, PersonInput{FirstName: "Ola", LastName: "Nordmann"}, false)
	servicetest.WantKind(t, err, apperr.KindConflict)
	_, err = f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: " OLA ", LastName: "nordmann", DateOfBirth: dob})
	if e := servicetest.WantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != p.ID.String() {
		t.Errorf("existing_id = %v", e.Extensions["existing_id"])
	}
}

// The cache must never hide a write: each find below follows a write that
// changes its answer.
func TestFindsSeeEveryWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	org := servicetest.Must[OrganizationDetail](t)(f.svc.CreateOrganization(f.ctx, f.by, OrganizationInput{Name: "A", RegistrationNumber: "5", OrganizationType: "private", Country: new("no")}))
	find := func() OrganizationDetail {
		return servicetest.Must[OrganizationDetail](t)(f.svc.FindOrganization(f.ctx, OrganizationQuery{RegistrationNumber: "5", Country: new("no")}))
	}
	find() // fill the cache
	if got := find(); got.Name != "A" {
		t.Fatal(got.Name)
	}
	servicetest.Must[OrganizationDetail](t)(f.svc.UpdateOrganization(f.ctx, f.g, org.ID, OrganizationPatch{Name: model.PatchField[string]{Set: true, Value: "B"}}))
	if got := find(); got.Name != "B" {
		t.Fatalf("after rename, find says %q", got.Name)
	}
	person := servicetest.Must[PersonDetail](t)(f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "Kari", LastName: "Nordmann"}))
	if _, _, err := f.svc.Link(f.ctx, f.by, LinkInput{PersonID: person.ID, OrganizationID: org.ID, RelationType: "employee"}); err != nil {
		t.Fatal(err)
	}
	if got := find(); len(got.AssociatedPeople) != 1 || got.AssociatedPeople[0].RelationType != "employee" {
		t.Fatalf("after link, associated_people = %+v", got.AssociatedPeople)
	}
	if err := f.svc.DeletePerson(f.ctx, f.g, person.ID); err != nil {
		t.Fatal(err)
	}
	if got := find(); len(got.AssociatedPeople) != 0 {
		t.Fatalf("after deleting the person, associated_people = %+v", got.AssociatedPeople)
	}
	if err := f.svc.DeleteOrganization(f.ctx, f.g, org.ID); err != nil {
		t.Fatal(err)
	}
	_, err := f.svc.FindOrganization(f.ctx, OrganizationQuery{RegistrationNumber: "5", Country: new("no")})
	servicetest.WantKind(t, err, apperr.KindNotFound)
}

func TestFindsWorkWithoutRedis(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "redis://127.0.0.1:"+strconv.Itoa(testkit.FreePort(t))+"/0") // nothing listens
	p := servicetest.Must[PersonDetail](t)(f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "Per", LastName: "Hansen"}))
	for range 3 {
		got, _, err := f.svc.FindPerson(f.ctx, f.by, PersonInput{FirstName: "per", LastName: "hansen"}, false)
		if err != nil || got.ID != p.ID {
			t.Fatalf("find without Redis: %v, %v", got.ID, err)
		}
	}
}

func TestLinks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	org := servicetest.Must[OrganizationDetail](t)(f.svc.CreateOrganization(f.ctx, f.by, OrganizationInput{Name: "A", RegistrationNumber: "1", OrganizationType: "private"}))
	person := servicetest.Must[PersonDetail](t)(f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "Kari", LastName: "Nordmann"}))
	in := LinkInput{PersonID: person.ID, OrganizationID: org.ID, RelationType: "employee"}

	link, created, err := f.svc.Link(f.ctx, f.by, in)
	if err != nil || !created || link.RelationType != "employee" {
		t.Fatalf("link: %+v created=%v err=%v", link, created, err)
	}
	again, created, err := f.svc.Link(f.ctx, f.by, in)
	if err != nil || created || !again.CreatedAt.Equal(link.CreatedAt) {
		t.Fatalf("repeat: %+v created=%v err=%v", again, created, err)
	}
	owner := in
	owner.RelationType = "owner"
	servicetest.Must[Link](t)(func() (Link, error) { l, _, err := f.svc.Link(f.ctx, f.by, owner); return l, err }())

	p := servicetest.Must[PersonDetail](t)(f.svc.GetPerson(f.ctx, person.ID))
	if len(p.AssociatedOrganizations) != 2 || p.AssociatedOrganizations[0].ID != org.ID || p.AssociatedOrganizations[0].RelationType != "employee" {
		t.Fatalf("associated_organizations = %+v", p.AssociatedOrganizations)
	}
	o := servicetest.Must[OrganizationDetail](t)(f.svc.GetOrganization(f.ctx, org.ID))
	if len(o.AssociatedPeople) != 2 || o.AssociatedPeople[0].ID != person.ID {
		t.Fatalf("associated_people = %+v", o.AssociatedPeople)
	}

	_, _, err = f.svc.Link(f.ctx, f.by, LinkInput{PersonID: uuid.New(), OrganizationID: org.ID, RelationType: "employee"})
	servicetest.WantKind(t, err, apperr.KindNotFound)
	_, _, err = f.svc.Link(f.ctx, f.by, LinkInput{PersonID: person.ID, OrganizationID: uuid.New(), RelationType: "employee"})
	servicetest.WantKind(t, err, apperr.KindNotFound)
	_, _, err = f.svc.Link(f.ctx, f.by, LinkInput{PersonID: person.ID, OrganizationID: org.ID, RelationType: "Employee"})
	servicetest.WantKind(t, err, apperr.KindInvalid)

	if err := f.svc.Unlink(f.ctx, f.g, in); err != nil {
		t.Fatal(err)
	}
	servicetest.WantKind(t, f.svc.Unlink(f.ctx, f.g, in), apperr.KindNotFound)
	p = servicetest.Must[PersonDetail](t)(f.svc.GetPerson(f.ctx, person.ID))
	if len(p.AssociatedOrganizations) != 1 || p.AssociatedOrganizations[0].RelationType != "owner" {
		t.Fatalf("after unlink: %+v", p.AssociatedOrganizations)
	}
	// Deleting the organization takes its links along, not the person.
	if err := f.svc.DeleteOrganization(f.ctx, f.g, org.ID); err != nil {
		t.Fatal(err)
	}
	p = servicetest.Must[PersonDetail](t)(f.svc.GetPerson(f.ctx, person.ID))
	if len(p.AssociatedOrganizations) != 0 {
		t.Fatalf("links survived their organization: %+v", p.AssociatedOrganizations)
	}
}

func TestPersonUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	a := servicetest.Must[PersonDetail](t)(f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "Anne", LastName: "Berg"}))
	b := servicetest.Must[PersonDetail](t)(f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "Anna", LastName: "Berg"}))
	dob := model.Date{Year: 2001, Month: 2, Day: 3}
	got := servicetest.Must[PersonDetail](t)(f.svc.UpdatePerson(f.ctx, f.g, a.ID, PersonPatch{DateOfBirth: model.PatchField[model.Date]{Set: true, Value: dob}}))
	if got.DateOfBirth == nil || *got.DateOfBirth != dob {
		t.Fatalf("date_of_birth = %v", got.DateOfBirth)
	}
	got = servicetest.Must[PersonDetail](t)(f.svc.UpdatePerson(f.ctx, f.g, a.ID, PersonPatch{DateOfBirth: model.PatchField[model.Date]{Set: true, Null: true}}))
	if got.DateOfBirth != nil {
		t.Fatal("null did not remove date_of_birth")
	}
	_, err := f.svc.UpdatePerson(f.ctx, f.g, b.ID, PersonPatch{FirstName: model.PatchField[string]{Set: true, Value: "ANNE"}})
	if e := servicetest.WantKind(t, err, apperr.KindConflict); e.Extensions["existing_id"] != a.ID.String() {
		t.Errorf("existing_id = %v", e.Extensions["existing_id"])
	}
	_, err = f.svc.UpdatePerson(f.ctx, f.g, b.ID, PersonPatch{LastName: model.PatchField[string]{Set: true, Null: true}})
	servicetest.WantKind(t, err, apperr.KindInvalid)
}

// Person finds must see every write that changes their answer, including
// writes that only touch a linked organization or a namesake.
func TestPersonFindsSeeEveryWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	org := servicetest.Must[OrganizationDetail](t)(f.svc.CreateOrganization(f.ctx, f.by, OrganizationInput{Name: "Old Name", RegistrationNumber: "9", OrganizationType: "private"}))
	ola := servicetest.Must[PersonDetail](t)(f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "Ola", LastName: "Nordmann"}))
	find := func(first string) (PersonDetail, error) {
		p, _, err := f.svc.FindPerson(f.ctx, f.by, PersonInput{FirstName: first, LastName: "Nordmann"}, false)
		return p, err
	}
	servicetest.Must[PersonDetail](t)(find("Ola")) // cached from here on
	if _, _, err := f.svc.Link(f.ctx, f.by, LinkInput{PersonID: ola.ID, OrganizationID: org.ID, RelationType: "employee"}); err != nil {
		t.Fatal(err)
	}
	if got := servicetest.Must[PersonDetail](t)(find("Ola")); len(got.AssociatedOrganizations) != 1 {
		t.Fatalf("after link: %+v", got.AssociatedOrganizations)
	}
	servicetest.Must[OrganizationDetail](t)(f.svc.UpdateOrganization(f.ctx, f.g, org.ID, OrganizationPatch{Name: model.PatchField[string]{Set: true, Value: "New Name"}}))
	if got := servicetest.Must[PersonDetail](t)(find("Ola")); got.AssociatedOrganizations[0].Name != "New Name" {
		t.Fatalf("after renaming the organization: %+v", got.AssociatedOrganizations)
	}
	// An unrelated person's write leaves Ola's find alone (and correct).
	servicetest.Must[PersonDetail](t)(f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "Kari", LastName: "Nordmann"}))
	if got := servicetest.Must[PersonDetail](t)(find("Ola")); got.ID != ola.ID {
		t.Fatal(got.ID)
	}
	// A namesake makes the name-only find ambiguous.
	servicetest.Must[PersonDetail](t)(f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "OLA", LastName: "nordmann", DateOfBirth: &model.Date{Year: 1970, Month: 1, Day: 1}}))
	_, err := find("Ola")
	servicetest.WantKind(t, err, apperr.KindConflict)
	// A rename moves the person from one name's finds to another's.
	servicetest.Must[PersonDetail](t)(f.svc.UpdatePerson(f.ctx, f.g, ola.ID, PersonPatch{FirstName: model.PatchField[string]{Set: true, Value: "Ole"}}))
	if got := servicetest.Must[PersonDetail](t)(find("Ole")); got.ID != ola.ID {
		t.Fatal(got.ID)
	}
	if got := servicetest.Must[PersonDetail](t)(find("Ola")); got.ID == ola.ID {
		t.Fatal("the old name still finds the renamed person")
	}
	if err := f.svc.DeleteOrganization(f.ctx, f.g, org.ID); err != nil {
		t.Fatal(err)
	}
	if got := servicetest.Must[PersonDetail](t)(find("Ole")); len(got.AssociatedOrganizations) != 0 {
		t.Fatalf("after deleting the organization: %+v", got.AssociatedOrganizations)
	}
}
