// Package catalog is the one list of the registry's deployables: which
// services exist, which public resources each owns, what each needs and
// which peers it calls. The gateway's route table, `make run`'s launcher and
// the test stack read it at run time; the Makefile's module list, go.work,
// the container build, skaffold.yaml and the Helm umbrella chart are
// generated from it (`make generate`, checked by a test), so adding a service
// is its folder plus one entry in Services.
package catalog

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Datastore is something a service needs besides its peers.
type Datastore string

// The datastores a service can need.
const (
	Postgres    Datastore = "postgres" // its own schema
	Redis       Datastore = "redis"    // the find cache, the assets' access watermark
	ObjectStore Datastore = "s3"       // S3-compatible object storage (MinIO locally)
	// NATS is the JetStream stream of change events: a service that needs
	// it records an event for every write in its outbox (its own schema)
	// and runs the relay that publishes them (pkg/outbox); the events
	// service consumes it.
	NATS Datastore = "nats"
)

// Resource is one public resource: its documentation name (/docs/<name>)
// and the first path segments that reach it through the gateway.
type Resource struct {
	Name     string
	Prefixes []string
	// Under names resources of other services whose /<prefix>/{id}/<Name>
	// paths are this resource's instead of their owner's (the events
	// service answers /organizations/{id}/history). Such a resource has no
	// prefixes of its own.
	Under []string
	// Query, for a resource Under others, makes it answer instead a GET of
	// /<prefix>/{id} that carries this query parameter (the events service
	// answers GET /assets/{id}?as_of=... from the asset's history); its
	// Name is then no path segment.
	Query string
	// Anonymous are the routes of this resource that answer without a
	// token, as ServeMux patterns ("GET /log/checkpoint"): the gateway
	// passes them on unauthenticated, each call charged to its source
	// address, and the service declares them endpoints.Anonymous.
	Anonymous []string
	// Nested, for a resource Under others, also routes the paths below its
	// name to it (/assets/{id}/passport_links/{link_id}); otherwise a
	// deeper path stays the parent's.
	Nested bool
	// ChargedBySize: its answers may declare what they cost the client's
	// rate-limit budget by their size (httpx.CostHeader, a passport), and
	// the gateway charges it; the gateway watches only these answers for
	// the declaration (and strips it from every other).
	ChargedBySize bool
}

// Deployable is one binary of the registry with its local ports.
type Deployable struct {
	Name        string // binary, image, chart and (for services) schema name
	Module      string // its Go module, relative to the repository root
	Command     string // its main package, relative to the repository root
	Port        int    // API port under `make run`
	MetricsPort int    // metrics (and pprof) port under `make run`
}

// Service is a deployable that owns resources.
type Service struct {
	Deployable
	Resources []Resource
	Needs     []Datastore
	// Kinds are the things this service owns that others may point at
	// (the kind names of pkg/refs: "person", "document", ...).
	Kinds []string
	// References are the kinds of other services this one points at. Its
	// writes ask their owner whether the target exists; their owner asks
	// this service, before a delete, what still points at the target.
	References []Reference
	// Reads are the services whose internal routes this one reads without
	// referencing a kind of theirs (the events service reads the assets
	// service's owners and grants for its copy, pkg/access). Like a
	// reference, a read makes the two peers: this one calls, the other
	// lets it in.
	Reads []string
	// DeliversWebhooks: the service sends requests to its subscribers'
	// receivers, outside the registry, so its network policy lets it
	// reach public addresses on the ports the operator allows.
	DeliversWebhooks bool
}

// Reference is a kind owned by another service.
type Reference struct {
	Service string
	Kind    string
}

// Gateway and IdentityProvider are the two deployables that are not services.
var (
	Gateway = Deployable{
		Name: "api-gateway", Module: "api-gateway", Command: "api-gateway/cmd/api-gateway",
		Port: 8080, MetricsPort: 9080,
	}
	IdentityProvider = Deployable{
		Name: "idp", Module: "idp", Command: "idp/cmd/idp",
		Port: 8090, MetricsPort: 9090,
	}
)

