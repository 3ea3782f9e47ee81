package httpx_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

type externalID struct {
	SourceSystem string `json:"source_system"`
	ExternalID   string `json:"external_id"`
}

type sample struct {
	Name        string                   `json:"name"`
	Year        *int                     `json:"year"`
	Born        *model.Date              `json:"born"`
	OK          bool                     `json:"ok"`
	Data        map[string]any           `json:"data"`
	ExternalIDs []externalID             `json:"external_ids"`
	Status      model.PatchField[string] `json:"status"`
	// A merge-patch member holding objects: decoded as strictly as a
	// plain member.
	PatchedIDs model.PatchField[[]externalID] `json:"patched_ids"`
}

func (*sample) ReadOnlyFields() []string { return []string{"thumbnail"} }

// decodesAsItem is nil when body, as an item of a checked batch
// (httpx.DecodeJSONItem), decodes to want.
func decodesAsItem(body []byte, want sample) error {
	var item sample
	if err := httpx.DecodeJSONItem(body, &item); err != nil || !reflect.DeepEqual(item, want) {
		return fmt.Errorf("%q as an item: %+v, %v; as a body: %+v", body, item, err, want)
	}
	return nil
}

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		contentType string
		body        string
		kind        apperr.Kind // 0 (internal) means success expected
		fields      []string    // fields named in the error, in order
		check       func(t *testing.T, s sample)
	}{
		{name: "valid body", body: `{"name":"x","year":2020,"born":"2000-02-29","ok":true,"data":{"a":1},"external_ids":[{"source_system":"s","external_id":"1"}]}`,
			check: func(t *testing.T, s sample) {
				if s.Name != "x" || *s.Year != 2020 || s.Born.String() != "2000-02-29" || !s.OK || s.ExternalIDs[0].ExternalID != "1" {
					t.Errorf("decoded %+v", s)
				}
			}},
		{name: "charset parameter is accepted", contentType: "application/json; charset=utf-8", body: `{"name":"x"}`},
		{name: "wrong media type is 415", contentType: "text/plain", body: `{}`, kind: apperr.KindUnsupportedMedia},
		{name: "missing media type is 415", contentType: "-", body: `{}`, kind: apperr.KindUnsupportedMedia},
		{name: "latin-1 charset is 415", contentType: "application/json; charset=latin1", body: `{}`, kind: apperr.KindUnsupportedMedia},
		{name: "merge patch media type only for PATCH", contentType: httpx.MediaMergePatch, body: `{}`, kind: apperr.KindUnsupportedMedia},
		{name: "merge patch media type on PATCH", method: http.MethodPatch, contentType: httpx.MediaMergePatch, body: `{"status":null}`,
			check: func(t *testing.T, s sample) {
				if !s.Status.Set || !s.Status.Null {
					t.Errorf("status = %+v, want set and null", s.Status)
				}
			}},
		{name: "not JSON is 400", body: `{"name":`, kind: apperr.KindBadRequest},
		{name: "array body is 400", body: `[]`, kind: apperr.KindBadRequest},
		{name: "empty body is 400", body: ``, kind: apperr.KindBadRequest},
		{name: "invalid UTF-8 is 400", body: "{\"name\":\"\xff\"}", kind: apperr.KindBadRequest},
		{name: "unknown field is 422 naming it", body: `{"name":"x","colour":"red"}`, kind: apperr.KindInvalid, fields: []string{"colour"}},
		{name: "field names are case-sensitive", body: `{"Name":"x"}`, kind: apperr.KindInvalid, fields: []string{"Name"}},
		{name: "service-set field is 422 naming it", body: `{"id":"x","created_at":"y"}`, kind: apperr.KindInvalid, fields: []string{"created_at", "id"}},
		{name: "type's own read-only field", body: `{"thumbnail":{}}`, kind: apperr.KindInvalid, fields: []string{"thumbnail"}},
		{name: "wrong JSON type", body: `{"name":1,"year":"2020","ok":"yes"}`, kind: apperr.KindInvalid, fields: []string{"name", "ok", "year"}},
		{name: "fraction for integer", body: `{"year":2020.5}`, kind: apperr.KindInvalid, fields: []string{"year"}},
		{name: "impossible date", body: `{"born":"2023-02-29"}`, kind: apperr.KindInvalid, fields: []string{"born"}},
		{name: "object expected", body: `{"data":[1]}`, kind: apperr.KindInvalid, fields: []string{"data"}},
		{name: "nested field paths", body: `{"external_ids":[{"source_system":"s"},{"source_system":1,"extra":true}]}`,
			kind: apperr.KindInvalid, fields: []string{"external_ids[1].extra", "external_ids[1].source_system"}},
		{name: "patch field type error", method: http.MethodPatch, body: `{"status":5}`, kind: apperr.KindInvalid, fields: []string{"status"}},
		{name: "patch member of objects is strict", method: http.MethodPatch,
			body: `{"patched_ids":[{"source_system":"s","external_id":"1"},{"Source_System":"s","external_id":2}]}`,
			kind: apperr.KindInvalid, fields: []string{"patched_ids[1].Source_System", "patched_ids[1].external_id"}},
		{name: "patch member of objects", method: http.MethodPatch, body: `{"patched_ids":[{"source_system":"s","external_id":"1"}]}`,
			check: func(t *testing.T, s sample) {
				if !s.PatchedIDs.Set || s.PatchedIDs.Null || len(s.PatchedIDs.Value) != 1 || s.PatchedIDs.Value[0].ExternalID != "1" {
					t.Errorf("patched_ids = %+v", s.PatchedIDs)
				}
			}},
		{name: "patch member null", method: http.MethodPatch, body: `{"patched_ids":null}`,
			check: func(t *testing.T, s sample) {
				if !s.PatchedIDs.Set || !s.PatchedIDs.Null {
					t.Errorf("patched_ids = %+v, want set and null", s.PatchedIDs)
				}
			}},
		{name: "null optional stays nil", body: `{"year":null,"born":null}`,
			check: func(t *testing.T, s sample) {
				if s.Year != nil || s.Born != nil {
					t.Errorf("got %+v", s)
				}
			}},
		{name: "duplicate member is 400", body: `{"name":"a","name":"b"}`, kind: apperr.KindBadRequest, fields: []string{"name"}},
		{name: "duplicate member spelled with an escape", body: `{"name":"a","\u006eame":"b"}`, kind: apperr.KindBadRequest, fields: []string{"name"}},
		{name: "duplicate member in a nested object", body: `{"external_ids":[{"source_system":"s"},{"external_id":"1","external_id":"2"}]}`,
			kind: apperr.KindBadRequest, fields: []string{"external_ids[1].external_id"}},
		{name: "duplicate member in free-form data", body: `{"data":{"a":{"b":1,"b":2}}}`, kind: apperr.KindBadRequest, fields: []string{"data.a.b"}},
		{name: "duplicate member among many", body: `{"data":{` + manyMembers(100) + `,"k7":0}}`, kind: apperr.KindBadRequest, fields: []string{"data.k7"}},
		{name: "many distinct members are fine", body: `{"data":{` + manyMembers(100) + `}}`},
		{name: "same name in sibling objects is fine", body: `{"external_ids":[{"source_system":"a"},{"source_system":"b"}],"data":{"source_system":1}}`},
		{name: "U+0000 in a string is 422 naming it", body: `{"name":"a\u0000b"}`, kind: apperr.KindInvalid, fields: []string{"name"}},
		{name: "U+0000 deep in free-form data", body: `{"data":{"list":[1,{"x":"\u0000"}]}}`, kind: apperr.KindInvalid, fields: []string{"data.list[1].x"}},
		{name: "U+0000 in a member name", body: `{"data":{"a\u0000":1}}`, kind: apperr.KindInvalid, fields: []string{"data.a\x00"}},
		{name: "lone high surrogate is 422", body: `{"name":"\ud800"}`, kind: apperr.KindInvalid, fields: []string{"name"}},
		{name: "high surrogate before another escape", body: `{"name":"\ud800\u0041"}`, kind: apperr.KindInvalid, fields: []string{"name"}},
		{name: "lone low surrogate is 422", body: `{"external_ids":[{"external_id":"x\uDC00"}]}`, kind: apperr.KindInvalid, fields: []string{"external_ids[0].external_id"}},
		{name: "surrogate pair is a character", body: `{"name":"\ud83d\ude00 \u00e9 \u0001"}`,
			check: func(t *testing.T, s sample) {
				if s.Name != "\U0001F600 \u00e9 \u0001" {
					t.Errorf("name = %q", s.Name)
				}
			}},
		{name: "escaped quote and backslash before a member", body: `{"name":"a\"\\","ok":true}`,
			check: func(t *testing.T, s sample) {
				if s.Name != `a"\` || !s.OK {
					t.Errorf("decoded %+v", s)
				}
			}},
		{name: "a number stored as written", body: `{"year":2020,"data":{"a":1e6,"b":-12.50,"c":1e19,"d":1.5e-3,"e":123456789012345678901234567890}}`},
		{name: "the 13 MB action's numbers are 422s naming each", body: `{"data":{"readings":[1,1e131071,2,1e131071]}}`,
			kind: apperr.KindInvalid, fields: []string{"data.readings[1]", "data.readings[3]"}},
		{name: "past numeric's integer digits is 422", body: `{"data":{"x":1e131072}}`, kind: apperr.KindInvalid, fields: []string{"data.x"}},
		{name: "past numeric's scale is 422", body: `{"data":{"x":1e-16384}}`, kind: apperr.KindInvalid, fields: []string{"data.x"}},
		{name: "past float64's range is 422", body: `{"data":{"x":[{"y":1e400}]}}`, kind: apperr.KindInvalid, fields: []string{"data.x[0].y"}},
		{name: "a number past the growth is 422", body: `{"data":{"x":1e20}}`, kind: apperr.KindInvalid, fields: []string{"data.x"}},
		{name: "a typed number out of range is 422", body: `{"year":1e400}`, kind: apperr.KindInvalid, fields: []string{"year"}},
		{name: "year 0000 is 422", body: `{"born":"0000-01-01"}`, kind: apperr.KindInvalid, fields: []string{"born"}},
		{name: "year 9999 is a date", body: `{"born":"9999-12-31"}`},
		{name: "a problem per bad number, the first 50 named", body: `{"data":{"x":[` + strings.Repeat("1e400,", 60) + `1]}}`,
			kind: apperr.KindInvalid, fields: namedThenCounted("data.x[%d]", 60)},
		{name: "over 1 MiB is 413", body: `{"name":"` + strings.Repeat("a", httpx.MaxJSONBody) + `"}`, kind: apperr.KindTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			r := httptest.NewRequest(method, "/x", strings.NewReader(tt.body))
			switch tt.contentType {
			case "":
				r.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				r.Header.Set("Content-Type", tt.contentType)
			}
			var s sample
			err := httpx.DecodeJSON(r, &s)
			if tt.kind == apperr.KindInternal {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tt.check != nil {
					tt.check(t, s)
				}
				return
			}
			if got := apperr.KindOf(err); got != tt.kind {
				t.Fatalf("kind = %v (%v), want %v", got, err, tt.kind)
			}
			var e *apperr.Error
			errors.As(err, &e)
			var fields []string
			for _, f := range e.Fields {
				fields = append(fields, f.Field)
			}
			if !reflect.DeepEqual(fields, tt.fields) {
				t.Errorf("fields = %v, want %v", fields, tt.fields)
			}
		})
	}
}

func TestDecodeJSONRejectsDeclaredContentLengthOverLimit(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = httpx.MaxJSONBody + 1
	var s sample
	if err := httpx.DecodeJSON(r, &s); !apperr.Is(err, apperr.KindTooLarge) {
		t.Fatalf("err = %v, want too large", err)
	}
}

// namedThenCounted is the fields of n problems at path (an index format):
// the first httpx.MaxFieldErrors named, the rest counted without a name.
func namedThenCounted(path string, n int) []string {
	fields := make([]string, n)
	for i := range min(n, httpx.MaxFieldErrors) {
		fields[i] = fmt.Sprintf(path, i)
	}
	return fields
}

// manyMembers is "k0":0,"k1":0,... for objects past the short-list size.
func manyMembers(n int) string {
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf(`"k%d":0`, i)
	}
	return strings.Join(members, ",")
}

// PathUUIDs answers the parameters in the order named, and the 400 of the
// first malformed one.
func TestPathUUIDs(t *testing.T) {
	a, b := "0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f", "0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e70"
	for _, c := range []struct {
		name, first, second, field string
	}{
		{"both", a, b, ""},
		{"both malformed: the one named first", "x", "y", "second"},
		{"the one named last malformed", "x", b, "first"},
		{"upper case", a, strings.ToUpper(b), "second"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.SetPathValue("first", c.first)
			r.SetPathValue("second", c.second)
			ids, err := httpx.PathUUIDs(r, "second", "first")
			if c.field == "" {
				if err != nil || ids[0].String() != c.second || ids[1].String() != c.first {
					t.Fatalf("ids %v, err %v", ids, err)
				}
				return
			}
			var e *apperr.Error
			if !errors.As(err, &e) || e.Kind != apperr.KindBadRequest || len(e.Fields) != 1 || e.Fields[0].Field != c.field {
				t.Fatalf("err %#v, want a 400 naming %s", err, c.field)
			}
		})
	}
}
