// Command catalog writes the files generated from pkg/catalog (catalog.mk,
// go.work) into the repository root it runs in; `make generate` runs it.
package main

import (
	"fmt"
	"os"

	"github.com/assetregistry/registry/tools/catalogfiles"
)

func main() {
	if err := catalogfiles.Write("."); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}
