package parties

import (
	"context"

	"github.com/assetregistry/registry/pkg/cache"
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
	key := cache.Key("organization", norm.RegistrationNumber, deref(norm.Country, "*"))
	var cached OrganizationDetail
	entry, hit := s.finds.Get(ctx, []string{everyOrganizationFind, organizationFinds(norm.RegistrationNumber)}, key, &cached)
	if hit {
		return cached, nil
	}
	o, err := s.Service.FindOrganization(ctx, norm)
	if err == nil {
		entry.Store(ctx, o)
	}
	return o, err
}

func (s *cachingService) FindPerson(ctx context.Context, q PersonInput, create bool) (PersonDetail, bool, error) {
	norm, err := q.Normalize()
	if err != nil {
		return s.Service.FindPerson(ctx, q, create)
	}
	dob := "*"
	if norm.DateOfBirth != nil {
		dob = norm.DateOfBirth.String()
	}
	key := cache.Key("person", identityKey(norm.FirstName), identityKey(norm.LastName), dob)
	var cached PersonDetail
	entry, hit := s.finds.Get(ctx, []string{everyPersonFind, personFinds(norm.FirstName, norm.LastName)}, key, &cached)
	if hit {
		return cached, false, nil
	}
	p, created, err := s.Service.FindPerson(ctx, norm, create)
	if err == nil && !created {
		entry.Store(ctx, p)
	}
	return p, created, err
}

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
