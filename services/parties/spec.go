package parties

import (
	"embed"
	"io/fs"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

//go:embed openapi.yaml
var openAPI []byte

// Spec describes the parties service to the service kit.
func Spec() servicekit.Spec {
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return servicekit.Spec{
		Name:        "parties",
		Migrations:  migrations,
		OpenAPIYAML: openAPI,
		Build: func(d servicekit.Deps) (servicekit.Handlers, error) {
			registry := refs.New("parties", d.Store, d.Peers)
			svc := WithFindCache(NewService(NewStore(d.Store), registry), d.Finds)
			timeout := endpoints.Timeout(d.RequestTimeout)
			routes := endpoints.NewRouter()
			endpoints.Mount(routes, Routes(svc), timeout)
			refs.MakeServerEndpoints(registry, timeout).Mount(routes)
			return servicekit.Handlers{Routes: routes}, nil
		},
	}
}
