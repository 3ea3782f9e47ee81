package assettypes

import (
	"context"

	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/model"
)

// cachingService answers GET /asset_types/by_brand_and_model from Redis
// when it can. Writes need no hook here: the store makes stale what each
// commit changes, so a find after any committed write sees it, and Redis
// being down only sends the finds to PostgreSQL.
type cachingService struct {
	Service
	finds *cache.Finds
}

// WithFindCache puts the find cache in front of next.
func WithFindCache(next Service, finds *cache.Finds) Service { return cachingService{next, finds} }

// Criteria that do not pass Normalize are refused before the cache, with
// the service's own error.
func (s cachingService) FindAssetTypes(ctx context.Context, q BrandAndModel) ([]AssetType, error) {
	norm, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	key := cache.Key("asset_types", model.Fold(norm.Brand), model.Fold(norm.Model), FoldedOrNone(norm.Version))
	return cache.Through(ctx, s.finds, []string{typeFinds(norm.Brand, norm.Model)}, key, func() ([]AssetType, bool, error) {
		types, err := s.Service.FindAssetTypes(ctx, norm)
		return types, true, err
	})
}

// Cache scopes: what a find depends on and a write makes stale. The asset
// types of a brand and model depend on the writes to those types.
func typeFinds(brand, modelName string) string {
	return cache.Scope("asset_type", model.Fold(brand), model.Fold(modelName))
}

// IdentityScope is made stale when an asset type's brand, model or
// version changes, which moves its assets between the criteria of asset
// finds: every asset find depends on it. It keeps the name it had before
// asset types were a component of their own, so running caches agree.
const IdentityScope = "assets"

// FoldedOrNone is a criterion in a cache key; a blank criterion is none,
// so "" cannot be a value.
func FoldedOrNone(s *string) string {
	if s == nil {
		return ""
	}
	return model.Fold(*s)
}
