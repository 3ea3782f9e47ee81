// Command assets serves asset types and assets.
package main

import (
	"os"

	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/assets"
)

func main() { os.Exit(servicekit.Main(assets.Spec())) }
