// Package servicetest is the test kit every service runs: it starts the
// service in-process on its production handler stack (servicekit.Build)
// over real datastores and a real token issuer, checks every response
// against the service's bundled OpenAPI document, and holds the suites
// every service must pass the same way: the route table against the
// document, the generic error rows, and the database going away.
//
//	func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
//	func TestHTTP(t *testing.T) { s := servicetest.Start(t, parties.Spec()); ... }
package servicetest

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/openapi"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/pkg/telemetry"
	"github.com/assetregistry/registry/tools/testkit"
)

// Audience is the registry address test tokens are issued for.
const Audience = "https://registry.test"

// Service is one service under test.
type Service struct {
	t      *testing.T
	Client testkit.Client // checks every response against the document
	Issuer *testkit.Issuer
	RW, RO string // read-write and read-only tokens of client "rw-client" / "ro-client"
	// Other is a read-write token of a second integration ("other-client"),
	// Admin one of a client holding registry:admin ("admin-client").
	Other, Admin string
	// OrgA and OrgB are two organizations, each with a read-write client
	// bound to it ("org-a-client", "org-b-client"): the tenancy rules'
	// cast. A stand-in playing parties knows both; StartCluster with
	// parties creates them there.
	OrgA, OrgB Tenant
	Built      servicekit.Built
	Config     servicekit.Config
	// StandIns play the peers that are not running (StandIn), by name.
	StandIns map[string]*StandIn

	eventsSeen int64 // the outbox id Events read up to
}

// Tenant is an organization and a read-write token of a client bound to
// it (the token's org claim is ID).
type Tenant struct {
	ID     uuid.UUID
	Client string // the bound client's id: the token's sub
	Token  string
}

// tenants makes OrgA and OrgB with ids of their own; the organizations
// exist only where the caller puts them.
func tenants(t *testing.T, issuer *testkit.Issuer, ids ...uuid.UUID) (a, b Tenant) {
	t.Helper()
	for len(ids) < 2 {
		ids = append(ids, uuid.Must(uuid.NewV7()))
	}
	tenant := func(client string, id uuid.UUID) Tenant {
		return Tenant{ID: id, Client: client, Token: issuer.Bound(t, client, id.String(), auth.ScopeRead, auth.ScopeWrite)}
	}
	return tenant("org-a-client", ids[0]), tenant("org-b-client", ids[1])
}

// Option changes how Start runs the service.
type Option func(*servicekit.Config)

// WithoutRedis runs the service without a find cache.
func WithoutRedis() Option { return func(c *servicekit.Config) { c.Redis = cache.Config{} } }

// Config returns the configuration Start uses for spec: a fresh schema on
// the test PostgreSQL, a fresh Redis key space, a fresh bucket when the
// catalog says the service needs object storage, and issuer's tokens.
func Config(t testing.TB, spec servicekit.Spec, issuer *testkit.Issuer) servicekit.Config {
	t.Helper()
	entry, ok := catalog.Lookup(spec.Name)
	if !ok {
		t.Fatalf("servicetest: %s is not in pkg/catalog", spec.Name)
	}
	// Production's defaults (timeouts, limits) first, as the flags give
	// them; then what the test environment decides.
	var cfg servicekit.Config
	defaults := flag.NewFlagSet(spec.Name, flag.ContinueOnError)
	cfg.RegisterFlags(defaults, entry)
	if err := defaults.Parse(nil); err != nil {
		t.Fatal(err)
	}
	cfg.Database.URL, cfg.Database.Schema = testkit.PostgresURL(t), testkit.NewDatabaseSchema(t)
	cfg.Database.StartupWait = time.Second
	cfg.OIDC = auth.Config{Issuer: issuer.URL, Audience: issuer.Audience, Leeway: testkit.Leeway}
	cfg.Timeout = 10 * time.Second
	if entry.NeedsStore(catalog.Redis) {
		// The find cache's namespace holds the schema's name, which is the
		// test's own, so tests sharing one Redis never see each other's finds.
		cfg.Redis = cache.Config{Connection: cache.Connection{URL: testkit.RedisURL(t)},
			TTL: time.Minute, Timeout: 200 * time.Millisecond, Backoff: time.Second}
	}
	if entry.NeedsStore(catalog.ObjectStore) {
		cfg.S3 = objectStoreConfig(t)
	}
	return cfg
}

