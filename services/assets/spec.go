package assets

import (
	"context"
	"embed"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/assets/assettypes"
	"github.com/assetregistry/registry/services/assets/custody"
	"github.com/assetregistry/registry/services/assets/custody/accesslog"
	"github.com/assetregistry/registry/services/assets/meters"
)

// Custody is what the custody component needs of the assets st holds.
func Custody(st *Store) custody.Assets {
	return custody.Assets{
		Representation: func(ctx context.Context, id uuid.UUID) (any, error) { return st.GetAsset(ctx, id) },
		FindScopes:     func(serial string) []string { return []string{assetFinds(serial)} },
	}
}

// files are the migrations and the OpenAPI document, in the binary.
//
//go:embed migrations/*.sql openapi.yaml
var files embed.FS

// Spec describes the assets service to the service kit.
func Spec() servicekit.Spec {
	spec := servicekit.Embedded("assets", files)
	spec.Build = build
	return spec
}

// build wires the service: the reference protocol's registry, which both
// stores declare their kinds to, and the components' route tables (assets
// at the root, asset types beside them, each under its find cache, the
// assets' meter readings (meters) and custody) on one router, every route
// under the request timeout; the protocol's internal routes share it. The
// asset types' store names a type's assets through the root's question:
// the component knows no assets itself. Custody (grants, transfers, the
// access log) is told how to read an asset as GET shows it and which finds
// a change of who sees it makes stale (Custody).
func build(d servicekit.Deps) (servicekit.Handlers, error) {
	registry := refs.New("assets", d.Store, d.Peers)
	timeout := endpoints.Timeout(d.RequestTimeout)
	types := assettypes.NewStore(d.Store, registry, AssetsOfType)
	assets := NewStore(d.Store, registry)
	routes := endpoints.NewRouter()
	endpoints.Mount(routes, Routes(WithFindCache(NewService(assets, types, registry), d.Finds)), timeout)
	endpoints.Mount(routes, assettypes.Routes(assettypes.WithFindCache(assettypes.NewService(types, registry), d.Finds)), timeout)
	endpoints.Mount(routes, meters.Routes(meters.NewService(meters.NewStore(d.Store), assets.Access)), timeout)
	endpoints.Mount(routes, custody.Routes(custody.NewService(custody.NewStore(d.Store, registry, Custody(assets)), registry)), timeout)
	refs.MakeServerEndpoints(registry, timeout).Mount(routes)
	// The access log's watermark in Redis lives while the service does
	// (accesslog).
	return servicekit.Handlers{Routes: routes, Jobs: []job.Job{accesslog.New(d.Store).RenewJob(d.Logger)}}, nil
}
