package e2e

import (
	"testing"

	"github.com/assetregistry/registry/pkg/openapi"
	"github.com/assetregistry/registry/tools/clientgen"
	"github.com/assetregistry/registry/tools/testkit"
)

// The document the gateway serves makes, with oapi-codegen's defaults, a
// client whose always-present answer fields are plain values.
func TestServedDocumentGeneratesAClientWithoutNeedlessPointers(t *testing.T) {
	t.Parallel()
	var doc openapi.Document = testkit.Expect(t, gateway().Do(t, "GET", "/openapi.json", "", nil), 200).JSON()
	problems, err := clientgen.Check(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("generated client: %s", p)
	}
	if len(clientgen.ResponseSchemas(doc)) < 10 {
		t.Error("the served document names too few response schemas; is it the merged one?")
	}
}
