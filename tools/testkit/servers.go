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

// Redis is a private Redis server a test starts and kills itself, for tests
// of Redis going away (the shared one of RedisURL must stay up).
type Redis = devinfra.Redis

// StartRedis starts a private Redis with its (empty) data dir in dataDir
// on a free port; it is stopped when the test ends.
func StartRedis(t testing.TB, dataDir string) *Redis {
	t.Helper()
	r, err := devinfra.StartRedis(t.Context(), devinfra.RedisOptions{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	return r
}