// Start runs spec behind a real HTTP listener until the test ends.
func Start(t *testing.T, spec servicekit.Spec, opts ...Option) *Service {
	t.Helper()
	issuer := testkit.NewIssuer(t, Audience)
	cfg := Config(t, spec, issuer)
	for _, o := range opts {
		o(&cfg)
	}
	return StartWith(t, spec, cfg, issuer)
}

// StartParallel is Start for a test that runs beside the package's other
// parallel tests (t.Parallel): what Start gives a service, its schema, key
// space and bucket, is the test's own.
func StartParallel(t *testing.T, spec servicekit.Spec, opts ...Option) *Service {
	t.Helper()
	t.Parallel()
	return Start(t, spec, opts...)
}

// StartWith runs spec with cfg, whose OIDC settings trust issuer. Peers
// cfg does not configure are played by stand-ins.
func StartWith(t *testing.T, spec servicekit.Spec, cfg servicekit.Config, issuer *testkit.Issuer) *Service {
	t.Helper()
	built, standIns := build(t, spec, cfg, log.NewNopLogger())
	srv := httptest.NewServer(built.Handler)
	t.Cleanup(srv.Close)
	orgA, orgB := tenants(t, issuer)
	if parties := standIns["parties"]; parties != nil {
		parties.Add("organization", orgA.ID, nil)
		parties.Add("organization", orgB.ID, nil)
	}
	return &Service{
		t:      t,
		Client: testkit.Client{BaseURL: srv.URL, HTTP: DocumentClient(t, spec)},
		Issuer: issuer, RW: issuer.ReadWrite(t), RO: issuer.ReadOnly(t),
		Other: issuer.Token(t, "other-client", auth.ScopeRead, auth.ScopeWrite),
		Admin: issuer.Token(t, "admin-client", auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin),
		OrgA:  orgA, OrgB: orgB,
		Built: built, Config: cfg, StandIns: standIns,
	}
}

// build is spec built as StartWith runs it (servicekit.Build), until the
// test ends; peers cfg does not configure are played by stand-ins.
func build(t testing.TB, spec servicekit.Spec, cfg servicekit.Config, logger log.Logger) (servicekit.Built, map[string]*StandIn) {
	t.Helper()
	var standIns map[string]*StandIn
	if !peersConfigured(cfg.Peers) {
		cfg.Peers, standIns = StandIns(t, spec.Name, nil)
	}
	built, err := servicekit.Build(t.Context(), spec, cfg, logger)
	if err != nil {
		t.Fatalf("servicetest: build %s: %v", spec.Name, err)
	}
	t.Cleanup(built.Close)
	return built, standIns
}

// InProcess is spec built with its whole handler stack (Handler:
// servicekit.Build's access log, metrics, token verification, routing, the
// endpoint, the store) over the test datastores, with no listener, and a
// read-write token (client "rw-client") its issuer signed: what a benchmark of the service's own
// cost per call sends its requests to. Its access log is JSON to nowhere,
// as a service writes it.
func InProcess(t testing.TB, spec servicekit.Spec) (built servicekit.Built, token string) {
	t.Helper()
	issuer := testkit.NewIssuer(t, Audience)
	cfg := Config(t, spec, issuer)
	built, _ = build(t, spec, cfg, telemetry.NewLogger(io.Discard, spec.Name, cfg.Log))
	return built, issuer.ReadWrite(t)
}

// DocumentClient is an HTTP client that checks every response against
// spec's bundled OpenAPI document, so the document cannot drift from what
// the service does.
func DocumentClient(t *testing.T, spec servicekit.Spec) *http.Client {
	t.Helper()
	return &http.Client{Transport: testkit.NewValidator(t, Document(t, spec)).Transport(t, nil)}
}

