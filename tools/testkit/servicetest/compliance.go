package servicetest

import (
	"encoding/json"
	"net/http"

	"github.com/assetregistry/registry/pkg/httpx"
)

// The actions service's internal compliance route, as its stand-in plays
// it for the events service's passports: the rows a test set for an asset
// (none by default), whatever the date asked.

func (s *StandIn) mountCompliance(r *httpx.Router) {
	r.Handle("GET", "/internal/compliance", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.mu.Lock()
		rows := s.compliance[req.URL.Query().Get("asset_id")]
		s.complianceAsked = append(s.complianceAsked, req.URL.RawQuery)
		s.mu.Unlock()
		if rows == nil {
			rows = []json.RawMessage{}
		}
		writeJSON(w, rows)
	}))
}

// SetCompliance makes the stand-in of the actions service answer rows for
// asset.
func (s *StandIn) SetCompliance(asset string, rows ...json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.compliance == nil {
		s.compliance = map[string][]json.RawMessage{}
	}
	s.compliance[asset] = rows
}

// ComplianceAsked are the queries the stand-in's compliance route was
// asked, in order.
func (s *StandIn) ComplianceAsked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.complianceAsked...)
}
