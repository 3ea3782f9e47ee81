package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/httpx"
)

// What a process cannot read completely is refused before any handler
// (in the gateway: before any proxying) sees it.
func TestCheckRequest(t *testing.T) {
	reached := false
	h := httpx.Chain(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }),
		httpx.WithRequestInfo(false), httpx.CheckRequest(httpx.ReadLimits{MaxHeaderBytes: 4096}))
	tests := []struct {
		name   string
		target string
		header string // a header field value of this size, if any
		status int    // 0: reaches the handler
	}{
		{"a plain request", "/organizations?registration_number=50%25&limit=10", "", 0},
		{"a bad percent escape", "/organizations?registration_number=50%&limit=1000", "", 400},
		{"a semicolon", "/organizations?limit=1;drop", "", 400},
		{"too many parameters", "/organizations?" + strings.Repeat("a=1&", httpx.MaxQueryParams+1), "", 400},
		{"U+0000 in a query value", "/people/0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f/organizations/x?relation_type=a%00", "", 400},
		{"U+0000 in the path", "/organizations/%00", "", 400},
		{"a path that is not UTF-8", "/organizations/%ff", "", 400},
		{"a header within the limit", "/organizations", strings.Repeat("h", 3000), 0},
		{"a header over the limit", "/organizations", strings.Repeat("h", 5000), 431},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reached = false
			r := httptest.NewRequest("GET", tt.target, nil)
			if tt.header != "" {
				r.Header.Set("X-Large", tt.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if tt.status == 0 {
				if !reached {
					t.Fatalf("refused: %d %s", w.Code, w.Body)
				}
				return
			}
			if reached || w.Code != tt.status {
				t.Fatalf("status = %d (handler reached: %v), want %d: %s", w.Code, reached, tt.status, w.Body)
			}
		})
	}
}
