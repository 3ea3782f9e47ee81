// Command layercheck fails when a package breaks the registry's import
// rules, or a module the rules between modules (see tools/layers); `make
// lint` runs it from the repository root. Packages are listed with every
// build tag the repository's files name, so none escapes the rules.
package main

import (
	"fmt"
	"os"

	"github.com/assetregistry/registry/tools/catalogfiles"
	"github.com/assetregistry/registry/tools/layers"
)

func main() {
	tags, err := layers.BuildTags(".")
	if err != nil {
		fail(err)
	}
	pkgs, err := layers.List(".", tags, catalogfiles.Patterns()...)
	if err != nil {
		fail(err)
	}
	mods, err := layers.ReadModules(".", catalogfiles.Modules())
	if err != nil {
		fail(err)
	}
	problems := append(layers.Check(pkgs), layers.CheckModules(mods)...)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "layercheck:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("layercheck: pkg/ has %d floors and %d arrows (tools/layers.KitOrder)\n",
		layers.Floors(layers.KitOrder), layers.Arrows(layers.KitOrder))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "layercheck:", err)
	os.Exit(2)
}
