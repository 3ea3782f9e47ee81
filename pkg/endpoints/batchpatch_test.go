package endpoints

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
)

// An item of a batch of updates is {"id", "if_match", "patch"}: id and
// patch are required, if_match has the If-Match header's form, the item
// has no other member, and the patch is decoded strictly as its single
// PATCH's body, its fields named as that PATCH names them.
func TestDecodePatchItems(t *testing.T) {
	const id = `"0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d"`
	type patch struct {
		Status *string `json:"status"`
	}
	for _, c := range []struct {
		name, item string
		kind       apperr.Kind // 0: decoded
		field      string
		ifMatch    string
	}{
		{name: "id and patch", item: `{"id":` + id + `,"patch":{"status":"x"}}`},
		{name: "if_match", item: `{"id":` + id + `,"if_match":" \"a\" ","patch":{}}`, ifMatch: `"a"`},
		{name: "if_match star", item: `{"id":` + id + `,"if_match":"*","patch":{}}`, ifMatch: "*"},
		{name: "if_match list, weak", item: `{"id":` + id + `,"if_match":"\"a\", W/\"b\"","patch":{}}`, ifMatch: `"a", W/"b"`},
		{name: "no id", item: `{"patch":{}}`, kind: apperr.KindInvalid, field: "id"},
		{name: "null id", item: `{"id":null,"patch":{}}`, kind: apperr.KindInvalid, field: "id"},
		{name: "upper-case id", item: `{"id":"0190F5D2-7C1E-7A3B-9C4D-5E6F7A8B9C0D","patch":{}}`, kind: apperr.KindInvalid, field: "id"},
		{name: "id a number", item: `{"id":7,"patch":{}}`, kind: apperr.KindInvalid, field: "id"},
		{name: "no patch", item: `{"id":` + id + `}`, kind: apperr.KindInvalid, field: "patch"},
		{name: "null patch", item: `{"id":` + id + `,"patch":null}`, kind: apperr.KindInvalid, field: "patch"},
		{name: "patch an array", item: `{"id":` + id + `,"patch":[]}`, kind: apperr.KindInvalid, field: "patch"},
		{name: "patch a string", item: `{"id":` + id + `,"patch":"x"}`, kind: apperr.KindInvalid, field: "patch"},
		{name: "if_match empty", item: `{"id":` + id + `,"if_match":"","patch":{}}`, kind: apperr.KindInvalid, field: "if_match"},
		{name: "if_match unquoted", item: `{"id":` + id + `,"if_match":"abc","patch":{}}`, kind: apperr.KindInvalid, field: "if_match"},
		{name: "if_match one unquoted", item: `{"id":` + id + `,"if_match":"\"a\", b","patch":{}}`, kind: apperr.KindInvalid, field: "if_match"},
		{name: "if_match a number", item: `{"id":` + id + `,"if_match":7,"patch":{}}`, kind: apperr.KindInvalid, field: "if_match"},
		{name: "unknown member", item: `{"id":` + id + `,"patch":{},"etag":"x"}`, kind: apperr.KindInvalid, field: "etag"},
		{name: "unknown patch field", item: `{"id":` + id + `,"patch":{"colour":"red"}}`, kind: apperr.KindInvalid, field: "colour"},
		{name: "patch field of a wrong type", item: `{"id":` + id + `,"patch":{"status":1}}`, kind: apperr.KindInvalid, field: "status"},
		{name: "not an object", item: `"x"`, kind: apperr.KindBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, errs := DecodePatchItems[patch]([]json.RawMessage{json.RawMessage(c.item)})
			if c.kind == 0 {
				if errs[0] != nil || in[0].ID.String() != id[1:len(id)-1] || in[0].IfMatch != c.ifMatch {
					t.Errorf("decoded %+v, %v", in[0], errs[0])
				}
				return
			}
			var e *apperr.Error
			if !errors.As(errs[0], &e) || e.Kind != c.kind {
				t.Fatalf("error %v, want kind %v", errs[0], c.kind)
			}
			if c.field != "" && (len(e.Fields) == 0 || e.Fields[0].Field != c.field) {
				t.Errorf("error %v names %v, want %s", e, e.Fields, c.field)
			}
		})
	}
}
