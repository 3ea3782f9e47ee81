package clientgen

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/openapi"
)

// The registry's document, as the gateway merges it, makes a client with
// no pointer for a member every answer carries.
func TestGeneratedClientHasNoPointerForARequiredField(t *testing.T) {
	doc, err := Bundled()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Check(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("generated client: %s", p)
	}
}

// Every member of a success answer's schema is required: one that may be
// absent must be named here, with the reason, so that it is a decision.
var mayBeAbsent = map[string]string{
	// A batch's result per item carries the new row's id or the problem
	// that refused the item, never both.
	"BatchResult.id":      "only for an item that succeeded",
	"BatchResult.problem": "only for an item that was refused",
	"BatchResult.etag":    "only for an item that updated (a batch of updates)",
	// A problem (inside a batch's 200) has RFC 9457's members always and
	// each extension only where its kind has one.
	"Problem.detail":          "RFC 9457: optional",
	"Problem.errors":          "only for field problems",
	"Problem.errors_omitted":  "only when field problems were cut short",
	"Problem.existing_id":     "only for a 409 on a natural key",
	"Problem.candidates":      "only for an ambiguous find",
	"Problem.owner":           "only for a 403 not-owner",
	"Problem.referenced_by":   "only for a 409 still-referenced",
	"Problem.limit":           "only for a 409 subscription-limit",
	"Problem.redaction_entry": "only for a 410 of a redacted leaf",
	// The events service's answers.
	"Event.changes":             "updates only: a create or a delete changes no field",
	"Event.commitments":         "only on an event that holds a person's personal fields",
	"Event.redacted":            "only on an event an erasure request redacted",
	"PassportRecord.deleted_at": "only for a resource that was deleted",
	"PassportRecord.deleted_by": "only for a resource that was deleted",
	"PassportRecord.sha256":     "only for a document",
	"PassportLink.url":          "only in the answer that made the link: the registry keeps a hash of its token",
}

func TestResponseSchemasRequireEveryMember(t *testing.T) {
	doc, err := Bundled()
	if err != nil {
		t.Fatal(err)
	}
	schemas := ResponseSchemas(doc)
	if len(schemas) < 10 {
		t.Fatalf("found %d response schemas; the walk of the document is broken", len(schemas))
	}
	for name, s := range schemas {
		for _, p := range s.Properties {
			if !slices.Contains(s.Required, p) && mayBeAbsent[name+"."+p] == "" {
				t.Errorf("%s.%s: a member of a success answer that is not required", name, p)
			}
		}
	}
}

// The check itself: a document whose required members are read-only (or
// left optional) is caught; the same document without readOnly passes.
func TestCheckCatchesPointers(t *testing.T) {
	const base = `{
	  "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
	  "paths": {"/things/{id}": {"get": {"operationId": "getThing",
	    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
	    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}}},
	  "components": {"schemas": {"Thing": {"type": "object", "required": REQUIRED, "properties": {
	    "id": {"type": "string", "format": "uuid" READONLY},
	    "note": {"type": ["string", "null"]},
	    "count": {"type": "integer"}}}}}}`
	for _, tc := range []struct {
		name, required, readOnly string
		want                     []string
	}{
		{"clean", `["id", "note", "count"]`, ``, nil},
		{"read-only required", `["id", "note", "count"]`, `, "readOnly": true`, []string{"Thing.id: required, yet generated as optional"}},
		{"not required", `["id", "note"]`, ``, nil}, // not required: the other test's business
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := strings.NewReplacer("REQUIRED", tc.required, "READONLY", tc.readOnly).Replace(base)
			var doc openapi.Document
			if err := json.Unmarshal([]byte(raw), &doc); err != nil {
				t.Fatal(err)
			}
			problems, err := Check(doc)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems %q, want %q", got, tc.want)
			}
		})
	}
}
