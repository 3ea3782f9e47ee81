package endpoints

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// patchItem is one item of a PATCH /<resources>/batch as sent: the
// resource's id, the If-Match its write obeys and its merge patch, kept
// raw so that it is decoded as a single PATCH's body is.
type patchItem struct {
	ID      model.UUID      `json:"id"`
	IfMatch *string         `json:"if_match"`
	Patch   json.RawMessage `json:"patch"`
}

// DecodePatchItems decodes each item of a batch of updates strictly:
// items[i] is in[i] when errs[i] is nil. id and patch are required; the
// patch is decoded as its single PATCH's body (its fields named as that
// PATCH names them); if_match, when given, is "*" or a list of quoted
// ETags, as the If-Match header is.
func DecodePatchItems[P any](items []json.RawMessage) (in []model.PatchItem[P], errs []error) {
	in, errs = make([]model.PatchItem[P], len(items)), make([]error, len(items))
	for i, raw := range items {
		in[i], errs[i] = decodePatchItem[P](raw)
	}
	return in, errs
}

func decodePatchItem[P any](raw json.RawMessage) (model.PatchItem[P], error) {
	var item patchItem
	if err := httpx.DecodeJSONItem(raw, &item); err != nil {
		return model.PatchItem[P]{}, err
	}
	var v apperr.Validation
	if item.ID.UUID == [16]byte{} {
		v.Add("id", "is required: the id of the resource this item changes")
	}
	if item.IfMatch != nil && !validIfMatch(*item.IfMatch) {
		v.Add("if_match", `must be "*" or one or more quoted ETags separated by commas, as a GET's ETag header gives them`)
	}
	switch patch := strings.TrimSpace(string(item.Patch)); {
	case patch == "" || patch == "null":
		v.Add("patch", "is required: the item's JSON merge patch, an object")
	case patch[0] != '{':
		v.Add("patch", "must be a JSON object (a JSON merge patch)")
	}
	if err := v.Err(); err != nil {
		return model.PatchItem[P]{}, err
	}
	out := model.PatchItem[P]{ID: item.ID.UUID}
	if item.IfMatch != nil {
		out.IfMatch = strings.TrimSpace(*item.IfMatch)
	}
	return out, httpx.DecodeJSONItem(item.Patch, &out.Patch)
}

// validIfMatch reports whether an item's if_match has the form of an
// If-Match header: "*", or quoted entity tags (a weak one never matches,
// as in the header, but is well-formed).
func validIfMatch(s string) bool {
	s = strings.TrimSpace(s)
	if s == "*" {
		return true
	}
	for _, tag := range strings.Split(s, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' || strings.Contains(tag[1:len(tag)-1], `"`) {
			return false
		}
	}
	return true
}

// BatchPatch adapts a service's batch of updates (R is its model.Guard) to
// an endpoint answering 200 with one result per item, in order: {status:
// 200, id, etag} for an item applied, else the problem the item's single
// PATCH would have been answered with.
func BatchPatch[R, P any](update func(context.Context, R, []model.PatchItem[P], []error) ([]model.ItemOutcome, error)) func(context.Context, R, BatchRequest) (any, error) {
	return batchOf(DecodePatchItems[P], update)
}
