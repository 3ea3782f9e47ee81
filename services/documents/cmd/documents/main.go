// Command documents serves documents: files in object storage, metadata
// in PostgreSQL.
package main

import (
	"os"

	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/documents"
)

func main() { os.Exit(servicekit.Main(documents.Spec())) }
