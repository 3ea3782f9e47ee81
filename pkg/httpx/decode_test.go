package httpx_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/calendar"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/patch"
)

type externalID struct {
	SourceSystem string `json:"source_system"`
	ExternalID   string `json:"external_id"`
}

type sample struct {
	Name        string              `json:"name"`
	Year        *int                `json:"year"`
	Born        *calendar.Date      `json:"born"`
	OK          bool                `json:"ok"`
	Data        map[string]any      `json:"data"`
	ExternalIDs []externalID        `json:"external_ids"`
	Status      patch.Field[string] `json:"status"`
	// A merge-patch member holding objects: decoded as strictly as a
	// plain member.
	PatchedIDs patch.Field[[]externalID] `json:"patched_ids"`
}

func (*sample) ReadOnlyFields() []string { return []string{"thumbnail"} }

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
