package actions

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/actiondocs"
	"github.com/assetregistry/registry/services/actions/actiontypes"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/compliance/projection"
	"github.com/assetregistry/registry/services/actions/compliance/roller"
	"github.com/assetregistry/registry/services/actions/due"
	"github.com/assetregistry/registry/services/actions/plans"
)

// rollerSettings are the compliance roller's flags.
var rollerSettings = struct {
	zone  string
	every time.Duration
}{zone: "UTC", every: time.Second}

// files are the migrations and the OpenAPI document, in the binary.
//
//go:embed migrations/*.sql openapi.yaml
var files embed.FS

// Spec describes the actions service to the service kit.
func Spec() servicekit.Spec {
	spec := servicekit.Embedded("actions", files)
	spec.Build = build
	spec.Flags = func(fs *flag.FlagSet) {
		fs.StringVar(&rollerSettings.zone, "compliance.zone", "UTC", "IANA time zone whose midnight begins a day for compliance.updated events (a date passing)")
		fs.DurationVar(&rollerSettings.every, "compliance.roll-every", time.Second, "how often the compliance roller announces the rows writes changed and goes on with a day's pass")
	}
	spec.Commands = map[string]servicekit.Command{
		"rebuild-compliance": {
			Summary: "rebuild the compliance read model from the assets service's listing and the actions table, then exit",
			Run:     rebuildCompliance,
		},
	}
	return spec
}

// build composes the service's components on one router and one
// reference registry, which the root's, the action documents' and the
// plans' stores declare their kinds to: the root (actions), action
// documents (actiondocs), the action types
// (actiontypes), inspection plans (plans) and GET /compliance
// (compliance, told which action types some plan is for); the protocol's
// internal routes share the router. Actions have no finds, so no cache.
// Beside the server run the compliance roller and, with NATS, the
// projection of the assets' change events into the read model, and the
// reference protocol's learning of new targets from their owners' events.
func build(d servicekit.Deps) (servicekit.Handlers, error) {
	registry := refs.New("actions", d.Store, d.Peers)
	timeout := endpoints.Timeout(d.RequestTimeout)
	st := NewStore(d.Store, registry)
	// The copy of who sees which asset, refreshed from the assets service
	// before a bound caller's call (pkg/access).
	seen := access.New(d.Store, d.Peers.Get("assets"))
	actions := NewService(st, registry, Tenancy{Seen: seen})
	routes := endpoints.NewRouter()
	endpoints.Mount(routes, Routes(actions), timeout)
	// Action documents follow their action's rules (the root's service);
	// the documents service says which documents a bound caller sees.
	endpoints.Mount(routes, actiondocs.Routes(actiondocs.NewService(st.Documents, registry,
		actiondocs.Settings{Actions: actions, Seen: seen, Documents: d.Peers.Get("documents")})), timeout)
	endpoints.Mount(routes, actiontypes.Routes(actiontypes.NewService(actiontypes.NewStore(d.Store))), timeout)
	inspection := plans.NewStore(d.Store, registry)
	endpoints.Mount(routes, plans.Routes(plans.NewService(inspection, registry)), timeout)
	read := compliance.NewStore(d.Store)
	endpoints.Mount(routes, compliance.Routes(compliance.NewService(read,
		compliance.Settings{Seen: seen, Planned: inspection.PlannedActionTypes})), timeout)
	refs.MakeServerEndpoints(registry, timeout).Mount(routes)
	handlers := servicekit.Handlers{Routes: routes, Maintenance: maintenance()}
	zone, err := time.LoadLocation(rollerSettings.zone)
	if err != nil {
		return handlers, fmt.Errorf("compliance.zone %q: %w", rollerSettings.zone, err)
	}
	// Transitions go to the outbox, which the relay publishes when it can.
	handlers.Jobs = append(handlers.Jobs, roller.New(roller.NewStore(d.Store), zone).Job(rollerSettings.every, d.Logger))
	// Connecting never fails on NATS being down: the connection keeps
	// trying in the background, and the consumer attaches once it can.
	nc, err := outbox.ConnectIfEnabled(d.NATS, "actions-compliance", d.Logger,
		"GET /compliance does not follow assets created or deleted")
	if nc == nil || err != nil {
		return handlers, err
	}
	handlers.Jobs = append(handlers.Jobs,
		projection.New(projection.NewStore(d.Store)).Job(nc, d.NATS, d.Logger),
		// The targets of an action, remembered as their owners create
		// them: the first action naming a new asset, person or
		// organization then asks no peer (pkg/refs, learn.go).
		registry.LearnFromEvents(nc, d.NATS, d.Logger, outbox.KindAsset, outbox.KindPerson, outbox.KindOrganization),
	)
	handlers.Close = nc.Close // once the jobs have stopped
	return handlers, nil
}

