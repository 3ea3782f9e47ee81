package httpx_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// FuzzDecodeJSONBytes holds the body decoder to its rules for any body:
// it never panics; it refuses with a 400 or a 422 (never a 500); and a
// body it accepts is valid UTF-8 JSON whose every number the registry can
// store as written (model.NumberStored) and whose every date is a real
// one of the years 0001 to 9999, and that an item of a checked batch
// (DecodeJSONItem) decodes to the same. Its seeds are the bodies the limits tests send and
// the decoder's own table.
func FuzzDecodeJSONBytes(f *testing.F) {
	for _, seed := range []string{
		`{"name":"x","year":2020,"born":"2000-02-29","ok":true,"data":{"a":1},"external_ids":[{"source_system":"s","external_id":"1"}]}`,
		`{"data":{"readings":[1e131071,1e131071]}}`,
		`{"data":{"x":1e131072}}`,
		`{"data":{"x":1e-16384}}`,
		`{"data":{"x":1e400,"y":-0,"z":0e-16383}}`,
		`{"data":{"x":1e19,"y":1e20,"z":6.02214076e23}}`,
		`{"born":"0000-01-01"}`,
		`{"born":"9999-12-31"}`,
		`{"born":"10000-01-01"}`,
		`{"name":"a","name":"b"}`,
		`{"name":"\ud800"}`,
		`{"name":"a\u0000b"}`,
		`{"data":{"<&>":"<script>"}}`,
		`{"status":null,"patched_ids":[{"source_system":"s","external_id":2}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var s sample
		err := httpx.DecodeJSONBytes(body, &s)
		if err != nil {
			if k := apperr.KindOf(err); k != apperr.KindBadRequest && k != apperr.KindInvalid {
				t.Fatalf("%q: %v (kind %v), want a 400 or a 422", body, err, k)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("%q accepted but is not JSON", body)
		}
		// A batch's item, checked with its body, decodes to the same.
		if err := decodesAsItem(body, s); err != nil {
			t.Fatal(err)
		}
		if s.Born != nil && (s.Born.Year < 1 || s.Born.Year > 9999) {
			t.Fatalf("%q accepted a date of year %d", body, s.Born.Year)
		}
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		for {
			tok, err := d.Token()
			if err != nil {
				break
			}
			if n, ok := tok.(json.Number); ok {
				if _, problem := model.NumberStored([]byte(n)); problem != "" {
					t.Fatalf("%q accepted the number %s: %s", body, n, problem)
				}
			}
			if str, ok := tok.(string); ok && strings.ContainsRune(str, 0) {
				t.Fatalf("%q accepted a string holding U+0000", body)
			}
		}
	})
}
