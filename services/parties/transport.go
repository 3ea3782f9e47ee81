package parties

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// Routes is the route table of parties: per route the operation's
// endpoint, its decoder and its rules: the request headers it takes
// (If-Match on writes to a resource, Idempotency-Key on creates; the
// conformance test holds them to the OpenAPI document) and who may call
// it.
func Routes(s Service) []endpoints.Route {
	const linkPath = "/people/{person_id}/organizations/{organization_id}"
	// cached: answered from Redis until a write changes it (cache.go)
	findOrg := findOrganization(s)
	return []endpoints.Route{
		endpoints.On("POST", "/organizations", endpoints.ByCaller(endpoints.Created(s.CreateOrganization, organizationLocation)),
			httpx.Body[OrganizationInput], endpoints.IdempotencyKey),
		endpoints.On("GET", "/organizations", endpoints.New(endpoints.List(s.ListOrganizations)), decodeListOrganizations),
		endpoints.On("GET", "/organizations/{id}", endpoints.New(s.GetOrganization), httpx.PathID),
		endpoints.On("PATCH", "/organizations/{id}", endpoints.Guarded(endpoints.ByID(s.UpdateOrganization)),
			httpx.PathIDBody[OrganizationPatch], endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("DELETE", "/organizations/{id}", endpoints.Guarded(endpoints.NoContent(s.DeleteOrganization)),
			httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("GET", "/organizations/{id}/people", endpoints.New(endpoints.Links(s.OrganizationPeople)), httpx.PathLinks),
		endpoints.On("POST", "/organizations/find", findOrg, httpx.Find[OrganizationQuery](false), endpoints.IdempotencyKey),
		// the interface's singular spelling
		endpoints.On("POST", "/organization/find", findOrg, httpx.Find[OrganizationQuery](false), endpoints.IdempotencyKey),

		endpoints.On("POST", "/people", endpoints.ByCaller(endpoints.Created(s.CreatePerson, personLocation)),
			httpx.Body[PersonInput], endpoints.IdempotencyKey),
		endpoints.On("GET", "/people", endpoints.New(endpoints.List(s.ListPeople)), decodeListPeople),
		endpoints.On("GET", "/people/{id}", endpoints.New(s.GetPerson), httpx.PathID),
		endpoints.On("PATCH", "/people/{id}", endpoints.Guarded(endpoints.ByID(s.UpdatePerson)),
			httpx.PathIDBody[PersonPatch], endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("DELETE", "/people/{id}", endpoints.Guarded(endpoints.NoContent(s.DeletePerson)),
			httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly),
		endpoints.On("GET", "/people/{id}/organizations", endpoints.New(endpoints.Links(s.PersonOrganizations)), httpx.PathLinks),
		// cached: answered from Redis until a write changes it (cache.go)
		endpoints.On("POST", "/people/find", findPerson(s), httpx.Find[PersonInput](true), endpoints.IdempotencyKey),

		endpoints.On("POST", linkPath, link(s), decodeLink, endpoints.IdempotencyKey),
		endpoints.On("DELETE", linkPath, unlink(s), decodeLink, endpoints.IfMatch, endpoints.OwnerOnly),
	}
}

func decodeListOrganizations(r *http.Request) (httpx.ListRequest[OrganizationFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "registration_number", "country", "organization_type")
	req := httpx.ListRequest[OrganizationFilter]{
		Filter: OrganizationFilter{
			RegistrationNumber: q.String("registration_number"),
			Country:            q.String("country"),
			OrganizationType:   q.Enum("organization_type", OrganizationTypes),
		},
		Page: q.Page(),
	}
	if c := req.Filter.Country; c != nil {
		norm, ok := normalizeCountry(*c)
		if !ok {
			q.Invalid("country", "must be an ISO 3166-1 alpha-2 country code")
		}
		req.Filter.Country = &norm
	}
	return req, q.Err()
}

func decodeListPeople(r *http.Request) (httpx.ListRequest[PersonFilter], error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "first_name", "last_name", "date_of_birth")
	req := httpx.ListRequest[PersonFilter]{
		Filter: PersonFilter{
			FirstName:   q.String("first_name"),
			LastName:    q.String("last_name"),
			DateOfBirth: q.Date("date_of_birth"),
		},
		Page: q.Page(),
	}
	return req, q.Err()
}

// decodeLink reads both ids from the path and the relation type from the
// query; the relation type's rules are the service's (LinkInput.Validate).
func decodeLink(r *http.Request) (LinkInput, error) {
	ids, err := httpx.PathUUIDs(r, "person_id", "organization_id")
	if err != nil {
		return LinkInput{}, err
	}
	q := httpx.ParseQuery(r, "relation_type")
	in := LinkInput{PersonID: ids[0], OrganizationID: ids[1]}
	if rt := q.String("relation_type"); rt != nil {
		in.RelationType = *rt
	}
	return in, q.Err()
}
