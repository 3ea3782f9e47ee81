// Command parties serves organizations, people and their links.
package main

import (
	"os"

	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/parties"
)

func main() { os.Exit(servicekit.Main(parties.Spec())) }
