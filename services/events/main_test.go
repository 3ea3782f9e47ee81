package events

import (
	"os"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
