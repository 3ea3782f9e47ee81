package servicetest

import (
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/objectstore"
	"github.com/assetregistry/registry/tools/testkit"
)

// objectStoreConfig is a fresh bucket of the test object store.
func objectStoreConfig(t testing.TB) objectstore.Config {
	t.Helper()
	s3 := testkit.S3(t)
	scheme := "http://"
	if s3.Secure {
		scheme = "https://"
	}
	return objectstore.Config{Endpoint: scheme + s3.Endpoint, Bucket: s3.Bucket, Region: s3.Region,
		AccessKey: s3.AccessKey, SecretKey: s3.SecretKey, StartupWait: time.Second}
}
