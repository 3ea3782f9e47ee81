package servicetest

import (
	"testing"

	"github.com/assetregistry/registry/pkg/openapitest"
	"github.com/assetregistry/registry/pkg/servicekit"
)

// Conformance is what every service's tests check the same way: its
// bundled OpenAPI document is a valid OpenAPI 3.1 document whose references
// resolve, it lists exactly the routes the router has, and every operation
// answers the contract's common errors (ErrorRows) on a running service.
func Conformance(t *testing.T, spec servicekit.Spec) {
	t.Run("document", func(t *testing.T) {
		openapitest.New(t, Document(t, spec))
		RoutesMatchDocument(t, spec)
	})
	t.Run("error rows", func(t *testing.T) {
		ErrorRows(t, Start(t, spec), spec)
	})
}