// Document returns spec's bundled OpenAPI document as JSON.
func Document(t testing.TB, spec servicekit.Spec) []byte {
	t.Helper()
	doc, err := openapi.Bundle(spec.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := openapi.JSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Do sends a request (see testkit.Client.Do).
func (s *Service) Do(method, path, token string, body any, headers ...string) testkit.Response {
	s.t.Helper()
	return s.Client.Do(s.t, method, path, token, body, headers...)
}

// Expect fails the test unless r has status (see testkit.Expect).
func (s *Service) Expect(r testkit.Response, status int) testkit.Response {
	s.t.Helper()
	return testkit.Expect(s.t, r, status)
}

// Call is Expect(Do(...)).
func (s *Service) Call(status int, method, path, token string, body any, headers ...string) testkit.Response {
	s.t.Helper()
	return testkit.Expect(s.t, s.Client.Do(s.t, method, path, token, body, headers...), status)
}

// StartCluster runs several services in-process, each with the others as
// its peers (those its catalog entry calls), calling them with a machine
// identity of the test issuer that holds the internal scope, as deployed.
// Peers that are not among specs are played by stand-ins.
func StartCluster(t *testing.T, specs ...servicekit.Spec) map[string]*Service {
	t.Helper()
	issuer := testkit.NewIssuer(t, Audience)
	servers := map[string]*httptest.Server{}
	for _, spec := range specs {
		// Listening first gives every service its peers' addresses.
		servers[spec.Name] = httptest.NewUnstartedServer(nil)
		t.Cleanup(servers[spec.Name].Close)
	}
	identity := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: issuer.Sign(t, machineClaims(issuer))})
	cluster := map[string]*Service{}
	for _, spec := range specs {
		cfg := Config(t, spec, issuer)
		running := map[string]string{}
		for name, srv := range servers {
			running[name] = "http://" + srv.Listener.Addr().String()
		}
		var standIns map[string]*StandIn
		cfg.Peers, standIns = StandIns(t, spec.Name, running)
		cfg.Peers.TokenSource = identity
		built, err := servicekit.Build(t.Context(), spec, cfg, log.NewNopLogger())
		if err != nil {
			t.Fatalf("servicetest: build %s: %v", spec.Name, err)
		}
		t.Cleanup(built.Close)
		srv := servers[spec.Name]
		srv.Config.Handler = built.Handler
		srv.Start()
		cluster[spec.Name] = &Service{
			t:      t,
			Client: testkit.Client{BaseURL: srv.URL, HTTP: DocumentClient(t, spec)},
			Issuer: issuer, RW: issuer.ReadWrite(t), RO: issuer.ReadOnly(t),
			Other: issuer.Token(t, "other-client", auth.ScopeRead, auth.ScopeWrite),
			Admin: issuer.Token(t, "admin-client", auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin),
			Built: built, Config: cfg, StandIns: standIns,
		}
	}
	var ids []uuid.UUID
	if parties := cluster["parties"]; parties != nil {
		for _, name := range []string{"Org A", "Org B"} {
			org := parties.Call(http.StatusCreated, http.MethodPost, "/organizations", parties.Admin, map[string]any{
				"name": name, "registration_number": "ORG-" + name[len(name)-1:], "country": "de", "organization_type": "private"}).JSON()
			ids = append(ids, uuid.MustParse(org["id"].(string)))
		}
		parties.Events(t) // read: a test's Events start after the cast's
	}
	orgA, orgB := tenants(t, issuer, ids...)
	for _, s := range cluster {
		if parties := s.StandIns["parties"]; parties != nil {
			parties.Add("organization", orgA.ID, nil)
			parties.Add("organization", orgB.ID, nil)
		}
		s.OrgA, s.OrgB = orgA, orgB
	}
	return cluster
}

// machineClaims are a service's own token: the internal scope only, valid
// for the whole test.
func machineClaims(issuer *testkit.Issuer) jwt.MapClaims {
	c := issuer.Claims("svc-test", auth.ScopeInternal)
	c["exp"] = time.Now().Add(time.Hour).Unix()
	return c
}

// peersConfigured reports whether any peer has a URL (the flag defaults
// register every peer with none).
func peersConfigured(c peer.Config) bool {
	for _, u := range c.URLs {
		if u != nil && *u != "" {
			return true
		}
	}
	return false
}
