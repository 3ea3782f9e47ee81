package servicetest

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/refs"
)

// StandIn plays a peer that a test does not run, as far as the reference
// protocol goes: the service under test checks its targets there and asks
// it, before deleting something, what points at it. A service cannot
// import another (make lint), and a peer left unconfigured makes every
// such call a 503, so a service's own tests talk to stand-ins over real
// HTTP. A stand-in owns only the targets the test adds and reports only
// the referrers the test adds; tests of several real services together use
// StartCluster.
type StandIn struct {
	Name string // the peer it plays

	mu        sync.Mutex
	asked     int // existence questions answered
	targets   map[string]map[uuid.UUID]refs.Attrs
	referrers map[string]map[uuid.UUID][]refs.Ref
	// the assets service's access log and current access (access.go)
	access *AssetAccess
	// the actions service's compliance rows by asset, and the queries
	// asked (compliance.go)
	compliance      map[string][]json.RawMessage
	complianceAsked []string
}

// Add makes kind/id exist at the stand-in, with the attributes its owner
// would tell (a document's content_type, say).
func (s *StandIn) Add(kind string, id uuid.UUID, attrs refs.Attrs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.targets[kind] == nil {
		s.targets[kind] = map[uuid.UUID]refs.Attrs{}
	}
	if attrs == nil {
		attrs = refs.Attrs{}
	}
	s.targets[kind][id] = attrs
}

// Remove makes kind/id not exist any more (deleted at its owner).
func (s *StandIn) Remove(kind string, id uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.targets[kind], id)
}

// Refer records that ref, in the stand-in's service, points at kind/id.
func (s *StandIn) Refer(kind string, id uuid.UUID, ref refs.Ref) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.referrers[kind] == nil {
		s.referrers[kind] = map[uuid.UUID][]refs.Ref{}
	}
	s.referrers[kind][id] = append(s.referrers[kind][id], ref)
}

// Asked is how many existence questions (Exists, ExistsAll) the stand-in
// has answered.
func (s *StandIn) Asked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// Exists implements refs.Service.
func (s *StandIn) Exists(_ context.Context, kind string, ids []uuid.UUID) (map[uuid.UUID]refs.Attrs, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	return s.exists(kind, ids), nil
}

func (s *StandIn) exists(kind string, ids []uuid.UUID) map[uuid.UUID]refs.Attrs {
	found := map[uuid.UUID]refs.Attrs{}
	for _, id := range ids {
		if attrs, ok := s.targets[kind][id]; ok {
			found[id] = attrs
		}
	}
	return found
}

// ExistsAll implements refs.Service.
func (s *StandIn) ExistsAll(_ context.Context, asks []refs.Ask) (map[refs.Key]refs.Attrs, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	found := map[refs.Key]refs.Attrs{}
	for _, a := range asks {
		got := s.exists(a.Kind, a.IDs)
		for id, attrs := range got {
			found[refs.Key{Kind: a.Kind, ID: id}] = attrs
		}
	}
	return found, nil
}

// List implements refs.Service: the targets of kind added, in id order.
func (s *StandIn) List(_ context.Context, kind string, after uuid.UUID, limit int) ([]refs.Found, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := []refs.Found{}
	for id, attrs := range s.targets[kind] {
		if bytes.Compare(id[:], after[:]) > 0 {
			found = append(found, refs.Found{ID: id, Attrs: attrs})
		}
	}
	slices.SortFunc(found, func(a, b refs.Found) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return found[:min(limit, len(found))], nil
}

// Referrers implements refs.Service.
func (s *StandIn) Referrers(_ context.Context, kind string, id uuid.UUID, _ bool) ([]refs.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]refs.Ref{}, s.referrers[kind][id]...), nil
}

// StandIns starts a stand-in for every peer of the named service, except
// those in running (name → base URL, the real ones), and returns the peer
// configuration that calls them all, with a fixed token the stand-ins do
// not check.
func StandIns(t testing.TB, service string, running map[string]string) (peer.Config, map[string]*StandIn) {
	t.Helper()
	entry, ok := catalog.Lookup(service)
	if !ok {
		t.Fatalf("servicetest: %s is not in pkg/catalog", service)
	}
	cfg := peer.Config{URLs: map[string]*string{}, Timeout: 5 * time.Second,
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "stand-in"})}
	standIns := map[string]*StandIn{}
	for _, name := range entry.Peers() {
		u, ok := running[name]
		if !ok {
			s := &StandIn{Name: name, targets: map[string]map[uuid.UUID]refs.Attrs{}, referrers: map[string]map[uuid.UUID][]refs.Ref{}}
			r := httpx.NewRouter()
			refs.MakeServerEndpoints(s).Mount(r)
			if name == "assets" {
				s.mountAccess(r)
			}
			if name == "actions" {
				s.mountCompliance(r)
			}
			srv := httptest.NewServer(r)
			t.Cleanup(srv.Close)
			u, standIns[name] = srv.URL, s
		}
		cfg.URLs[name] = &u
	}
	return cfg, standIns
}

// StandInClients is StandIns for fixtures below the HTTP stack: the
// clients of the stand-ins of every peer of service.
func StandInClients(t testing.TB, service string) (*peer.Clients, map[string]*StandIn) {
	t.Helper()
	cfg, standIns := StandIns(t, service, nil)
	clients, err := peer.NewClients(cfg, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return clients, standIns
}

// StandIn returns the stand-in of the named peer; the test fails when that
// peer is not played by one.
func (s *Service) StandIn(name string) *StandIn {
	s.t.Helper()
	if st, ok := s.StandIns[name]; ok {
		return st
	}
	s.t.Fatalf("servicetest: no stand-in for %s (stand-ins: %v)", name, slices.Sorted(maps.Keys(s.StandIns)))
	return nil
}
