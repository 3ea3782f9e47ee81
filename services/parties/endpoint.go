package parties

import (
	"context"
	"net/url"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
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
	OrganizationPeople endpoint.Endpoint

	CreatePerson        endpoint.Endpoint
	GetPerson           endpoint.Endpoint
	ListPeople          endpoint.Endpoint
	FindPerson          endpoint.Endpoint
	UpdatePerson        endpoint.Endpoint
	DeletePerson        endpoint.Endpoint
	PersonOrganizations endpoint.Endpoint

	Link   endpoint.Endpoint
	Unlink endpoint.Endpoint
}

// MakeEndpoints adapts s; every endpoint gets the middleware, in order.
func MakeEndpoints(s Service, middleware ...endpoint.Middleware) Endpoints {
	e := Endpoints{
		CreateOrganization: endpoints.ByCaller(endpoints.Created(s.CreateOrganization, func(o OrganizationDetail) string {
			return "/organizations/" + o.ID.String()
		})),
		GetOrganization:   endpoints.New(s.GetOrganization),
		ListOrganizations: endpoints.New(endpoints.List(s.ListOrganizations)),
		FindOrganization: endpoints.New(func(ctx context.Context, req httpx.FindRequest[OrganizationQuery]) (OrganizationDetail, error) {
			return s.FindOrganization(ctx, req.Criteria)
		}),
		UpdateOrganization: endpoints.Guarded(endpoints.ByID(s.UpdateOrganization)),
		DeleteOrganization: endpoints.Guarded(endpoints.NoContent(s.DeleteOrganization)),
		OrganizationPeople: endpoints.New(endpoints.Links(s.OrganizationPeople)),

		CreatePerson:        endpoints.ByCaller(endpoints.Created(s.CreatePerson, personLocation)),
		GetPerson:           endpoints.New(s.GetPerson),
		ListPeople:          endpoints.New(endpoints.List(s.ListPeople)),
		FindPerson:          endpoints.ByCaller(endpoints.FindOrCreate(s.FindPerson, personLocation)),
		UpdatePerson:        endpoints.Guarded(endpoints.ByID(s.UpdatePerson)),
		DeletePerson:        endpoints.Guarded(endpoints.NoContent(s.DeletePerson)),
		PersonOrganizations: endpoints.New(endpoints.Links(s.PersonOrganizations)),

		Link: endpoints.ByCaller(func(ctx context.Context, by model.Caller, in LinkInput) (any, error) {
			l, created, err := s.Link(ctx, by, in)
			if created {
				return httpx.Created{Value: l, Location: linkLocation(l)}, err
			}
			return l, err
		}),
		Unlink: endpoints.Guarded(func(ctx context.Context, g model.Guard, in LinkInput) (any, error) {
			return httpx.NoContent{}, s.Unlink(ctx, g, in)
		}),
	}
	// The find cache answers finds with the JSON it holds.
	if c, ok := s.(*cachingService); ok {
		e.FindOrganization = endpoints.New(func(ctx context.Context, req httpx.FindRequest[OrganizationQuery]) (any, error) {
			return c.findOrganizationAnswer(ctx, req.Criteria)
		})
		e.FindPerson = endpoints.ByCaller(func(ctx context.Context, by model.Caller, req httpx.FindRequest[PersonInput]) (any, error) {
			return c.findPersonAnswer(ctx, by, req.Criteria, req.Create)
		})
	}
	endpoints.Wrap(&e, middleware...)
	return e
}

// personAnswer is what a person find answers: a created person is a 201
// with its Location.
func personAnswer(p PersonDetail, created bool, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if created {
		return httpx.Created{Value: p, Location: personLocation(p)}, nil
	}
	return p, nil
}

func personLocation(p PersonDetail) string { return "/people/" + p.ID.String() }

// linkLocation names a link by its path and relation type; links have no
// id of their own.
func linkLocation(l Link) string {
	return "/people/" + l.PersonID.String() + "/organizations/" + l.OrganizationID.String() +
		"?relation_type=" + url.QueryEscape(l.RelationType)
}
