package main

import (
	"context"
	"flag"
	"slices"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// asOfFlag is a get command's -as-of: read the resource as it was at an
// instant (RFC 3339), from its history. Only the collections the registry
// keeps histories of take it.
type asOfFlag struct{ at string }

func (f *asOfFlag) register(collection string, fs *flag.FlagSet) {
	if slices.Contains(registry.AsOfCollections, collection) {
		fs.StringVar(&f.at, "as-of", "", "the instant to read it as it was (RFC 3339, e.g. 2025-03-14T09:26:53Z)")
	}
}

// get reads collection's id as it was at -as-of; current is the read
// without it.
func (f *asOfFlag) get(ctx context.Context, c *registry.Client, collection, id string, current func() (any, error)) (any, error) {
	if f.at == "" {
		return current()
	}
	at, err := time.Parse(time.RFC3339Nano, f.at)
	if err != nil {
		return nil, usageError{"-as-of " + f.at + ": want an RFC 3339 instant, e.g. 2025-03-14T09:26:53Z"}
	}
	switch collection {
	case "organizations":
		return c.GetOrganizationAsOf(ctx, id, at)
	case "people":
		return c.GetPersonAsOf(ctx, id, at)
	case "asset_types":
		return c.GetAssetTypeAsOf(ctx, id, at)
	case "assets":
		return c.GetAssetAsOf(ctx, id, at)
	case "actions":
		return c.GetActionAsOf(ctx, id, at)
	case "documents":
		return c.GetDocumentAsOf(ctx, id, at)
	}
	return nil, usageError{"registry " + collection + " get: -as-of is not kept for " + collection}
}
