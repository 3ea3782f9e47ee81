package parties

import (
	"context"
	"net/url"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
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

// Request types that are not one of httpx's shared shapes.
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
		CreateOrganization: endpoints.New(endpoints.Created(s.CreateOrganization, func(o OrganizationDetail) string {
			return "/organizations/" + o.ID.String()
		})),
		GetOrganization: endpoints.New(s.GetOrganization),
		ListOrganizations: endpoints.New(func(ctx context.Context, req listOrganizationsRequest) (any, error) {
			r, err := s.ListOrganizations(ctx, req.Filter, req.Page)
			return httpx.ListOf(r), err
		}),
		FindOrganization: endpoints.New(func(ctx context.Context, req httpx.FindRequest[OrganizationQuery]) (OrganizationDetail, error) {
			return s.FindOrganization(ctx, req.Criteria)
		}),
		UpdateOrganization: endpoints.New(func(ctx context.Context, req httpx.IDBody[OrganizationPatch]) (OrganizationDetail, error) {
			return s.UpdateOrganization(ctx, req.ID, req.Body)
		}),
		DeleteOrganization: endpoints.New(endpoints.NoContent(s.DeleteOrganization)),

		CreatePerson: endpoints.New(endpoints.Created(s.CreatePerson, personLocation)),
		GetPerson:    endpoints.New(s.GetPerson),
		ListPeople: endpoints.New(func(ctx context.Context, req listPeopleRequest) (any, error) {
			r, err := s.ListPeople(ctx, req.Filter, req.Page)
			return httpx.ListOf(r), err
		}),
		FindPerson: endpoints.New(func(ctx context.Context, req httpx.FindRequest[PersonInput]) (any, error) {
			p, created, err := s.FindPerson(ctx, req.Criteria, req.Create)
			if created {
				return httpx.Created{Value: p, Location: personLocation(p)}, err
			}
			return p, err
		}),
		UpdatePerson: endpoints.New(func(ctx context.Context, req httpx.IDBody[PersonPatch]) (PersonDetail, error) {
			return s.UpdatePerson(ctx, req.ID, req.Body)
		}),
		DeletePerson: endpoints.New(endpoints.NoContent(s.DeletePerson)),

		Link: endpoints.New(func(ctx context.Context, in LinkInput) (any, error) {
			l, created, err := s.Link(ctx, in)
			if created {
				return httpx.Created{Value: l, Location: linkLocation(l)}, err
			}
			return l, err
		}),
		Unlink: endpoints.New(func(ctx context.Context, in LinkInput) (any, error) {
			return httpx.NoContent{}, s.Unlink(ctx, in)
		}),
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

func personLocation(p PersonDetail) string { return "/people/" + p.ID.String() }

// linkLocation names a link by its path and relation type; links have no
// id of their own.
func linkLocation(l Link) string {
	return "/people/" + l.PersonID.String() + "/organizations/" + l.OrganizationID.String() +
		"?relation_type=" + url.QueryEscape(l.RelationType)
}
