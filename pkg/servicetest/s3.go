package servicetest

import (
	"testing"

	"github.com/assetregistry/registry/pkg/objectstore"
)

func objectStoreConfig(t *testing.T) objectstore.Config {
	t.Fatal("servicetest: object storage for tests is not wired yet")
	return objectstore.Config{}
}
