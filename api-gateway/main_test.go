package gateway

import (
	"os"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

// The rate-limit tests use the test Redis (testkit.RedisURL), which Main
// starts when none is configured and stops at the end.
func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
