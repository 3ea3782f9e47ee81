package passport

import (
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes adds the passport's route to r.
func Routes(r *httpx.Router, e Endpoints) {
	r.Handle("GET", "/assets/{id}/passport", endpoints.Serve(e.Passport, httpx.PathID))
}
