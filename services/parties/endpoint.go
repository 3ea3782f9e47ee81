package parties

import (
	"context"
	"net/url"

	"github.com/go-kit/kit/endpoint"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// The endpoints of parties that the adapters of pkg/endpoints do not make
// alone; the route table (transport.go) names the rest where it routes
// them.

// findOrganization is the organization find; the find cache answers it
// with the JSON it holds.
func findOrganization(s Service) endpoint.Endpoint {
	if c, ok := s.(*cachingService); ok {
		return endpoints.New(func(ctx context.Context, req httpx.FindRequest[OrganizationQuery]) (any, error) {
			return c.findOrganizationAnswer(ctx, req.Criteria)
		})
	}
	return endpoints.New(func(ctx context.Context, req httpx.FindRequest[OrganizationQuery]) (OrganizationDetail, error) {
		return s.FindOrganization(ctx, req.Criteria)
	})
}

// findPerson is the person find, which may create; the find cache answers
// it with the JSON it holds.
func findPerson(s Service) endpoint.Endpoint {
	if c, ok := s.(*cachingService); ok {
		return endpoints.ByCaller(func(ctx context.Context, by model.Caller, req httpx.FindRequest[PersonInput]) (any, error) {
			return c.findPersonAnswer(ctx, by, req.Criteria, req.Create)
		})
	}
	return endpoints.ByCaller(endpoints.FindOrCreate(s.FindPerson, personLocation))
}

// link answers a new link with 201 and its Location, one that existed
// with 200.
func link(s Service) endpoint.Endpoint {
	return endpoints.ByCaller(func(ctx context.Context, by model.Caller, in LinkInput) (any, error) {
		l, created, err := s.Link(ctx, by, in)
		if created {
			return httpx.Created{Value: l, Location: linkLocation(l)}, err
		}
		return l, err
	})
}

// unlink answers 204.
func unlink(s Service) endpoint.Endpoint {
	return endpoints.Guarded(func(ctx context.Context, g model.Guard, in LinkInput) (any, error) {
		return httpx.NoContent{}, s.Unlink(ctx, g, in)
	})
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

func organizationLocation(o OrganizationDetail) string { return "/organizations/" + o.ID.String() }

func personLocation(p PersonDetail) string { return "/people/" + p.ID.String() }

// linkLocation names a link by its path and relation type; links have no
// id of their own.
func linkLocation(l Link) string {
	return "/people/" + l.PersonID.String() + "/organizations/" + l.OrganizationID.String() +
		"?relation_type=" + url.QueryEscape(l.RelationType)
}
