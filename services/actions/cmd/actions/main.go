// Command actions serves actions and action documents.
package main

import (
	"os"

	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/actions"
)

func main() { os.Exit(servicekit.Main(actions.Spec())) }
