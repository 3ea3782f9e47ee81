package actions

import (
	"os"
	"testing"

	"github.com/assetregistry/registry/pkg/testharness"
)

func TestMain(m *testing.M) { os.Exit(testharness.Main(m)) }
