package actions

import (
	"context"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
)

// UpdateActions applies the items in one transaction, each as UpdateAction
// would under g with the item's own If-Match, in a savepoint of its own
// (store.WriteBatch): an item refused (404, 403, 412, 422, 409) changes
// nothing and leaves the others, and a later item sees what an earlier one
// changed. Each item applied answers its action's new ETag.
func (s *service) UpdateActions(ctx context.Context, g model.Guard, items []model.PatchItem[ActionPatch], errs []error) ([]model.ItemOutcome, error) {
	out := make([]model.ItemOutcome, len(items))
	for i, item := range items {
		out[i] = model.ItemOutcome{ID: item.ID, Err: errs[i]}
	}
	err := s.store.WriteBatch(ctx, out, store.BatchWrite{Item: func(ctx context.Context, i int) (model.ItemOutcome, error) {
		ig := g
		ig.IfMatch = items[i].IfMatch
		a, err := s.UpdateAction(ctx, ig, items[i].ID, items[i].Patch)
		if err != nil {
			return model.ItemOutcome{ID: items[i].ID}, err
		}
		_, tag, err := model.ETagOf(a)
		return model.ItemOutcome{ID: a.ID, ETag: tag}, err
	}})
	return out, err
}
