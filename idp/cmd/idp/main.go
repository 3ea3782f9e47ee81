// Command idp is the registry's local OAuth 2.0 / OIDC identity provider for
// machine clients, and its admin CLI; see package idp.
package main

import (
	"os"

	"github.com/assetregistry/registry/idp"
)

func main() { os.Exit(idp.Main(os.Args[1:], os.Stdout, os.Stderr)) }
