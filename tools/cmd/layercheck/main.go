// Command layercheck fails when a package breaks the registry's import
// rules (see tools/layers); `make lint` runs it from the repository root.
package main

import (
	"fmt"
	"os"

	"github.com/assetregistry/registry/tools/catalog"
	"github.com/assetregistry/registry/tools/layers"
)

func main() {
	pkgs, err := layers.List(".", catalog.Patterns()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layercheck:", err)
		os.Exit(2)
	}
	problems := layers.Check(pkgs)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "layercheck:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}
