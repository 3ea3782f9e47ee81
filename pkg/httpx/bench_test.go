package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/httpx"
)

// BenchmarkDecodeJSON measures the strict decoder on a typical create body;
// compare with BenchmarkDecodeJSONStdlib for the price of strictness.
func BenchmarkDecodeJSON(b *testing.B) {
	body := `{"name":"x","year":2020,"born":"2000-02-29","ok":true,"data":{"a":1},"external_ids":[{"source_system":"s","external_id":"1"}]}`
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var s sample
		if err := httpx.DecodeJSON(r, &s); err != nil {
			b.Fatal(err)
		}
	}
}
