package openapi

import (
	"strings"
	"testing"
)

const service = `
openapi: 3.1.0
info: {title: t, version: "1", description: Own words.}
paths:
  /things:
    get:
      responses:
        '200': {description: ok}
        '400': {$ref: 'common.yaml#/components/responses/BadRequest'}
    post:
      security: [{bearerAuth: [registry:read]}]
      responses:
        '201': {description: created}
        '503': {description: its own}
  /things/find:
    post:
      responses: {'200': {description: ok}}
components:
  schemas:
    Thing: {type: object}
`

func TestBundle(t *testing.T) {
	doc, err := Bundle([]byte(service))
	if err != nil {
		t.Fatal(err)
	}
	get := asMap(asMap(asMap(doc["paths"])["/things"])["get"])
	responses := asMap(get["responses"])
	if ref := asMap(responses["400"])["$ref"]; ref != "#/components/responses/BadRequest" {
		t.Errorf("common.yaml reference not made local: %v", ref)
	}
	for _, status := range []string{"401", "403", "429", "500", "503"} {
		if responses[status] == nil {
			t.Errorf("GET /things lacks the standard %s answer", status)
		}
	}
	if scope := scopeOf(get); scope != "registry:read" {
		t.Errorf("GET security = %v", scope)
	}
	post := asMap(asMap(asMap(doc["paths"])["/things"])["post"])
	if desc := asMap(asMap(post["responses"])["503"])["description"]; desc != "its own" {
		t.Errorf("an operation's own answer was replaced: %v", desc)
	}
	if scope := scopeOf(post); scope != "registry:read" {
		t.Errorf("an operation's own security was replaced: %v", post["security"])
	}
	if scope := scopeOf(asMap(asMap(asMap(doc["paths"])["/things/find"])["post"])); scope != "registry:read" {
		t.Errorf("a find reads: %v", scope)
	}
	schemas := asMap(asMap(doc["components"])["schemas"])
	if schemas["Thing"] == nil || schemas["Problem"] == nil || schemas["FieldError"] == nil {
		t.Errorf("schemas = %v", keys(schemas))
	}
	desc := asMap(doc["info"])["description"].(string)
	if !strings.HasPrefix(desc, "Own words.") || !strings.Contains(desc, "## Authentication") {
		t.Errorf("description = %q", desc)
	}
	if doc["servers"] == nil || doc["security"] == nil {
		t.Error("servers and security are not set")
	}
}

func scopeOf(op map[string]any) any {
	sec, _ := op["security"].([]any)
	if len(sec) == 0 {
		return nil
	}
	scopes, _ := asMap(sec[0])["bearerAuth"].([]any)
	if len(scopes) != 1 {
		return scopes
	}
	return scopes[0]
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestBundleRefusesShadowingASharedComponent(t *testing.T) {
	_, err := Bundle([]byte(service + "    Problem: {type: string}\n"))
	if err == nil || !strings.Contains(err.Error(), "schemas/Problem") {
		t.Fatalf("err = %v", err)
	}
}

func TestConflicts(t *testing.T) {
	doc := func(thing string) Document {
		return Document{"components": map[string]any{"schemas": map[string]any{
			"Thing": map[string]any{"type": thing}, "Same": map[string]any{"type": "string"},
		}}}
	}
	if c := Conflicts(map[string]Document{"a": doc("object"), "b": doc("object")}); len(c) != 0 {
		t.Errorf("equal definitions conflict: %v", c)
	}
	c := Conflicts(map[string]Document{"a": doc("object"), "b": doc("array"), "c": doc("object")})
	if len(c) != 1 || c[0].Component != "schemas/Thing" || c[0].First != "a" || c[0].Second != "b" {
		t.Errorf("conflicts = %v", c)
	}
}