// rebuildCompliance is `actions rebuild-compliance`: the projection of the
// assets (their types and parents) from the assets service's listing,
// every latest action from the actions table, the meter readings from the
// assets service's listing of them (docs/operations.md).
func rebuildCompliance(ctx context.Context, d servicekit.Deps) error {
	registry := refs.New("actions", d.Store, d.Peers)
	report, err := rebuild(ctx, d.Store, registry, access.New(d.Store, d.Peers.Get("assets")))
	if err != nil {
		return fmt.Errorf("rebuild compliance: %w", err)
	}
	fmt.Fprintf(os.Stdout, "compliance rebuilt: %d assets listed, %d rows of assets no longer listed removed, %d latest actions, %d meter readings listed\n",
		report.Assets, report.Removed, report.Latest, report.Readings)
	return nil
}

// rebuild is what rebuild-compliance does: Projection.Rebuild over the
// listing of assets (which also teaches seen), then the meter readings
// the read model lacks, which usage plans count.
func rebuild(ctx context.Context, db *store.Store, registry *refs.Registry, seen *access.Copy) (projection.RebuildReport, error) {
	report, err := projection.New(projection.NewStore(db)).Rebuild(ctx, learning(ListAssetsOf(registry), seen))
	if err != nil {
		return report, err
	}
	report.Readings, err = due.NewStore(db).RelearnReadings(ctx, registry)
	return report, err
}

// learning is list that also has the copy of who sees which asset
// (pkg/access) learn the access of every asset listed: a rebuild leaves
// the copy knowing every asset, those created before the copy was kept
// and those whose events it missed, so /compliance and the lists of
// actions show a bound caller every asset it sees.
func learning(list projection.AssetLister, seen *access.Copy) projection.AssetLister {
	return func(ctx context.Context, after uuid.UUID) ([]projection.ListedAsset, error) {
		page, err := list(ctx, after)
		if err != nil || len(page) == 0 {
			return page, err
		}
		ids := make([]string, len(page))
		for i, a := range page {
			ids[i] = a.ID.String()
		}
		if _, err := seen.Lookup(ctx, ids); err != nil { // what the copy lacks, in batches
			return nil, err
		}
		return page, nil
	}
}

// listPage is how many assets one call of the rebuild's listing asks for.
const listPage = 5000

// ListAssetsOf is the AssetLister over the assets service's side of the
// reference protocol (its internal listing).
func ListAssetsOf(registry *refs.Registry) projection.AssetLister {
	return func(ctx context.Context, after uuid.UUID) ([]projection.ListedAsset, error) {
		found, err := registry.ListOwned(ctx, "asset", after, listPage)
		if err != nil {
			return nil, err
		}
		out := make([]projection.ListedAsset, 0, len(found))
		for _, f := range found {
			typeID, err := uuid.Parse(f.Attrs["asset_type_id"])
			if err != nil {
				return nil, fmt.Errorf("asset %s: asset_type_id %q: %w", f.ID, f.Attrs["asset_type_id"], err)
			}
			a := projection.ListedAsset{ID: f.ID, AssetTypeID: typeID}
			if p, ok := f.Attrs["parent_asset_id"]; ok {
				parent, err := uuid.Parse(p)
				if err != nil {
					return nil, fmt.Errorf("asset %s: parent_asset_id %q: %w", f.ID, p, err)
				}
				a.Parent = &parent
			}
			out = append(out, a)
		}
		return out, nil
	}
}
