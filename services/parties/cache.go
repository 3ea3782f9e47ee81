package parties

import (
	"context"

	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// cachingService answers finds from Redis when it can. Writes need no hook
// here: the store makes stale what each commit changes.
type cachingService struct {
	Service
	finds *cache.Finds
}

// WithFindCache puts the find cache in front of next.
func WithFindCache(next Service, finds *cache.Finds) Service {
	return &cachingService{Service: next, finds: finds}
}

func (s *cachingService) FindOrganization(ctx context.Context, q OrganizationQuery) (OrganizationDetail, error) {
	norm, err := q.Normalize()
	if err != nil {
		return s.Service.FindOrganization(ctx, q) // let the service report it
	}
	scopes, key := organizationFind(norm)
	var cached OrganizationDetail
	entry, hit := s.finds.Get(ctx, scopes, key, &cached)
	if hit {
		return cached, nil
	}
	o, err := s.Service.FindOrganization(ctx, norm)
	if err == nil {
		entry.Store(ctx, o)
	}
	return o, err
}

// findOrganizationAnswer is FindOrganization as the endpoint sends it: a
// hit is the JSON the cache holds, sent as it is (httpx.RawJSON), and a
// miss renders its answer once, for the cache and the client alike.
func (s *cachingService) findOrganizationAnswer(ctx context.Context, q OrganizationQuery) (any, error) {
	norm, err := q.Normalize()
	if err != nil {
		return s.Service.FindOrganization(ctx, q)
	}
	scopes, key := organizationFind(norm)
	entry, raw, hit := s.finds.GetJSON(ctx, scopes, key)
	if hit {
		return httpx.RawJSON(raw), nil
	}
	o, err := s.Service.FindOrganization(ctx, norm)
	if err != nil {
		return nil, err
	}
	return rendered(ctx, entry, o), nil
}

func organizationFind(norm OrganizationQuery) (scopes []string, key string) {
	return []string{everyOrganizationFind, organizationFinds(norm.RegistrationNumber)},
		cache.Key("organization:"+organizationShape, norm.RegistrationNumber, deref(norm.Country, "*"))
}

func (s *cachingService) FindPerson(ctx context.Context, by model.Caller, q PersonInput, create bool) (PersonDetail, bool, error) {
	norm, err := q.Normalize()
	if err != nil {
		return s.Service.FindPerson(ctx, by, q, create)
	}
	scopes, key := personFind(norm)
	var cached PersonDetail
	entry, hit := s.finds.Get(ctx, scopes, key, &cached)
	if hit {
		return cached, false, nil
	}
	p, created, err := s.Service.FindPerson(ctx, by, norm, create)
	if err == nil && !created {
		entry.Store(ctx, p)
	}
	return p, created, err
}

// findPersonAnswer is FindPerson as the endpoint sends it (see
// findOrganizationAnswer); a person the find created is a 201, never
// cached.
func (s *cachingService) findPersonAnswer(ctx context.Context, by model.Caller, q PersonInput, create bool) (any, error) {
	norm, err := q.Normalize()
	if err != nil {
		return personAnswer(s.Service.FindPerson(ctx, by, q, create))
	}
	scopes, key := personFind(norm)
	entry, raw, hit := s.finds.GetJSON(ctx, scopes, key)
	if hit {
		return httpx.RawJSON(raw), nil
	}
	p, created, err := s.Service.FindPerson(ctx, by, norm, create)
	if err != nil || created {
		return personAnswer(p, created, err)
	}
	return rendered(ctx, entry, p), nil
}

func personFind(norm PersonInput) (scopes []string, key string) {
	dob := "*"
	if norm.DateOfBirth != nil {
		dob = norm.DateOfBirth.String()
	}
	return []string{everyPersonFind, personFinds(norm.FirstName, norm.LastName)},
		cache.Key("person:"+personShape, identityKey(norm.FirstName), identityKey(norm.LastName), dob)
}

// rendered stores v's JSON in entry and answers with it; v itself when it
// cannot be rendered (the encoder then reports why).
func rendered(ctx context.Context, entry cache.Entry, v any) any {
	body, err := model.Marshal(v)
	if err != nil {
		return v
	}
	entry.StoreJSON(ctx, body)
	return httpx.RawJSON(body)
}

// The shapes of the cached answers are part of their keys (cache.ShapeOf).
var (
	organizationShape = cache.ShapeOf[OrganizationDetail]()
	personShape       = cache.ShapeOf[PersonDetail]()
)

// Cache scopes: what a find depends on and a write makes stale. A find
// depends on every find of its kind (bumped by writes that can change any
// of them, like renaming an organization that people list) and on the
// finds for its own identity (bumped by writes to that identity).
const (
	everyPersonFind       = "people"
	everyOrganizationFind = "organizations"
)

func personFinds(first, last string) string {
	return cache.Scope("person", identityKey(first), identityKey(last))
}

func organizationFinds(registrationNumber string) string {
	return cache.Scope("organization", registrationNumber)
}

func deref(s *string, none string) string {
	if s == nil {
		return none
	}
	return *s
}
