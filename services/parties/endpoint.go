package parties

import (
	"context"
	"net/url"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/kit"
	"github.com/assetregistry/registry/pkg/listing"
)

// Endpoints holds one go-kit endpoint per operation. Each adapts a Service
// method and says which success status applies; everything HTTP-specific
// beyond that lives in the transport.
type Endpoints struct {
	CreateOrganization endpoint.Endpoint
	GetOrganization    endpoint.Endpoint
	ListOrganizations  endpoint.Endpoint
	FindOrganization   endpoint.Endpoint
	UpdateOrganization endpoint.Endpoint
	DeleteOrganization endpoint.Endpoint

	CreatePerson endpoint.Endpoint
	GetPerson    endpoint.Endpoint
	ListPeople   endpoint.Endpoint
	FindPerson   endpoint.Endpoint
	UpdatePerson endpoint.Endpoint
	DeletePerson endpoint.Endpoint

	Link   endpoint.Endpoint
	Unlink endpoint.Endpoint
}

// Request types that are not one of kit's shared shapes.
type (
	listOrganizationsRequest struct {
		Filter OrganizationFilter
		Page   listing.Page
	}
	listPeopleRequest struct {
		Filter PersonFilter
		Page   listing.Page
	}
)

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateOrganization: kit.Endpoint(func(ctx context.Context, in OrganizationInput) (any, error) {
			o, err := s.CreateOrganization(ctx, in)
			return httpx.Created{Value: o, Location: "/organizations/" + o.ID.String()}, err
		}),
		GetOrganization: kit.Endpoint(s.GetOrganization),
		ListOrganizations: kit.Endpoint(func(ctx context.Context, req listOrganizationsRequest) (any, error) {
			r, err := s.ListOrganizations(ctx, req.Filter, req.Page)
			return httpx.ListOf(r), err
		}),
		FindOrganization: kit.Endpoint(func(ctx context.Context, req kit.FindRequest[OrganizationQuery]) (OrganizationDetail, error) {
			return s.FindOrganization(ctx, req.Criteria)
		}),
		UpdateOrganization: kit.Endpoint(func(ctx context.Context, req kit.IDBody[OrganizationPatch]) (OrganizationDetail, error) {
			return s.UpdateOrganization(ctx, req.ID, req.Body)
		}),
		DeleteOrganization: kit.Endpoint(kit.NoContent(s.DeleteOrganization)),

		CreatePerson: kit.Endpoint(func(ctx context.Context, in PersonInput) (any, error) {
			p, err := s.CreatePerson(ctx, in)
			return httpx.Created{Value: p, Location: "/people/" + p.ID.String()}, err
		}),
		GetPerson: kit.Endpoint(s.GetPerson),
		ListPeople: kit.Endpoint(func(ctx context.Context, req listPeopleRequest) (any, error) {
			r, err := s.ListPeople(ctx, req.Filter, req.Page)
			return httpx.ListOf(r), err
		}),
		FindPerson: kit.Endpoint(func(ctx context.Context, req kit.FindRequest[PersonInput]) (any, error) {
			p, created, err := s.FindPerson(ctx, req.Criteria, req.Create)
			if created {
				return httpx.Created{Value: p, Location: "/people/" + p.ID.String()}, err
			}
			return p, err
		}),
		UpdatePerson: kit.Endpoint(func(ctx context.Context, req kit.IDBody[PersonPatch]) (PersonDetail, error) {
			return s.UpdatePerson(ctx, req.ID, req.Body)
		}),
		DeletePerson: kit.Endpoint(kit.NoContent(s.DeletePerson)),

		Link: kit.Endpoint(func(ctx context.Context, in LinkInput) (any, error) {
			l, created, err := s.Link(ctx, in)
			if created {
				return httpx.Created{Value: l, Location: linkLocation(l)}, err
			}
			return l, err
		}),
		Unlink: kit.Endpoint(func(ctx context.Context, in LinkInput) (any, error) {
			return httpx.NoContent{}, s.Unlink(ctx, in)
		}),
	}
	kit.Wrap(&e, middleware...)
	return e
}

// linkLocation names a link by its path and relation type; links have no
// id of their own.
func linkLocation(l Link) string {
	return "/people/" + l.PersonID.String() + "/organizations/" + l.OrganizationID.String() +
		"?relation_type=" + url.QueryEscape(l.RelationType)
}