// Services are the registry's services, in start order.
var Services = []Service{
	{
		Deployable: service("parties", 8101),
		Resources: []Resource{
			{Name: "organizations", Prefixes: []string{"/organizations", "/organization"}},
			{Name: "people", Prefixes: []string{"/people"}},
		},
		Needs: []Datastore{Postgres, Redis, NATS},
		Kinds: []string{"organization", "person"},
	},
	{
		Deployable: service("documents", 8102),
		Resources:  []Resource{{Name: "documents", Prefixes: []string{"/documents"}}},
		Needs:      []Datastore{Postgres, ObjectStore, NATS},
		Kinds:      []string{"document"},
	},
	{
		Deployable: service("assets", 8103),
		Resources: []Resource{
			{Name: "asset_types", Prefixes: []string{"/asset_types"}},
			{Name: "assets", Prefixes: []string{"/assets"}},
			// Custody transfers of assets between organizations.
			{Name: "transfers", Prefixes: []string{"/transfers"}},
		},
		Needs: []Datastore{Postgres, Redis, NATS},
		Kinds: []string{"asset_type", "asset", "asset_component", "meter_reading", "transfer"},
		// An asset names its responsible person and its owner organization
		// (and the organizations holding grants on it or receiving it); an
		// asset type attaches documents and takes one as its thumbnail.
		References: []Reference{{Service: "parties", Kind: "person"}, {Service: "parties", Kind: "organization"},
			{Service: "documents", Kind: "document"}},
	},
	{
		Deployable: service("actions", 8104),
		// Action documents live under /actions/{action_id}/action_documents.
		// Compliance is the read model of what is due, over the actions and
		// a projection of the assets (docs/architecture.md); inspection
		// plans say when an action falls due.
		Resources: []Resource{{Name: "actions", Prefixes: []string{"/actions"}}, {Name: "compliance", Prefixes: []string{"/compliance"}},
			{Name: "inspection_plans", Prefixes: []string{"/inspection_plans"}}, {Name: "action_types", Prefixes: []string{"/action_types"}}},
		// Redis: the assets' access watermark, which spares a bound read
		// the call to the assets service while nothing changed (pkg/access).
		Needs: []Datastore{Postgres, Redis, NATS},
		Kinds: []string{"action", "action_document", "inspection_plan", "compliance", "action_type"},
		// An action names its asset and the person and organization that
		// did the work; an action document links a document; a plan names
		// its asset type.
		References: []Reference{{Service: "assets", Kind: "asset"}, {Service: "assets", Kind: "asset_type"},
			{Service: "parties", Kind: "person"}, {Service: "parties", Kind: "organization"}, {Service: "documents", Kind: "document"}},
	},
	{
		Deployable: service("events", 8105),
		// The change feed and webhooks, fed by every service's events;
		// each resource's history sits under the resource's own path.
		Resources: []Resource{
			{Name: "events", Prefixes: []string{"/events"}},
			{Name: "webhooks", Prefixes: []string{"/webhooks"}},
			{Name: "history", Under: []string{"organizations", "people", "asset_types", "assets", "actions", "documents"}},
			// An asset's record with the log's proofs, for offline checks.
			{Name: "passport", Under: []string{"assets"}, ChargedBySize: true},
			// An asset's passport links, and the passports they open, which
			// answer without a token (the token in the path is the
			// capability).
			{Name: "passport_links", Under: []string{"assets"}, Nested: true},
			{Name: "passports", Prefixes: []string{"/passports"}, Anonymous: []string{"GET /passports/{token}"}, ChargedBySize: true},
			// A resource as it was at an instant, from its history.
			{Name: "as_of", Query: "as_of", Under: []string{"organizations", "people", "asset_types", "assets", "actions", "documents"}},
			// The transparency log over every event: checkpoints, proofs, keys.
			// Its checkpoint and keys answer without a token: a stranger
			// handed a passport needs them to check it.
			{Name: "log", Prefixes: []string{"/log"}, Anonymous: []string{"GET /log/checkpoint", "GET /log/keys", "GET /log/tile/{tile...}"}},
		},
		// It keeps a copy of who sees which asset (pkg/access), read from
		// the assets service, to answer bound clients; a passport carries
		// the asset's compliance rows, read from the actions service.
		Reads: []string{"actions", "assets"},
		// It reads the stream the others' relays publish to, and the
		// assets' access watermark in Redis (pkg/access).
		Needs:            []Datastore{Postgres, Redis, NATS},
		DeliversWebhooks: true,
	},
}

// service fills in the conventions every service follows: module and
// command under services/<name>, metrics port 1000 above the API port.
func service(name string, port int) Deployable {
	return Deployable{
		Name: name, Module: "services/" + name, Command: "services/" + name + "/cmd/" + name,
		Port: port, MetricsPort: port + 1000,
	}
}

