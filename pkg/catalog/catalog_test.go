package catalog

import (
	"slices"
	"testing"
)

func TestCatalogIsValid(t *testing.T) {
	if err := Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRefusesClashes(t *testing.T) {
	saved := Services
	t.Cleanup(func() { Services = saved })
	tests := []struct {
		name   string
		mutate func()
	}{
		{"port taken", func() { Services = append(slices.Clone(saved), Service{Deployable: service("extra", saved[0].Port)}) }},
		{"prefix taken", func() {
			Services = append(slices.Clone(saved), Service{Deployable: service("extra", 8199),
				Resources: []Resource{{Name: "again", Prefixes: saved[0].Resources[0].Prefixes}}})
		}},
		{"reserved prefix", func() {
			Services = append(slices.Clone(saved), Service{Deployable: service("extra", 8199),
				Resources: []Resource{{Name: "internal", Prefixes: []string{"/internal"}}}})
		}},
		{"reference to nothing", func() {
			Services = append(slices.Clone(saved), Service{Deployable: service("extra", 8199),
				References: []Reference{{Service: "parties", Kind: "spaceship"}}})
		}},
		{"under a resource that does not exist", func() {
			Services = append(slices.Clone(saved), Service{Deployable: service("extra", 8199),
				Resources: []Resource{{Name: "notes", Under: []string{"spaceships"}}}})
		}},
		{"anonymous write", func() {
			Services = append(slices.Clone(saved), Service{Deployable: service("extra", 8199),
				Resources: []Resource{{Name: "notes", Prefixes: []string{"/notes"}, Anonymous: []string{"POST /notes/open"}}}})
		}},
		{"anonymous route of another prefix", func() {
			Services = append(slices.Clone(saved), Service{Deployable: service("extra", 8199),
				Resources: []Resource{{Name: "notes", Prefixes: []string{"/notes"}, Anonymous: []string{"GET /assets/open"}}}})
		}},
		{"kind owned twice", func() {
			Services = append(slices.Clone(saved), Service{Deployable: service("extra", 8199), Kinds: saved[0].Kinds})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.mutate()
			if err := Validate(); err == nil {
				t.Error("Validate accepted a broken catalog")
			}
		})
	}
}

func TestPeersAreDerivedFromReferences(t *testing.T) {
	saved := Services
	t.Cleanup(func() { Services = saved })
	// A catalog of its own, so the expectations do not move as services
	// join the real one.
	Services = []Service{
		{Deployable: service("parties", 8101), Kinds: []string{"organization", "person"}},
		{Deployable: service("documents", 8102), Kinds: []string{"document"}},
		{Deployable: service("extra", 8199),
			References: []Reference{{Service: "parties", Kind: "person"}, {Service: "documents", Kind: "document"}}},
	}
	extra, _ := Lookup("extra")
	if got := extra.Peers(); !slices.Equal(got, []string{"documents", "parties"}) {
		t.Errorf("extra peers = %v", got)
	}
	parties, _ := Lookup("parties")
	if got := parties.Peers(); !slices.Equal(got, []string{"extra"}) {
		t.Errorf("parties peers = %v (it must ask extra before deleting a person)", got)
	}
	if got := ReferrersOf("parties", "person"); !slices.Equal(got, []string{"extra"}) {
		t.Errorf("referrers of person = %v", got)
	}
	if got := ReferrersOf("parties", "organization"); len(got) != 0 {
		t.Errorf("referrers of organization = %v", got)
	}
}

// A service that reads another's internal routes without referencing a
// kind of it is its peer both ways: it calls, the other lets it in.
func TestReadsMakePeers(t *testing.T) {
	saved := Services
	t.Cleanup(func() { Services = saved })
	Services = []Service{
		{Deployable: service("assets", 8103), Kinds: []string{"asset"}},
		{Deployable: service("reader", 8199), Reads: []string{"assets"}},
	}
	reader, _ := Lookup("reader")
	if got := reader.Peers(); !slices.Equal(got, []string{"assets"}) {
		t.Errorf("reader peers = %v", got)
	}
	assets, _ := Lookup("assets")
	if got := assets.Peers(); !slices.Equal(got, []string{"reader"}) {
		t.Errorf("assets peers = %v (it must let its reader in)", got)
	}
	if got := ReferrersOf("assets", "asset"); len(got) != 0 {
		t.Errorf("a reader references no kind: %v", got)
	}
}

// Each service's peers, and the kinds it references, whose owners ask it
// before deleting one: assets references what parties and documents own
// (an asset's owner organization and the organizations holding grants on
// it included), and actions references an asset, a person, an
// organization and a document. actions references assets, so assets asks
// it before deleting one; events reads the assets' owners and grants and
// the actions' compliance rows (for passports); documents learns a
// document's action documents from actions.
func TestServiceReferences(t *testing.T) {
	type owned struct{ service, kind string }
	tests := []struct {
		service    string
		peers      []string
		references []owned
	}{
		{"assets", []string{"actions", "documents", "events", "parties"},
			[]owned{{"parties", "person"}, {"documents", "document"}, {"parties", "organization"}}},
		{"actions", []string{"assets", "documents", "events", "parties"},
			[]owned{{"assets", "asset"}, {"parties", "person"}, {"parties", "organization"}, {"documents", "document"}}},
	}
	for _, tt := range tests {
		svc, ok := Lookup(tt.service)
		if !ok {
			t.Fatalf("no %s entry", tt.service)
		}
		if got := svc.Peers(); !slices.Equal(got, tt.peers) {
			t.Errorf("%s peers = %v, want %v", tt.service, got, tt.peers)
		}
		for _, o := range tt.references {
			if got := ReferrersOf(o.service, o.kind); !slices.Contains(got, tt.service) {
				t.Errorf("referrers of %s = %v, want %s among them", o.kind, got, tt.service)
			}
		}
	}
	if owner, _ := OwnerOf("action_document"); owner != "actions" {
		t.Errorf("owner of action_document = %q", owner)
	}
}

func TestRoute(t *testing.T) {
	tests := []struct {
		path, service, resource string
	}{
		{"/organizations", "parties", "organizations"},
		{"/organizations/0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f", "parties", "organizations"},
		{"/organizations/0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f/history", "events", "history"},
		{"/people/x/history", "events", "history"},
		{"/actions/a/action_documents/b", "actions", "actions"},
		{"/actions/a/history/more", "actions", "actions"},
		{"/organizations//history", "parties", "organizations"},
		{"/events", "events", "events"},
		{"/assets/x/passport", "events", "passport"},
		{"/assets/x/passport/more", "assets", "assets"},
		{"/assets/x/passport_links", "events", "passport_links"},
		{"/assets/x/passport_links/y", "events", "passport_links"},
		{"/passports/token", "events", "passports"},
		{"/organizations/x/passport", "parties", "organizations"},
		{"/webhooks/x/deliveries", "events", "webhooks"},
		{"/nothing", "", ""},
	}
	for _, tt := range tests {
		r, _, ok := Route(tt.path)
		if ok != (tt.service != "") || r.Service != tt.service || r.Name != tt.resource {
			t.Errorf("Route(%q) = %s/%s %v, want %s/%s", tt.path, r.Service, r.Name, ok, tt.service, tt.resource)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Route("/assets/x/history") }); n != 0 {
		t.Errorf("Route allocates %v times", n)
	}
}

// A GET of a resource that carries as_of is the events service's (the
// resource as it was, from its history); any other request of that path,
// and as_of on any other path, stays the owner's.
func TestRouteRequest(t *testing.T) {
	id := "/0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f"
	tests := []struct {
		method, path, query, service, resource string
	}{
		{"GET", "/assets" + id, "as_of=2025-01-01T00:00:00Z", "events", "as_of"},
		{"HEAD", "/documents" + id, "x=1&as_of=2025-01-01T00:00:00Z", "events", "as_of"},
		{"GET", "/people" + id, "as%5Fof=2025", "events", "as_of"},
		{"GET", "/organization" + id, "as_of", "events", "as_of"},
		{"GET", "/assets" + id, "", "assets", "assets"},
		{"GET", "/assets" + id, "as_off=1&xas_of=2", "assets", "assets"},
		{"PATCH", "/assets" + id, "as_of=2025-01-01T00:00:00Z", "assets", "assets"},
		{"GET", "/assets", "as_of=2025-01-01T00:00:00Z", "assets", "assets"},
		{"GET", "/actions" + id + "/action_documents", "as_of=2025-01-01T00:00:00Z", "actions", "actions"},
		{"GET", "/assets" + id + "/history", "as_of=2025-01-01T00:00:00Z", "events", "history"},
		{"GET", "/webhooks" + id, "as_of=2025-01-01T00:00:00Z", "events", "webhooks"},
		{"GET", "/compliance" + id, "as_of=2025-01-01T00:00:00Z", "actions", "compliance"},
		{"GET", "/log/checkpoint", "", "events", "log"},
	}
	for _, tt := range tests {
		r, _, ok := RouteRequest(tt.method, tt.path, tt.query)
		if !ok || r.Service != tt.service || r.Name != tt.resource {
			t.Errorf("RouteRequest(%s %s?%s) = %s/%s %v, want %s/%s", tt.method, tt.path, tt.query, r.Service, r.Name, ok, tt.service, tt.resource)
		}
	}
	if n := testing.AllocsPerRun(100, func() { RouteRequest("GET", "/assets/x", "limit=1&as_of=2025-01-01T00:00:00Z") }); n != 0 {
		t.Errorf("RouteRequest allocates %v times", n)
	}
}
