// Package clientgen generates a Go client from the registry's OpenAPI
// document the way an integration author would (oapi-codegen, pinned in
// tools/go.mod), and reports the response fields the document says are
// always there that come out as pointers anyway: each is a nil check every
// caller has to write for nothing.
package clientgen

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/openapi"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/actions"
	"github.com/assetregistry/registry/services/assets"
	"github.com/assetregistry/registry/services/documents"
	"github.com/assetregistry/registry/services/events"
	"github.com/assetregistry/registry/services/parties"
)

// specs are the services' specs by their catalog name; Bundled fails for
// a service of pkg/catalog that has none here, so a new service cannot be
// left out of the client as events once was.
var specs = map[string]func() servicekit.Spec{
	"parties":   parties.Spec,
	"documents": documents.Spec,
	"assets":    assets.Spec,
	"actions":   actions.Spec,
	"events":    events.Spec,
}

// Bundled returns the document the gateway serves at /openapi.json, made
// in process from every service's own document: each bundled (shared
// components merged in) and their paths and components put together.
func Bundled() (openapi.Document, error) {
	docs := map[string]openapi.Document{}
	for _, name := range catalog.Names() {
		spec, ok := specs[name]
		if !ok {
			return nil, fmt.Errorf("service %s of pkg/catalog has no spec in tools/clientgen", name)
		}
		doc, err := openapi.Bundle(spec().OpenAPIYAML)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", name, err)
		}
		docs[name] = doc
	}
	if conflicts := openapi.Conflicts(docs); len(conflicts) > 0 {
		return nil, fmt.Errorf("the services' documents disagree: %v", conflicts)
	}
	merged := openapi.Document{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "Asset Registry API", "version": "1"},
		"servers": []any{map[string]any{"url": "/"}},
	}
	paths, components := map[string]any{}, map[string]any{}
	for _, name := range catalog.Names() {
		doc := docs[name]
		for p, item := range doc["paths"].(map[string]any) {
			// As the gateway merges: a path another service owns (GET
			// /assets/{id} that the events service answers with as_of) is
			// documented by its owner, which names the parameter.
			if owner, _, ok := catalog.Route(p); ok && owner.Service != name {
				continue
			}
			paths[p] = item
		}
		for section, entries := range doc["components"].(map[string]any) {
			if components[section] == nil {
				components[section] = map[string]any{}
			}
			maps.Copy(components[section].(map[string]any), entries.(map[string]any))
		}
		if merged["security"] == nil {
			merged["security"] = doc["security"]
		}
	}
	merged["paths"], merged["components"] = paths, components
	return merged, nil
}

// Generate runs oapi-codegen on a JSON document: types and a client, as an
// integration author's default configuration makes them.
func Generate(document []byte) (string, error) {
	loader := openapi3.NewLoader()
	spec, err := loader.LoadFromData(document)
	if err != nil {
		return "", fmt.Errorf("load the document: %w", err)
	}
	src, err := codegen.Generate(spec, codegen.Configuration{
		PackageName: "registry",
		Generate:    codegen.GenerateOptions{Models: true, Client: true},
	})
	if err != nil {
		return "", fmt.Errorf("oapi-codegen: %w", err)
	}
	return src, nil
}

// Field is a struct field of the generated code.
type Field struct {
	Type, Name, JSON string
	Pointer          bool // *T, or a nullable wrapper
	OmitEmpty        bool
}

func (f Field) String() string { return f.Type + "." + f.JSON }

// Fields lists the fields of every struct type the generated code declares,
// by type name.
func Fields(src string) (map[string][]Field, error) {
	file, err := parser.ParseFile(token.NewFileSet(), "client.go", src, 0)
	if err != nil {
		return nil, fmt.Errorf("parse the generated code: %w", err)
	}
	out := map[string][]Field{}
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := spec.Type.(*ast.StructType)
		if !ok {
			return true
		}
		for _, f := range st.Fields.List {
			if f.Tag == nil || len(f.Names) == 0 {
				continue
			}
			tag, _ := strconv.Unquote(f.Tag.Value)
			jsonTag := reflect.StructTag(tag).Get("json")
			name, opts, _ := strings.Cut(jsonTag, ",")
			_, star := f.Type.(*ast.StarExpr)
			out[spec.Name.Name] = append(out[spec.Name.Name], Field{
				Type: spec.Name.Name, Name: f.Names[0].Name, JSON: name,
				Pointer:   star || strings.HasPrefix(exprString(f.Type), "nullable."),
				OmitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty"),
			})
		}
		return false
	})
	return out, nil
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.IndexExpr:
		return exprString(e.X)
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// ResponseSchemas names the component schemas a 2xx answer of some
// operation carries, directly or inside another (arrays, properties,
// allOf), with the property names the document marks required and those it
// marks nullable.
func ResponseSchemas(doc openapi.Document) map[string]Schema {
	components := asMap(asMap(doc["components"])["schemas"])
	out := map[string]Schema{}
	var visit func(v any)
	visit = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				name, ok := strings.CutPrefix(ref, "#/components/schemas/")
				if _, seen := out[name]; ok && !seen {
					s := asMap(components[name])
					out[name] = schemaOf(components, s)
					visit(s)
				}
				return
			}
			for _, child := range v {
				visit(child)
			}
		case []any:
			for _, child := range v {
				visit(child)
			}
		}
	}
	for _, item := range asMap(doc["paths"]) {
		for _, op := range asMap(item) {
			for status, resp := range asMap(asMap(op)["responses"]) {
				if strings.HasPrefix(status, "2") {
					visit(resolveResponse(doc, resp))
				}
			}
		}
	}
	return out
}

