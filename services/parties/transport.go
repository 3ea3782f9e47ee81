package parties

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
)

// NewHTTPHandler routes the public paths to the endpoints. Authentication
// happens before this handler; the scope check happens per route, after
// routing, so for any valid token an unknown path or method is a 404/405
// rather than a 403. Each route names the request headers it takes
// (If-Match on writes to a resource, Idempotency-Key on creates); the
// conformance test holds them to the OpenAPI document.
func NewHTTPHandler(e Endpoints) *httpx.Router {
	r := httpx.NewRouter(auth.RequireScope)
	handle := r.Handle

	handle("POST", "/organizations", endpoints.Serve(e.CreateOrganization, httpx.Body[OrganizationInput], endpoints.IdempotencyKey))
	handle("GET", "/organizations", endpoints.Serve(e.ListOrganizations, decodeListOrganizations))
	handle("GET", "/organizations/{id}", endpoints.Serve(e.GetOrganization, httpx.PathID))
	handle("PATCH", "/organizations/{id}", endpoints.Serve(e.UpdateOrganization, httpx.PathIDBody[OrganizationPatch], endpoints.IfMatch, endpoints.OwnerOnly))
	handle("DELETE", "/organizations/{id}", endpoints.Serve(e.DeleteOrganization, httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly))
	handle("GET", "/organizations/{id}/people", endpoints.Serve(e.OrganizationPeople, httpx.PathLinks))
	// cached: answered from Redis until a write changes it (cache.go)
	findOrganization := endpoints.Serve(e.FindOrganization, httpx.Find[OrganizationQuery](false), endpoints.IdempotencyKey)
	handle("POST", "/organizations/find", findOrganization)
	handle("POST", "/organization/find", findOrganization) // the interface's singular spelling

	handle("POST", "/people", endpoints.Serve(e.CreatePerson, httpx.Body[PersonInput], endpoints.IdempotencyKey))
	handle("GET", "/people", endpoints.Serve(e.ListPeople, decodeListPeople))
	handle("GET", "/people/{id}", endpoints.Serve(e.GetPerson, httpx.PathID))
	handle("PATCH", "/people/{id}", endpoints.Serve(e.UpdatePerson, httpx.PathIDBody[PersonPatch], endpoints.IfMatch, endpoints.OwnerOnly))
	handle("DELETE", "/people/{id}", endpoints.Serve(e.DeletePerson, httpx.PathID, endpoints.IfMatch, endpoints.OwnerOnly))
	handle("GET", "/people/{id}/organizations", endpoints.Serve(e.PersonOrganizations, httpx.PathLinks))
	// cached: answered from Redis until a write changes it (cache.go)
	handle("POST", "/people/find", endpoints.Serve(e.FindPerson, httpx.Find[PersonInput](true), endpoints.IdempotencyKey))

	const link = "/people/{person_id}/organizations/{organization_id}"
	handle("POST", link, endpoints.Serve(e.Link, decodeLink, endpoints.IdempotencyKey))
	handle("DELETE", link, endpoints.Serve(e.Unlink, decodeLink, endpoints.IfMatch, endpoints.OwnerOnly))
	return r
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
	personID, err := httpx.PathUUID(r, "person_id")
	if err != nil {
		return LinkInput{}, err
	}
	orgID, err := httpx.PathUUID(r, "organization_id")
	if err != nil {
		return LinkInput{}, err
	}
	q := httpx.ParseQuery(r, "relation_type")
	in := LinkInput{PersonID: personID, OrganizationID: orgID}
	if rt := q.String("relation_type"); rt != nil {
		in.RelationType = *rt
	}
	return in, q.Err()
}
