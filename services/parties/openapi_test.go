package parties_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/assetregistry/registry/pkg/openapitest"
	"github.com/assetregistry/registry/services/parties"
)

// TestOpenAPIDocumentIsValid parses the embedded document: it must be a
// valid OpenAPI 3.1 document whose references all resolve.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc := parties.Spec().OpenAPIYAML
	openapitest.New(t, doc)
	var head struct {
		OpenAPI string `json:"openapi"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		t.Fatal(err)
	}
	if head.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", head.OpenAPI)
	}
	// The document is served as JSON (app.Build converts it); a YAML 1.1
	// reading must give the same document as libopenapi's.
	if _, err := yaml.YAMLToJSON(doc); err != nil {
		t.Errorf("the document does not convert to JSON: %v", err)
	}
}

// TestOpenAPIRoutesMatchTransport keeps the document's operations and the
// routes of transport.go in step: each route must be documented, and each
// documented operation must be a route.
func TestOpenAPIRoutesMatchTransport(t *testing.T) {
	routes := transportRoutes(t)
	if len(routes) < 10 {
		t.Fatalf("found only %d routes in transport.go; has the handle(...) call style changed? %v", len(routes), routes)
	}
	documented := documentOperations(t)
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is registered in transport.go but not in openapi.yaml", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("operation %s is in openapi.yaml but not registered in transport.go", d)
		}
	}
}

var (
	handleCall = regexp.MustCompile(`\bhandle\(\s*"([A-Z]+)"\s*,\s*(?:"([^"]+)"|([A-Za-z_]\w*))`)
	constDecl  = regexp.MustCompile(`\b(?:const|var)\s+([A-Za-z_]\w*)\s*=\s*"([^"]+)"`)
)

// transportRoutes reads the handle("METHOD", "/path", ...) calls of
// transport.go; a path given as a constant is resolved from its const line.
func transportRoutes(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("transport.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, m := range constDecl.FindAllStringSubmatch(string(src), -1) {
		consts[m[1]] = m[2]
	}
	var routes []string
	for _, m := range handleCall.FindAllStringSubmatch(string(src), -1) {
		p := m[2]
		if m[3] != "" {
			var ok bool
			if p, ok = consts[m[3]]; !ok {
				t.Fatalf("transport.go: handle(%q, %s, ...): cannot resolve %s to a string constant", m[1], m[3], m[3])
			}
		}
		routes = append(routes, m[1]+" "+p)
	}
	return routes
}

// documentOperations lists "METHOD /path" for every operation of the document.
func documentOperations(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := yaml.Unmarshal(parties.Spec().OpenAPIYAML, &doc); err != nil {
		t.Fatal(err)
	}
	methods := []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	var ops []string
	for p, item := range doc.Paths {
		for key := range item {
			if slices.Contains(methods, key) {
				ops = append(ops, strings.ToUpper(key)+" "+p)
			}
		}
	}
	slices.Sort(ops)
	return ops
}
