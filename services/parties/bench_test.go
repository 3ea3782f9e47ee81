package parties

import (
	"strconv"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

// BenchmarkFindPerson compares a find answered by Redis with one answered
// by PostgreSQL (the cache disabled), over a table of 10 000 people.
func BenchmarkFindPerson(b *testing.B) {
	for _, bc := range []struct{ name, redis string }{
		{"cache", "use"},
		{"no-cache", ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			redisURL := bc.redis
			if redisURL != "" {
				redisURL = testkit.RedisURL(b)
			}
			f := newFixture(b, redisURL)
			seedPeople(b, f, 10_000)
			q := PersonInput{FirstName: "First4242", LastName: "Last4242"}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := f.svc.FindPerson(f.ctx, f.by, q, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetOrganization is a read by id with the associated people
// aggregated in the same query.
func BenchmarkGetOrganization(b *testing.B) {
	f := newFixture(b, "")
	org, err := f.svc.CreateOrganization(f.ctx, f.by, OrganizationInput{Name: "A", RegistrationNumber: "1", OrganizationType: "private"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		p, err := f.svc.CreatePerson(f.ctx, f.by, PersonInput{FirstName: "P", LastName: strconv.Itoa(i)})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := f.svc.Link(f.ctx, f.by, LinkInput{PersonID: p.ID, OrganizationID: org.ID, RelationType: "employee"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.svc.GetOrganization(f.ctx, org.ID); err != nil {
			b.Fatal(err)
		}
	}
}

func seedPeople(b *testing.B, f fixture, n int) {
	b.Helper()
	_, err := f.store.Pool.Exec(b.Context(), `INSERT INTO people (id, first_name, last_name, first_name_key, last_name_key, created_by, updated_by)
		SELECT gen_random_uuid(), 'First' || i, 'Last' || i, 'first' || i, 'last' || i, 'bench', 'bench'
		FROM generate_series(1, $1) AS i`, n)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.store.Pool.Exec(b.Context(), "ANALYZE people"); err != nil {
		b.Fatal(err)
	}
}
