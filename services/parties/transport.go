package parties

import (
	"net/http"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/kit"
)

// NewHTTPHandler routes the public paths to the endpoints. Authentication
// happens before this handler; the scope check happens per route, after
// routing, so for any valid token an unknown path or method is a 404/405
// rather than a 403.
func NewHTTPHandler(e Endpoints) http.Handler {
	r := httpx.NewRouter()
	handle := func(method, pattern string, h http.Handler) { r.Handle(method, pattern, auth.RequireScope(h)) }

	handle("POST", "/organizations", kit.Serve(e.CreateOrganization, kit.Body[OrganizationInput]))
	handle("GET", "/organizations", kit.Serve(e.ListOrganizations, decodeListOrganizations))
	handle("GET", "/organizations/{id}", kit.Serve(e.GetOrganization, kit.PathID))
	handle("PATCH", "/organizations/{id}", kit.Serve(e.UpdateOrganization, kit.PathIDBody[OrganizationPatch]))
	handle("DELETE", "/organizations/{id}", kit.Serve(e.DeleteOrganization, kit.PathID))
	findOrganization := kit.Serve(e.FindOrganization, kit.Find[OrganizationQuery](false))
	handle("POST", "/organizations/find", findOrganization)
	handle("POST", "/organization/find", findOrganization) // the interface's singular spelling

	handle("POST", "/people", kit.Serve(e.CreatePerson, kit.Body[PersonInput]))
	handle("GET", "/people", kit.Serve(e.ListPeople, decodeListPeople))
	handle("GET", "/people/{id}", kit.Serve(e.GetPerson, kit.PathID))
	handle("PATCH", "/people/{id}", kit.Serve(e.UpdatePerson, kit.PathIDBody[PersonPatch]))
	handle("DELETE", "/people/{id}", kit.Serve(e.DeletePerson, kit.PathID))
	handle("POST", "/people/find", kit.Serve(e.FindPerson, kit.Find[PersonInput](true)))

	const link = "/people/{person_id}/organizations/{organization_id}"
	handle("POST", link, kit.Serve(e.Link, decodeLink))
	handle("DELETE", link, kit.Serve(e.Unlink, decodeLink))
	return r
}

func decodeListOrganizations(r *http.Request) (listOrganizationsRequest, error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "registration_number", "country", "organization_type")
	req := listOrganizationsRequest{
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

func decodeListPeople(r *http.Request) (listPeopleRequest, error) {
	q := httpx.ParseQuery(r, "limit", "cursor", "first_name", "last_name", "date_of_birth")
	req := listPeopleRequest{
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
