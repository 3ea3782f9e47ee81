package assets

import (
	"context"

	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/model"
)

// cachingService answers asset finds and GET /asset_types/by_brand_and_model
// from Redis when it can. Writes need no hook here: the store makes stale
// what each commit changes, so a find after any committed write sees it,
// and Redis being down only sends the finds to PostgreSQL.
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
	key := cache.Key("asset_types", model.Fold(norm.Brand), model.Fold(norm.Model), foldedOrNone(norm.Version))
	return cache.Through(ctx, s.finds, []string{typeFinds(norm.Brand, norm.Model)}, key, func() ([]AssetType, bool, error) {
		types, err := s.Service.FindAssetTypes(ctx, norm)
		return types, true, err
	})
}

func (s cachingService) FindAsset(ctx context.Context, by model.Caller, q AssetQuery, create bool) (Asset, bool, error) {
	norm, err := q.Normalize()
	if err != nil {
		return Asset{}, false, err
	}
	key := cache.Key("asset", norm.SerialNumber, foldedOrNone(norm.Brand), foldedOrNone(norm.Model), foldedOrNone(norm.Version))
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
// them) and on every asset find (bumped when an asset type's brand, model
// or version changes, which moves its assets between criteria). The asset
// types of a brand and model depend on the writes to those types.
const everyAssetFind = "assets"

func assetFinds(serialNumber string) string { return cache.Scope("asset", serialNumber) }

func typeFinds(brand, modelName string) string {
	return cache.Scope("asset_type", model.Fold(brand), model.Fold(modelName))
}

// foldedOrNone is a criterion in a cache key; a blank criterion is none,
// so "" cannot be a value.
func foldedOrNone(s *string) string {
	if s == nil {
		return ""
	}
	return model.Fold(*s)
}
