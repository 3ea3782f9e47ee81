package clientgen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// sdkField is a member of a struct of the SDK: its JSON name and Go type.
type sdkField struct{ JSON, Type string }

// sdkStructs reads the struct types of the SDK's source (the sdk module
// imports nothing of the registry, so it is read, not imported), with the
// members of embedded structs (Audit) as their own.
func sdkStructs(t *testing.T, dir string) map[string][]sdkField {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	raw := map[string]*ast.StructType{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if spec, ok := n.(*ast.TypeSpec); ok {
				if st, ok := spec.Type.(*ast.StructType); ok {
					raw[spec.Name.Name] = st
				}
			}
			return true
		})
	}
	var fields func(st *ast.StructType) []sdkField
	fields = func(st *ast.StructType) []sdkField {
		var out []sdkField
		for _, f := range st.Fields.List {
			tag := ""
			if f.Tag != nil {
				tag = reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json")
			}
			name, _, _ := strings.Cut(tag, ",")
			if len(f.Names) == 0 && tag == "" { // embedded: its members are the struct's
				if inner, ok := raw[exprString(f.Type)]; ok {
					out = append(out, fields(inner)...)
				}
				continue
			}
			if name == "-" || name == "" {
				continue
			}
			out = append(out, sdkField{JSON: name, Type: goType(f.Type)})
		}
		return out
	}
	out := map[string][]sdkField{}
	for name, st := range raw {
		out[name] = fields(st)
	}
	return out
}

// goType spells a field's type: *T, []T, map[K]V, pkg.T or T.
func goType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + goType(e.X)
	case *ast.ArrayType:
		return "[]" + goType(e.Elt)
	case *ast.MapType:
		return "map[" + goType(e.Key) + "]" + goType(e.Value)
	case *ast.SelectorExpr:
		return goType(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	case *ast.InterfaceType:
		return "any"
	}
	return "?"
}

// compatible says whether a Go type can hold what a property's schema
// allows: the JSON type (and date-time format), any of several, and
// pointers for a null or an absent member.
func compatible(goT string, prop map[string]any, components map[string]any) bool {
	for ref, ok := prop["$ref"].(string); ok; ref, ok = prop["$ref"].(string) {
		name, _ := strings.CutPrefix(ref, "#/components/schemas/")
		prop = asMap(components[name])
	}
	goT = strings.TrimPrefix(goT, "*")
	if alts := append(asSlice(prop["oneOf"]), asSlice(prop["anyOf"])...); len(alts) > 0 {
		for _, alt := range alts {
			if asMap(alt)["type"] != "null" && compatible(goT, asMap(alt), components) {
				return true
			}
		}
		return false
	}
	var types []string
	switch v := prop["type"].(type) {
	case string:
		types = []string{v}
	case []any:
		for _, x := range v {
			types = append(types, x.(string))
		}
	}
	if len(types) == 0 || goT == "any" || goT == "json.RawMessage" {
		return true // no type stated, or a Go type that holds any JSON
	}
	for _, t := range types {
		switch t {
		case "string":
			if goT == "string" || (goT == "time.Time" && prop["format"] == "date-time") {
				return true
			}
		case "integer":
			if slices.Contains([]string{"int", "int64", "int32", "uint64"}, goT) {
				return true
			}
		case "number":
			if goT == "float64" {
				return true
			}
		case "boolean":
			if goT == "bool" {
				return true
			}
		case "array":
			if strings.HasPrefix(goT, "[]") {
				return true
			}
		case "object":
			if !slices.Contains([]string{"string", "int", "int64", "bool", "float64", "time.Time"}, goT) && !strings.HasPrefix(goT, "[]") {
				return true // a struct of the SDK, a map
			}
		}
	}
	return false
}

// sdkNames maps an SDK type to the schema of the bundled document it
// stands for, where their names differ: one SDK type holds a resource as
// a list shows it and as its GET does (the detail, with its related rows),
// and a webhook with the secret its create and rotate answer.
var sdkNames = map[string]string{
	"Action":       "ActionDetail",
	"ActionType":   "ActionTypeDefinition",
	"AssetType":    "AssetTypeDetail",
	"Document":     "DocumentDetail",
	"Organization": "OrganizationDetail",
	"Person":       "PersonDetail",
	"Webhook":      "WebhookWithSecret",
}

// notInSDK are schema members the SDK leaves out on purpose, and why.
var notInSDK = map[string]string{
	"OrganizationInput.tax_identification_number": "an older name the registry still accepts for tax_registration_number, which the SDK sends",
	"ActionDocumentInput.action_id":               "the SDK's create names the action in its path; a batch's item is ActionDocumentLink, with action_id",
}

// The SDK's types hold every member of the answers they stand for, with
// the same JSON name and a Go type that can hold it, and nothing the
// document does not name: sdk/types.go is written by hand, the document is
// what the registry serves.
func TestSDKTypesFollowTheDocument(t *testing.T) {
	doc, err := Bundled()
	if err != nil {
		t.Fatal(err)
	}
	components := asMap(asMap(doc["components"])["schemas"])
	structs := sdkStructs(t, filepath.Join("..", "..", "sdk"))
	compared := 0
	for _, goName := range slices.Sorted(maps.Keys(structs)) {
		schemaName := goName
		if n, ok := sdkNames[goName]; ok {
			schemaName = n
		}
		s, ok := components[schemaName].(map[string]any)
		if !ok || len(structs[goName]) == 0 {
			continue // no schema of that name: an input, an option, a client type
		}
		compared++
		schema := schemaOf(components, s)
		have := map[string]string{}
		for _, f := range structs[goName] {
			have[f.JSON] = f.Type
			prop := propertyOf(components, s, f.JSON)
			if prop == nil {
				t.Errorf("sdk %s.%s: no member %s in the document's %s", goName, f.JSON, f.JSON, schemaName)
				continue
			}
			if !compatible(f.Type, prop, components) {
				t.Errorf("sdk %s.%s: a %s cannot hold the document's %v", goName, f.JSON, f.Type, prop["type"])
			}
		}
		for _, p := range schema.Properties {
			if _, ok := have[p]; !ok && notInSDK[schemaName+"."+p] == "" {
				t.Errorf("document %s.%s: missing from the sdk's %s", schemaName, p, goName)
			}
		}
	}
	if compared < 10 {
		t.Fatalf("compared %d SDK types with the document; the walk is broken", compared)
	}
}
