package servicetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/testkit"
)

// Bound is a token of client sub bound to organization org (the claim
// org), with scopes: a tenant's client.
func (s *Service) Bound(sub, org string, scopes ...string) string {
	s.t.Helper()
	claims := s.Issuer.Claims(sub, scopes...)
	claims["org"] = org
	return s.Issuer.Sign(s.t, claims)
}

// AssetAccess plays the assets service's two internal routes of who sees
// which asset (pkg/access reads them): its log of changes of owners and
// grants, and the lookup of an asset's access.
type AssetAccess struct {
	mu      sync.Mutex
	changes []model.Access // version i+1 at index i
	current map[string]model.Access
}

// Set makes a the asset's access now, as a change of the log.
func (l *AssetAccess) Set(a model.Access) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a.Version = int64(len(l.changes) + 1)
	l.changes = append(l.changes, a)
	l.current[a.AssetID] = a
}

// Created makes a an asset's access as its creation left it (version 0):
// the lookup answers it, the log of changes does not hold it.
func (l *AssetAccess) Created(a model.Access) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a.Version = 0
	l.current[a.AssetID] = a
}

// Routes is the mux of the two routes.
func (l *AssetAccess) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /internal/asset_access", func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
		if err != nil || limit < 1 {
			limit = 1000
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		page, next := []model.Access{}, after
		for _, c := range l.changes {
			if c.Version > after && len(page) < limit {
				page, next = append(page, c), c.Version
			}
		}
		writeJSON(w, map[string]any{"changes": page, "next": next})
	})
	mux.HandleFunc("POST /internal/asset_access/lookup", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			AssetIDs []string `json:"asset_ids"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		out := []model.Access{}
		for _, id := range in.AssetIDs {
			if a, ok := l.current[id]; ok {
				out = append(out, a)
			}
		}
		writeJSON(w, map[string]any{"access": out})
	})
	return mux
}

// NewAssetAccess returns an empty log.
func NewAssetAccess() *AssetAccess { return &AssetAccess{current: map[string]model.Access{}} }

// StartServing is Start with some peers' stand-ins answering more routes:
// a request to peer name whose path routes[name] has a pattern for is its
// to answer, any other the stand-in's (the reference protocol).
func StartServing(t *testing.T, spec servicekit.Spec, routes map[string]*http.ServeMux) *Service {
	t.Helper()
	issuer := testkit.NewIssuer(t, Audience)
	cfg := Config(t, spec, issuer)
	peers, standIns := StandIns(t, spec.Name, nil)
	for name, mux := range routes {
		target, err := url.Parse(*peers.URLs[name])
		if err != nil {
			t.Fatal(err)
		}
		standIn := httputil.NewSingleHostReverseProxy(target)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, pattern := mux.Handler(r); pattern != "" {
				mux.ServeHTTP(w, r)
				return
			}
			standIn.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		u := srv.URL
		peers.URLs[name] = &u
	}
	cfg.Peers = peers
	s := StartWith(t, spec, cfg, issuer)
	s.StandIns = standIns
	return s
}
