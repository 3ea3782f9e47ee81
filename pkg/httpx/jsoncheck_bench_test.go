package httpx

import (
	"encoding/json"
	"testing"
)

// BenchmarkCheckJSON is the pass DecodeJSON adds (duplicate names, U+0000,
// lone surrogates) beside the json.Valid pass it already made.
func BenchmarkCheckJSON(b *testing.B) {
	body := []byte(`{"name":"x","year":2020,"born":"2000-02-29","ok":true,"data":{"a":1},"external_ids":[{"source_system":"s","external_id":"1"}]}`)
	b.Run("checkJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkJSON(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !json.Valid(body) {
				b.Fatal("invalid")
			}
		}
	})
}
