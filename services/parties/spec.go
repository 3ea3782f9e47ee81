package parties

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/assetregistry/registry/pkg/app"
	"github.com/assetregistry/registry/pkg/kit"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

//go:embed openapi.yaml
var openAPI []byte

// Spec describes the parties service to the shared main.
func Spec() app.Spec {
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return app.Spec{
		Name:        "parties",
		Schema:      "parties",
		Migrations:  migrations,
		OpenAPIYAML: openAPI,
		Build: func(d app.Deps) (http.Handler, error) {
			store := NewStore(d.Pool, d.Cache)
			svc := WithFindCache(NewService(store), d.Cache)
			return NewHTTPHandler(MakeEndpoints(svc, kit.Timeout(d.RequestTimeout))), nil
		},
	}
}
