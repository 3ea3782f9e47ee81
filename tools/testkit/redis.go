package testkit

import (
	"testing"

	"github.com/assetregistry/registry/tools/devinfra"
)

// Private Redis servers and Sentinels a test starts itself, beside the
// shared server of RedisURL: a replicated set watched by Sentinel, a
// Redis Cluster node.
type (
	RedisOptions    = devinfra.RedisOptions
	Sentinel        = devinfra.Sentinel
	SentinelOptions = devinfra.SentinelOptions
)

// StartRedisWith starts a private Redis server as o says (stopped when the
// test ends).
func StartRedisWith(t testing.TB, o RedisOptions) *Redis {
	t.Helper()
	r, err := devinfra.StartRedis(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	return r
}

// StartSentinel starts a private Redis Sentinel (stopped when the test ends).
func StartSentinel(t testing.TB, o SentinelOptions) *Sentinel {
	t.Helper()
	s, err := devinfra.StartSentinel(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// NewSecret is a random password for a private server.
func NewSecret(t testing.TB) string {
	t.Helper()
	s, err := devinfra.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
