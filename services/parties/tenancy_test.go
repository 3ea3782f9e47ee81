package parties

import (
	"flag"
	"testing"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// tenancy.require-organization (env TENANCY_REQUIRE_ORGANIZATION), off by
// default, is held by the service itself, so a service reached around the
// gateway holds it too: a write from a client bound to no organization is
// a 403 organization-required that changes nothing; a bound client and an
// admin write, and every client reads.
func TestRequireOrganizationSetting(t *testing.T) {
	entry, _ := catalog.Lookup("parties")
	for env, want := range map[string]bool{"": false, "true": true} {
		t.Setenv("TENANCY_REQUIRE_ORGANIZATION", env)
		var cfg servicekit.Config
		fs := flag.NewFlagSet("parties", flag.ContinueOnError)
		cfg.RegisterFlags(fs, entry)
		if err := process.ParseFlags(fs, nil); err != nil || cfg.RequireOrganization != want {
			t.Errorf("TENANCY_REQUIRE_ORGANIZATION=%q: %v, %v; want %v", env, cfg.RequireOrganization, err, want)
		}
	}

	s := servicetest.Start(t, Spec(), func(c *servicekit.Config) { c.RequireOrganization = true })
	refused := s.Expect(s.Do("POST", "/organizations", s.RW, acme), 403).JSON()
	if refused["type"] != httpx.ProblemTypePrefix+"organization-required" {
		t.Errorf("an unbound client's write: %v, want organization-required", refused)
	}
	s.Expect(s.Do("POST", "/people/find?create=true", s.Other, map[string]any{"first_name": "Ada", "last_name": "Lovelace"}), 403)
	if list := s.Expect(s.Do("GET", "/organizations", s.RW, nil), 200).List(); len(list) != 0 {
		t.Errorf("a refused write created %v", list)
	}
	s.Expect(s.Do("POST", "/organizations", s.OrgA.Token, acme), 201)
	s.Expect(s.Do("POST", "/organizations", s.Admin, map[string]any{
		"name": "Admin AS", "registration_number": "admin-1", "organization_type": "public", "country": "de"}), 201)
	s.Expect(s.Do("POST", "/people/find", s.RW, map[string]any{"first_name": "Ada", "last_name": "Lovelace"}), 404)
}
