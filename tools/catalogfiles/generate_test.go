package catalogfiles

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/assetregistry/registry/pkg/catalog"
)

// A file generated from the catalog and committed must match what the
// catalog renders now: run `make generate` after editing pkg/catalog.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		committed, err := os.ReadFile(filepath.Join("..", "..", f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, f.Content) {
			t.Errorf("%s is out of date with pkg/catalog; run make generate", f.Path)
		}
	}
}

// The gateway's copy of each service's API document must be the
// service's own: /openapi.json serves it while the service is down. Run
// `make generate` after editing a service's openapi.yaml.
func TestGatewayAPIDocumentsAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := APIDocuments(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range files {
		want[filepath.Base(f.Path)] = true
		committed, err := os.ReadFile(filepath.Join(root, f.Path))
		if err != nil {
			t.Errorf("%v; run make generate", err)
			continue
		}
		if !bytes.Equal(committed, f.Content) {
			t.Errorf("%s differs from the service's openapi.yaml; run make generate", f.Path)
		}
	}
	copies, err := filepath.Glob(filepath.Join(root, APIDocumentsDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		if !want[filepath.Base(c)] {
			t.Errorf("%s is the copy of no service in pkg/catalog; run make generate", c)
		}
	}
}

// Every service folder has a catalog entry and every entry a folder: a
// service cannot be half added.
func TestServiceFoldersMatchTheCatalog(t *testing.T) {
	folders, err := filepath.Glob(filepath.Join("..", "..", "services", "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range folders {
		name := filepath.Base(filepath.Dir(f))
		seen[name] = true
		if _, ok := catalog.Lookup(name); !ok {
			t.Errorf("services/%s has no entry in pkg/catalog", name)
		}
	}
	for _, name := range catalog.Names() {
		if !seen[name] {
			t.Errorf("pkg/catalog lists %s, which has no services/%s module", name, name)
		}
	}
}
