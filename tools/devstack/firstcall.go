package devstack

import (
	"fmt"
	"slices"

	"github.com/assetregistry/registry/pkg/catalog"
)

// FirstCallPath is the path of the README's first call: a token from the
// identity provider, then GET FirstCallPath through the gateway.
const FirstCallPath = "/organizations"

// FirstCall returns the deployables the README's first call goes through,
// in start order: the identity provider (the token), the service that
// answers FirstCallPath and the gateway. make run builds their binaries
// first (FIRST_CALL_COMMANDS in catalog.mk) and, with
// Options.FirstCallFirst, the stack starts them before anything else.
func FirstCall() []catalog.Deployable {
	r, _, ok := catalog.Route(FirstCallPath)
	svc, found := catalog.Lookup(r.Service)
	if !ok || !found {
		panic(fmt.Sprintf("devstack: no service answers the first call's path %s", FirstCallPath))
	}
	return []catalog.Deployable{catalog.IdentityProvider, svc.Deployable, catalog.Gateway}
}

// joinPlan is what a stack starts after Start has returned: the services
// that join later, in catalog order, and the private servers they wait for.
type joinPlan struct {
	services []catalog.Service
	// nats: the private NATS server starts late. The services started
	// first get its address and user up front; their relays connect when
	// it is up, and their writes record their events in the outbox
	// meanwhile (NATS down never stops a write).
	nats bool
	// objectStore: the private object store (MinIO) starts late, built at
	// the lowest CPU priority first if it is not built yet.
	objectStore bool
}

// planJoin says what of the stack o starts joins later.
//
// With FirstCallFirst: everything but FirstCall and the datastores its
// service cannot answer without (PostgreSQL and Redis; NATS only feeds
// its relay). With ObjectStoreLater alone: the private object store and
// the services that need it. Otherwise nothing.
func planJoin(o Options) joinPlan {
	var p joinPlan
	first := FirstCall()
	isFirst := func(svc catalog.Service) bool {
		return slices.ContainsFunc(first, func(d catalog.Deployable) bool { return d.Name == svc.Name })
	}
	firstNeeds := func(d catalog.Datastore) bool {
		for _, svc := range catalog.Services {
			if isFirst(svc) && svc.NeedsStore(d) {
				return true
			}
		}
		return false
	}
	p.objectStore = o.S3.Endpoint == "" && (o.ObjectStoreLater || o.FirstCallFirst && !firstNeeds(catalog.ObjectStore))
	p.nats = o.FirstCallFirst && o.NATS.URL == "" && !o.Clusters
	for _, svc := range catalog.Services {
		if o.FirstCallFirst && !isFirst(svc) || p.objectStore && svc.NeedsStore(catalog.ObjectStore) {
			p.services = append(p.services, svc)
		}
	}
	return p
}

// empty reports whether nothing joins later.
func (p joinPlan) empty() bool { return len(p.services) == 0 && !p.nats && !p.objectStore }

// later reports whether svc joins later.
func (p joinPlan) later(svc catalog.Service) bool {
	return slices.ContainsFunc(p.services, func(l catalog.Service) bool { return l.Name == svc.Name })
}

// Names of the services that join later, in catalog order.
func (p joinPlan) names() []string {
	names := make([]string, len(p.services))
	for i, svc := range p.services {
		names[i] = svc.Name
	}
	return names
}
