package actions

import (
	"context"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
)

// UpdateActions applies each item as UpdateAction would, under g with the
// item's own If-Match, all in one transaction (store.UpdateBatch): an item
// refused (404, 403, 412, 422, 409) changes nothing and leaves the others.
func (s *service) UpdateActions(ctx context.Context, g model.Guard, items []model.PatchItem[ActionPatch], errs []error) ([]model.ItemOutcome, error) {
	return store.UpdateBatch(ctx, s.store.Store, g, items, errs, s.UpdateAction)
}
