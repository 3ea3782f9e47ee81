package assets

import (
	"embed"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
)

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

// build wires the service: the reference protocol's registry, which the
// store declares its kinds to, under the find cache, behind one go-kit
// endpoint per operation; the protocol's internal routes share the router.
func build(d servicekit.Deps) (servicekit.Handlers, error) {
	registry := refs.New("assets", d.Store, d.Peers)
	timeout := endpoints.Timeout(d.RequestTimeout)
	routes := NewHTTPHandler(MakeEndpoints(WithFindCache(NewService(NewStore(d.Store, registry)), d.Finds), timeout))
	refs.MakeServerEndpoints(registry, timeout).Mount(routes)
	return servicekit.Handlers{Routes: routes}, nil
}
