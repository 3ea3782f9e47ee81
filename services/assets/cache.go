package assets

import (
	"context"

	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/assets/assettypes"
)

// cachingService answers asset finds from Redis when it can. Writes need
// no hook here: the store makes stale what each commit changes, so a find
// after any committed write sees it, and Redis being down only sends the
// finds to PostgreSQL.
type cachingService struct {
	Service
	finds *cache.Finds
}

// WithFindCache puts the find cache in front of next.
func WithFindCache(next Service, finds *cache.Finds) Service { return cachingService{next, finds} }

// Criteria that do not pass Normalize are refused before the cache, with
// the service's own error.
func (s cachingService) FindAsset(ctx context.Context, by model.Caller, q AssetQuery, create bool) (Asset, bool, error) {
	norm, err := q.Normalize()
	if err != nil {
		return Asset{}, false, err
	}
	// Per organization: a bound caller is answered only what it sees, and
	// a change of who sees an asset (a grant, a transfer, an owner set by
	// an admin) makes stale the finds of its serial number.
	key := cache.Key("asset", norm.SerialNumber, assettypes.FoldedOrNone(norm.Brand), assettypes.FoldedOrNone(norm.Model),
		assettypes.FoldedOrNone(norm.Version), by.Organization)
	created := false
	a, err := cache.Through(ctx, s.finds, []string{everyAssetFind, assetFinds(norm.SerialNumber)}, key, func() (Asset, bool, error) {
		a, made, err := s.Service.FindAsset(ctx, by, norm, create)
		created = made
		return a, !made, err
	})
	return a, created, err
}

// Cache scopes: what a find depends on and a write makes stale. An asset
// find depends on the assets with its serial number (bumped by writes to
// them) and on every asset find (bumped by the asset types' store when a
// type's brand, model or version changes, which moves its assets between
// criteria).
const everyAssetFind = assettypes.IdentityScope

func assetFinds(serialNumber string) string { return cache.Scope("asset", serialNumber) }