// Lookup returns the named service.
func Lookup(name string) (Service, bool) {
	i := slices.IndexFunc(Services, func(s Service) bool { return s.Name == name })
	if i < 0 {
		return Service{}, false
	}
	return Services[i], true
}

// Names returns the service names in catalog order.
func Names() []string {
	names := make([]string, len(Services))
	for i, s := range Services {
		names[i] = s.Name
	}
	return names
}

// Deployables returns the gateway, the identity provider and every service.
func Deployables() []Deployable {
	all := []Deployable{Gateway, IdentityProvider}
	for _, s := range Services {
		all = append(all, s.Deployable)
	}
	return all
}

// NeedsStore reports whether s needs d.
func (s Service) NeedsStore(d Datastore) bool { return slices.Contains(s.Needs, d) }

// Peers are the services s calls: the owners of what it references (to
// check that a target exists) and the services that reference what it owns
// (to ask what still points at something before deleting it). Calls are
// per request, so a cycle between two services is fine.
func (s Service) Peers() []string {
	var peers []string
	for _, r := range s.References {
		peers = append(peers, r.Service)
	}
	peers = append(peers, s.Reads...)
	peers = append(peers, s.Referrers()...)
	slices.Sort(peers)
	return slices.Compact(peers)
}

// Referrers are the services that reference a kind s owns, or read its
// internal routes (Reads).
func (s Service) Referrers() []string {
	var out []string
	for _, other := range Services {
		for _, r := range other.References {
			if r.Service == s.Name && !slices.Contains(out, other.Name) {
				out = append(out, other.Name)
			}
		}
		if slices.Contains(other.Reads, s.Name) && !slices.Contains(out, other.Name) {
			out = append(out, other.Name)
		}
	}
	return out
}

// OwnerOf returns the service that owns kind.
func OwnerOf(kind string) (string, bool) {
	for _, s := range Services {
		if slices.Contains(s.Kinds, kind) {
			return s.Name, true
		}
	}
	return "", false
}

// ReferrersOf returns the services that reference kind of owner.
func ReferrersOf(owner, kind string) []string {
	var out []string
	for _, s := range Services {
		if slices.Contains(s.References, Reference{Service: owner, Kind: kind}) {
			out = append(out, s.Name)
		}
	}
	return out
}

// Resources returns every public resource with the service that owns it.
func Resources() []OwnedResource {
	var out []OwnedResource
	for _, s := range Services {
		for _, r := range s.Resources {
			out = append(out, OwnedResource{Resource: r, Service: s.Name})
		}
	}
	return out
}

// Route returns the resource that answers path and its owner: the
// resource whose prefix starts it, unless path is /<prefix>/<id>/<name>
// for a resource declared Under that one. matched is the prefix that
// starts path. It allocates nothing: the gateway calls it on every request.
func Route(path string) (r OwnedResource, matched string, ok bool) {
	for _, s := range Services {
		for _, res := range s.Resources {
			for _, p := range res.Prefixes {
				if strings.HasPrefix(path, p) && (len(path) == len(p) || path[len(p)] == '/') {
					if under, owner, found := under(res.Name, path[len(p):]); found {
						return OwnedResource{Resource: under, Service: owner}, p, true
					}
					return OwnedResource{Resource: res, Service: s.Name}, p, true
				}
			}
		}
	}
	return OwnedResource{}, "", false
}

// under finds the resource declared Under parent whose name is the
// segment after the id when rest is "/<id>/<name>", or "/<id>/<name>/..."
// for a Nested one.
func under(parent, rest string) (Resource, string, bool) {
	if len(rest) < 2 || rest[0] != '/' {
		return Resource{}, "", false
	}
	id, name, found := strings.Cut(rest[1:], "/")
	name, deeper, _ := strings.Cut(name, "/")
	if !found || id == "" || name == "" {
		return Resource{}, "", false
	}
	for _, s := range Services {
		for _, res := range s.Resources {
			if res.Name == name && res.Query == "" && slices.Contains(res.Under, parent) && (deeper == "" || res.Nested) {
				return res, s.Name, true
			}
		}
	}
	return Resource{}, "", false
}

