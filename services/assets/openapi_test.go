package assets_test

import (
	"testing"

	"github.com/assetregistry/registry/pkg/openapitest"
	"github.com/assetregistry/registry/pkg/servicetest"
	"github.com/assetregistry/registry/services/assets"
)

// TestOpenAPIDocumentIsValid: the bundled document must be a valid OpenAPI
// 3.1 document whose references all resolve.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	openapitest.New(t, servicetest.Document(t, assets.Spec()))
}

// TestRoutesMatchDocument keeps the router and the document in step.
func TestRoutesMatchDocument(t *testing.T) {
	servicetest.RoutesMatchDocument(t, assets.Spec())
}
