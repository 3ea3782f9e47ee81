package projection

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/outbox"
)

// AssetEvent is what the projection needs of an asset's change event.
type AssetEvent struct {
	ID          uuid.UUID // the event's id (UUIDv7): later events have greater ids
	AssetID     uuid.UUID
	AssetTypeID uuid.UUID // the asset's type after the change (created, updated)
	Op          string    // outbox.OpCreated, OpUpdated or OpDeleted
	// Owner is the asset's owner organization after the change ("" none);
	// OwnerChanged says an update changed it.
	Owner        string
	OwnerChanged bool
	// Parent is the asset's parent_asset_id after the change (nil: none,
	// or deleted).
	Parent *uuid.UUID
}

// AssetEventOf reads an asset event off the wire; ok is false for events
// of other kinds.
func AssetEventOf(e outbox.Event) (ev AssetEvent, ok bool, err error) {
	kind, op, found := cutType(e.Type)
	if !found || kind != outbox.KindAsset {
		return ev, false, nil
	}
	if ev.ID, err = uuid.Parse(e.ID); err != nil {
		return ev, false, fmt.Errorf("asset event id %q: %w", e.ID, err)
	}
	if ev.AssetID, err = uuid.Parse(e.Subject.ID); err != nil {
		return ev, false, fmt.Errorf("asset event %s: subject id %q: %w", e.ID, e.Subject.ID, err)
	}
	ev.Op = op
	if op == outbox.OpDeleted {
		return ev, true, nil
	}
	var data struct {
		AssetTypeID uuid.UUID  `json:"asset_type_id"`
		Owner       *string    `json:"owner_organization_id"`
		Parent      *uuid.UUID `json:"parent_asset_id"`
	}
	if err := json.Unmarshal(e.Data, &data); err != nil || data.AssetTypeID == uuid.Nil {
		return ev, false, fmt.Errorf("asset event %s: data has no asset_type_id", e.ID)
	}
	ev.AssetTypeID, ev.Parent = data.AssetTypeID, data.Parent
	if data.Owner != nil {
		ev.Owner = *data.Owner
	}
	_, ev.OwnerChanged = e.Changes["owner_organization_id"]
	return ev, true, nil
}

// cutType splits "<kind>.<op>".
func cutType(t string) (kind, op string, ok bool) {
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] == '.' {
			return t[:i], t[i+1:], true
		}
	}
	return "", "", false
}

// ListedAsset is an asset as the assets service lists it.
type ListedAsset struct {
	ID          uuid.UUID
	AssetTypeID uuid.UUID
	Parent      *uuid.UUID // its parent_asset_id (nil: none)
}

// AssetLister pages through every asset of the assets service in id
// order: after uuid.Nil is the first page, an empty page the end.
type AssetLister func(ctx context.Context, after uuid.UUID) ([]ListedAsset, error)

// RebuildMargin is how long before a rebuild's start its floor lies: longer
// than any write of an asset can take between making its event's id and
// committing, so every event older than the floor was committed before the
// listing began and is in it.
const RebuildMargin = time.Minute

// RebuildReport says what a rebuild did: the assets listed, the rows of
// assets not listed (nor written by a newer event) removed, the latest
// actions written.
type RebuildReport struct {
	Assets, Removed, Latest int64
	Readings                int64 // meter readings listed, and kept where the model lacked them (spec.go's rebuild)
}
