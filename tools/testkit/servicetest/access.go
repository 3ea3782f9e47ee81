package servicetest

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// A stand-in of the assets service also answers the two internal routes
// a service's copy of the assets' access reads (pkg/access): the log of
// changes of owners and grants, and the lookup of an asset's access. Its
// log holds only what the test changes (ChangeAccess); an asset the test
// never changed is unknown to it.

// ChangeAccess logs a as the newest change of its asset's owner and
// grants (its Version the log's next), as the assets service does on a
// grant, its removal or a transfer.
func (s *StandIn) ChangeAccess(a model.Access) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.access == nil {
		s.access = map[string]model.Access{}
	}
	a.Version = int64(len(s.accessLog) + 1)
	s.accessLog = append(s.accessLog, a)
	s.access[a.AssetID] = a
}

// mountAccess adds the access routes to the stand-in's router.
func (s *StandIn) mountAccess(r *httpx.Router) {
	r.Handle("GET", "/internal/asset_access", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		after, _ := strconv.ParseInt(req.URL.Query().Get("after"), 10, 64)
		limit, err := strconv.Atoi(req.URL.Query().Get("limit"))
		if err != nil || limit < 1 {
			limit = 1000
		}
		s.mu.Lock()
		page, next := []model.Access{}, after
		for _, a := range s.accessLog {
			if a.Version > after && len(page) < limit {
				page, next = append(page, a), a.Version
			}
		}
		s.mu.Unlock()
		writeJSON(w, map[string]any{"changes": page, "next": next})
	}))
	r.Handle("POST", "/internal/asset_access/lookup", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var in struct {
			AssetIDs []string `json:"asset_ids"`
		}
		if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		found := []model.Access{}
		for _, id := range in.AssetIDs {
			if a, ok := s.access[id]; ok {
				found = append(found, a)
			}
		}
		s.mu.Unlock()
		writeJSON(w, map[string]any{"access": found})
	}))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
