package registry

import (
	"context"
	"net/http"
)

// PatchItem is one item of UpdateAssets or UpdateActions: the id of what
// it changes, the ETag its change is conditional on (IfMatch, as the
// If-Match header of a single update: "" for none, "*" for any) and its
// JSON merge patch.
type PatchItem struct {
	ID      string `json:"id"`
	IfMatch string `json:"if_match,omitempty"`
	Patch   Patch  `json:"patch"`
}

// UpdateAssets applies each item as UpdateAsset would, in one call (PATCH
// /assets/batch): one result per item, in order, Status 200 with the
// asset's new ETag, or the Problem the item alone would have got (412 when
// IfMatch no longer names the asset, 404, 403, 422, 409) in Err. Items
// fail alone; the error is the batch's own (nothing of it was written).
// Retrying a batch is safe where items carry IfMatch: an item applied
// before answers 412 the second time.
func (c *Client) UpdateAssets(ctx context.Context, items []PatchItem, opts ...CallOption) ([]BatchResult, error) {
	return batchOf(ctx, c, http.MethodPatch, "/assets/batch", items, opts)
}

// UpdateActions applies each item as UpdateAction would, in one call
// (PATCH /actions/batch); as UpdateAssets.
func (c *Client) UpdateActions(ctx context.Context, items []PatchItem, opts ...CallOption) ([]BatchResult, error) {
	return batchOf(ctx, c, http.MethodPatch, "/actions/batch", items, opts)
}
