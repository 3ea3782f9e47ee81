package deploygen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/catalog"
)

const root = "../.."

// TestGeneratedFilesAreCurrent fails when a generated file differs from what
// the catalog and the value schema make of it: a catalog entry without its
// chart, image and skaffold profile, or a hand edit of a generated file.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not current: run `make generate`", path)
		}
	}
	for path := range Scaffold(root) {
		t.Errorf("%s is missing: run `make generate` to start it", path)
	}
}

// TestChartsMatchTheCatalog fails when a chart exists for nothing, or a
// deployable's chart holds more than the one line that calls the library.
func TestChartsMatchTheCatalog(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(root, ChartsDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range catalog.Deployables() {
		names = append(names, d.Name)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == LibraryChart || e.Name() == Umbrella {
			continue
		}
		if !slices.Contains(names, e.Name()) {
			t.Errorf("charts/%s is the chart of no deployable in pkg/catalog", e.Name())
		}
	}
	for _, name := range names {
		dir := filepath.Join(root, ChartsDir, name, "templates")
		templates, err := os.ReadDir(dir)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(templates) != 1 || templates[0].Name() != name+".yaml" {
			t.Errorf("charts/%s/templates must hold only %s.yaml: what deployables share belongs in registry-lib", name, name)
			continue
		}
		data, _ := os.ReadFile(filepath.Join(dir, name+".yaml"))
		if strings.TrimSpace(string(data)) != TemplateLine {
			t.Errorf("charts/%s/templates/%s.yaml must be exactly %s", name, name, TemplateLine)
		}
	}
}

// TestANewServiceGetsEverything adds a made-up service to the catalog and checks that
// generation gives it a chart, an umbrella dependency, an image, skaffold
// profiles, a dashboard row, its peers' network and mesh rules, and a place
// in the value reference: the one entry is all a new service needs.
func TestANewServiceGetsEverything(t *testing.T) {
	before, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	saved := catalog.Services
	t.Cleanup(func() { catalog.Services = saved })
	catalog.Services = append(slices.Clone(saved), catalog.Service{
		Deployable: catalog.Deployable{Name: "inspections", Module: "services/inspections",
			Command: "services/inspections/cmd/inspections", Port: 8199, MetricsPort: 9199},
		Resources:  []catalog.Resource{{Name: "inspections", Prefixes: []string{"/inspections"}}},
		Needs:      []catalog.Datastore{catalog.Postgres, catalog.ObjectStore},
		Kinds:      []string{"inspection"},
		References: []catalog.Reference{{Service: "parties", Kind: "person"}},
	})
	files, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"charts/inspections/Chart.yaml", "charts/inspections/values.schema.json", "charts/inspections/deployable.yaml"} {
		if _, ok := files[path]; !ok {
			t.Errorf("no %s generated", path)
		}
	}
	scaffold := Scaffold(root)
	for _, path := range []string{"charts/inspections/values.yaml", "charts/inspections/templates/inspections.yaml"} {
		if _, ok := scaffold[path]; !ok {
			t.Errorf("no %s scaffolded", path)
		}
	}
	contains := func(path, want string) {
		t.Helper()
		if !strings.Contains(string(files[path]), want) {
			t.Errorf("%s lacks %q", path, want)
		}
	}
	contains("charts/registry/Chart.yaml", "name: inspections")
	contains("charts/registry/Chart.yaml", "condition: inspections.enabled")
	contains("skaffold.yaml", "- name: inspections\n")
	contains("skaffold.yaml", "-only inspections")
	contains("skaffold.yaml", "inspections.image.tag")
	contains("charts/registry/dashboards/registry.json", `"title": "inspections"`)
	contains("charts/api-gateway/deployable.yaml", "- inspections")
	contains("charts/parties/deployable.yaml", "- inspections") // parties must let inspections in
	contains("charts/inspections/deployable.yaml", "- s3")
	contains("docs/chart-values.md", "`inspections`")

	var schema map[string]any
	if err := json.Unmarshal(files["charts/inspections/values.schema.json"], &schema); err != nil {
		t.Fatal(err)
	}
	props := schema["properties"].(map[string]any)
	for _, key := range []string{"objectStore", "peerClient", "database", "migration"} {
		if _, ok := props[key]; !ok {
			t.Errorf("inspections' schema lacks %s", key)
		}
	}
	if _, ok := props["rateLimit"]; ok {
		t.Error("inspections' schema takes the gateway's rateLimit")
	}

	// The charts grow linearly: a new deployable adds its own chart and one
	// entry to each other chart and to the umbrella, never a copy of the
	// others' values (the dashboard's row of panels is counted apart).
	if added := chartLines(files) - chartLines(before); added > maxChartLinesPerDeployable {
		t.Errorf("a new service adds %d generated chart lines, want at most %d", added, maxChartLinesPerDeployable)
	}
}

// maxChartLinesPerDeployable bounds what one more catalog entry adds to the
// generated chart files: its Chart.yaml, facts and values schema, and one
// entry in each other chart's schema and in the umbrella.
const maxChartLinesPerDeployable = 600

func chartLines(files map[string][]byte) int {
	n := 0
	for path, data := range files {
		if strings.HasPrefix(path, ChartsDir+"/") && !strings.Contains(path, "/dashboards/") {
			n += bytes.Count(data, []byte("\n"))
		}
	}
	return n
}

func TestDefaultsComeFromTheSchema(t *testing.T) {
	s, err := loadSchema(root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := s.libraryDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"replicas: 1", "memory: 256Mi", "provider: none", "secretKey: url", "maxUnavailable: 1"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("library defaults lack %q", want)
		}
	}
}

func TestStrictRefusesUnknownKeys(t *testing.T) {
	in := obj("type", "object", "properties", obj("a", obj("type", "object", "properties", obj("b", obj("type", "string")))))
	out, _ := json.Marshal(strict(in))
	if strings.Count(string(out), `"additionalProperties":false`) != 2 {
		t.Errorf("strict left an object open: %s", out)
	}
}

// An unquoted comma in a flow mapping's description turns the rest of the
// description into a key without a value; loading the schema refuses it.
func TestNoEmptyKeysNamesACutDescription(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want string // "" when the document is fine
	}{
		{`a: {type: integer, description: "DATABASE_MAX_CONNS, per replica."}`, ""},
		{`a: {type: integer, description: DATABASE_MAX_CONNS, per replica.}`, `.a: key "per replica." has no value`},
		{"a:\n  items:\n    - {description: x, y}", `.a.items[0]: key "y" has no value`},
	} {
		doc, err := fromYAML([]byte(tc.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		err = noEmptyKeys(doc, "")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.yaml, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
