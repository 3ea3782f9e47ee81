package testkit

import (
	"testing"

	"github.com/assetregistry/registry/tools/devinfra"
)

// Minio is a private MinIO server a test starts and stops itself, for tests
// of object storage going away (the shared one of S3 must stay up).
type Minio = devinfra.Minio

// StartMinio starts a private MinIO with its data in dataDir on port (0: a
// free one); it is stopped when the test ends.
func StartMinio(t testing.TB, dataDir string, port int) *Minio {
	t.Helper()
	m, err := devinfra.StartMinio(t.Context(), devinfra.MinioOptions{DataDir: dataDir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	return m
}

// FreePort is a loopback port nothing listens on, for tests of a server
// that is not there.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := devinfra.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