// RouteRequest is Route for a request: a GET (or HEAD) of /<prefix>/<id>
// whose query carries the Query parameter of a resource declared Under the
// one the path names is that resource's. It allocates nothing unless the
// query escapes a parameter's name.
func RouteRequest(method, path, rawQuery string) (r OwnedResource, matched string, ok bool) {
	r, matched, ok = Route(path)
	if !ok || rawQuery == "" || (method != "GET" && method != "HEAD") {
		return r, matched, ok
	}
	rest := path[len(matched):]
	if len(rest) < 2 || rest[0] != '/' || strings.Contains(rest[1:], "/") {
		return r, matched, ok
	}
	for _, s := range Services {
		for _, res := range s.Resources {
			if res.Query != "" && slices.Contains(res.Under, r.Name) && hasParam(rawQuery, res.Query) {
				return OwnedResource{Resource: res, Service: s.Name}, matched, true
			}
		}
	}
	return r, matched, ok
}

// hasParam reports whether the raw query names the parameter name.
func hasParam(rawQuery, name string) bool {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		key, _, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(key, "%+") {
			if unescaped, err := url.QueryUnescape(key); err == nil {
				key = unescaped
			}
		}
		if key == name {
			return true
		}
	}
	return false
}

// OwnedResource is a resource with its owner.
type OwnedResource struct {
	Resource
	Service string
}

var (
	nameRule   = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)
	prefixRule = regexp.MustCompile(`^/[a-z_]+$`)
)

// Validate checks the catalog's own rules: unique names, ports and
// prefixes; peers that exist; prefixes that cannot shadow each other and
// that keep clear of the paths the gateway and services answer themselves.
func Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	ports := map[int]string{}
	names := map[string]bool{}
	for _, d := range Deployables() {
		if !nameRule.MatchString(d.Name) {
			add("%s: name must match %s", d.Name, nameRule)
		}
		if names[d.Name] {
			add("%s: name used twice", d.Name)
		}
		names[d.Name] = true
		for _, p := range []int{d.Port, d.MetricsPort} {
			if other, taken := ports[p]; taken {
				add("%s: port %d is %s's already", d.Name, p, other)
			}
			ports[p] = d.Name
		}
	}
	reserved := []string{"/healthz", "/readyz", "/docs", "/verify", "/openapi", "/internal", "/metrics", "/oidc", "/.well-known"}
	prefixes := map[string]string{}
	resources := map[string]bool{}
	kinds := map[string]string{}
	for _, s := range Services {
		for _, k := range s.Kinds {
			if owner, taken := kinds[k]; taken {
				add("%s: kind %s is %s's already", s.Name, k, owner)
			}
			kinds[k] = s.Name
		}
		if !strings.HasPrefix(s.Module, "services/") {
			add("%s: module must be under services/", s.Name)
		}
		for _, r := range s.References {
			owner, ok := Lookup(r.Service)
			if !ok || owner.Name == s.Name || !slices.Contains(owner.Kinds, r.Kind) {
				add("%s: reference %s/%s names no kind of another service", s.Name, r.Service, r.Kind)
			}
		}
		for _, r := range s.Resources {
			if resources[r.Name] {
				add("%s: resource %s declared twice", s.Name, r.Name)
			}
			resources[r.Name] = true
			if len(r.Under) > 0 && len(r.Prefixes) > 0 {
				add("%s: resource %s is under others and cannot have prefixes", s.Name, r.Name)
			}
			if r.Query != "" && len(r.Under) == 0 {
				add("%s: resource %s answers a query parameter under no resource", s.Name, r.Name)
			}
			for _, parent := range r.Under {
				owner := ""
				for _, other := range Resources() {
					if other.Name == parent && len(other.Prefixes) > 0 {
						owner = other.Service
					}
				}
				if owner == "" || owner == s.Name {
					add("%s: resource %s is under %q, which is no resource of another service", s.Name, r.Name, parent)
				}
			}
			for _, pattern := range r.Anonymous {
				method, path, _ := strings.Cut(pattern, " ")
				owned := slices.ContainsFunc(r.Prefixes, func(p string) bool { return strings.HasPrefix(path, p+"/") })
				if method != "GET" || !owned {
					add("%s: anonymous route %q must be a GET under one of resource %s's prefixes", s.Name, pattern, r.Name)
				}
			}
			for _, p := range r.Prefixes {
				if !prefixRule.MatchString(p) {
					add("%s: prefix %q must be one lowercase path segment", s.Name, p)
				}
				if slices.Contains(reserved, p) {
					add("%s: prefix %q is reserved", s.Name, p)
				}
				if owner, taken := prefixes[p]; taken {
					add("%s: prefix %q is %s's already", s.Name, p, owner)
				}
				prefixes[p] = s.Name
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("catalog: %s", strings.Join(problems, "; "))
	}
	return nil
}