// Schema is what the check needs of an object schema.
type Schema struct {
	Properties []string
	Required   []string
}

// schemaOf flattens allOf, as oapi-codegen does into one struct.
func schemaOf(components map[string]any, s map[string]any) Schema {
	var out Schema
	if ref, ok := s["$ref"].(string); ok {
		name, _ := strings.CutPrefix(ref, "#/components/schemas/")
		return schemaOf(components, asMap(components[name]))
	}
	out.Properties = slices.Sorted(maps.Keys(asMap(s["properties"])))
	for _, r := range asSlice(s["required"]) {
		out.Required = append(out.Required, r.(string))
	}
	for _, part := range asSlice(s["allOf"]) {
		p := schemaOf(components, asMap(part))
		out.Properties = append(out.Properties, p.Properties...)
		out.Required = append(out.Required, p.Required...)
	}
	return out
}

func resolveResponse(doc openapi.Document, resp any) any {
	if ref, ok := asMap(resp)["$ref"].(string); ok {
		name, _ := strings.CutPrefix(ref, "#/components/responses/")
		return asMap(asMap(asMap(doc["components"])["responses"])[name])
	}
	return resp
}

// Problem is one generated field the check refuses.
type Problem struct {
	Field  Field
	Reason string
}

func (p Problem) String() string { return p.Field.String() + ": " + p.Reason }

// Check generates the client from doc and reports every required field of
// a response schema that comes out as an optional pointer (omitempty: the
// generator thought it may be absent). A required nullable field may be a
// pointer, since null needs one, but never omitempty.
func Check(doc openapi.Document) ([]Problem, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	src, err := Generate(raw)
	if err != nil {
		return nil, err
	}
	fields, err := Fields(src)
	if err != nil {
		return nil, err
	}
	var problems []Problem
	for name, schema := range ResponseSchemas(doc) {
		generated, ok := fields[name]
		if !ok {
			continue // not an object: an enum, a string, an allOf alias
		}
		for _, f := range generated {
			if f.JSON == "" || f.JSON == "-" {
				continue
			}
			required := slices.Contains(schema.Required, f.JSON)
			switch {
			case required && f.OmitEmpty:
				problems = append(problems, Problem{f, "required, yet generated as optional"})
			case required && f.Pointer && !nullable(doc, name, f.JSON):
				problems = append(problems, Problem{f, "required and not nullable, yet generated as a pointer"})
			}
		}
	}
	slices.SortFunc(problems, func(a, b Problem) int { return strings.Compare(a.String(), b.String()) })
	return problems, nil
}

// nullable says whether a property's schema admits null.
func nullable(doc openapi.Document, schema, property string) bool {
	components := asMap(asMap(doc["components"])["schemas"])
	for p := propertyOf(components, asMap(components[schema]), property); p != nil; {
		if slices.Contains(asSlice(p["type"]), any("null")) || p["type"] == "null" {
			return true
		}
		for _, alt := range append(asSlice(p["oneOf"]), asSlice(p["anyOf"])...) {
			if asMap(alt)["type"] == "null" {
				return true
			}
		}
		ref, ok := p["$ref"].(string)
		if !ok {
			return false
		}
		name, _ := strings.CutPrefix(ref, "#/components/schemas/")
		p = asMap(components[name])
	}
	return false
}

// propertyOf finds a property's schema in an object schema or its allOf.
func propertyOf(components, s map[string]any, property string) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		name, _ := strings.CutPrefix(ref, "#/components/schemas/")
		s = asMap(components[name])
	}
	if p := asMap(asMap(s["properties"])[property]); p != nil {
		return p
	}
	for _, part := range asSlice(s["allOf"]) {
		if p := propertyOf(components, asMap(part), property); p != nil {
			return p
		}
	}
	return nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
