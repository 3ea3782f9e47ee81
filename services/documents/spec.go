package documents

import (
	"context"
	"embed"
	"flag"
	"io/fs"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

//go:embed openapi.yaml
var openAPI []byte

// Spec describes the documents service to the service kit.
func Spec() servicekit.Spec { return SpecWith(Config{MaxSize: DefaultMaxSize}, DefaultObjectsConfig) }

// SpecWith is Spec with other limits (tests use small ones).
func SpecWith(cfg Config, objectsCfg ObjectsConfig) servicekit.Spec {
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	sweepEvery := 5 * time.Minute
	return servicekit.Spec{
		Name:        "documents",
		Migrations:  migrations,
		OpenAPIYAML: openAPI,
		Flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&cfg.MaxSize, "documents.max-size", cfg.MaxSize, "largest file an upload may hold, in bytes (over it: 413)")
			fs.DurationVar(&objectsCfg.UploadTimeout, "documents.upload-timeout", objectsCfg.UploadTimeout, "upper bound on one upload; what is left of a longer one is swept")
			fs.DurationVar(&sweepEvery, "documents.sweep-every", sweepEvery, "how often objects of failed uploads and deleted documents are removed")
		},
		Build: func(d servicekit.Deps) (servicekit.Handlers, error) {
			registry := refs.New("documents", d.Store, d.Peers)
			store := NewStore(d.Store, d.Logger)
			objects := NewObjects(d.Objects, objectsCfg)
			cfg.StepTimeout = d.RequestTimeout
			svc := NewService(store, registry, objects, actionDocuments(d.Peers), tenancy(d.Peers), cfg)
			// Uploads and downloads run as long as their bytes take; only
			// metadata calls get the request timeout.
			timeout := endpoints.Timeout(d.RequestTimeout)
			routes := endpoints.NewRouter()
			endpoints.Mount(routes, Routes(svc), timeout)
			endpoints.Mount(routes, FileRoutes(svc, cfg.MaxSize))
			refs.MakeServerEndpoints(registry, timeout).Mount(routes)
			h := servicekit.Handlers{
				Routes:         routes,
				LongestRequest: objectsCfg.UploadTimeout,
			}
			if d.Objects != nil && sweepEvery > 0 { // no storage when only the routes are wanted
				h.Jobs = []job.Job{job.Every("documents sweeper", sweepEvery, sweeper(store, objects, d.Logger))}
			}
			return h, nil
		},
	}
}

// actionDocuments asks the service that owns action documents (the
// actions service) which of them link a document. Only it is asked: the
// other services that reference documents (assets) own no action
// documents, and asking them would cost every GET a call for nothing.
func actionDocuments(peers *peer.Clients) ActionDocuments {
	owner, ok := catalog.OwnerOf("action_document")
	return func(ctx context.Context, id uuid.UUID) ([]ActionDocument, error) {
		links := []ActionDocument{}
		if !ok {
			return links, nil // no service in the catalog links documents to actions
		}
		c := peers.Get(owner)
		if c == nil {
			return nil, unconfigured(owner)
		}
		found, err := refs.NewClient(c).Referrers(ctx, "document", id, false)
		if err != nil {
			return nil, err
		}
		for _, ref := range found {
			if ref.Kind != "action_document" {
				continue
			}
			ad, err := actionDocumentFrom(ref.Details)
			if err != nil {
				return nil, err
			}
			links = append(links, ad)
		}
		return links, nil
	}
}

// tenancy asks the actions service which action documents of a document an
// organization sees (its internal route POST /internal/documents_seen),
// and the assets service whether an asset type attaches it (the reference
// protocol's referrers). Only a bound caller's read asks them.
func tenancy(peers *peer.Clients) Tenancy {
	return Tenancy{
		LinksSeen: func(ctx context.Context, organization string, id uuid.UUID) (map[uuid.UUID]bool, error) {
			c := peers.Get("actions")
			if c == nil {
				return nil, unconfigured("actions")
			}
			var answer struct {
				ActionDocumentIDs []uuid.UUID `json:"action_document_ids"`
			}
			err := c.Call(ctx, "POST", documentsSeenPath, map[string]any{"organization_id": organization, "document_ids": []uuid.UUID{id}}, &answer)
			seen := map[uuid.UUID]bool{}
			for _, l := range answer.ActionDocumentIDs {
				seen[l] = true
			}
			return seen, err
		},
		Attached: func(ctx context.Context, id uuid.UUID) (bool, error) {
			c := peers.Get("assets")
			if c == nil {
				return false, unconfigured("assets")
			}
			found, err := refs.NewClient(c).Referrers(ctx, "document", id, false)
			for _, ref := range found {
				if ref.Kind == "asset_type" {
					return true, err
				}
			}
			return false, err
		},
	}
}

// documentsSeenPath is the actions service's internal route that says
// which action documents of some documents an organization sees.
const documentsSeenPath = "/internal/documents_seen"

// sweeper is the job that removes loose objects whose time is up.
func sweeper(store *Store, objects *Objects, logger log.Logger) func(context.Context) {
	return func(ctx context.Context) {
		n, err := store.Sweep(ctx, objects)
		switch {
		case err != nil && ctx.Err() == nil:
			level.Warn(logger).Log("msg", "sweeping loose objects failed; retrying later", "err", err)
		case n > 0:
			level.Info(logger).Log("msg", "removed loose objects", "count", n)
		}
	}
}
