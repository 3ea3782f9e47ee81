package projection

import (
	"context"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
)

// notBelowFloor passes over an event ($3) older than the assets
// projection's floor: the last rebuild's listing holds it already.
const notBelowFloor = `NOT EXISTS (SELECT FROM projection_floor WHERE projection = '` + assetsProjection + `' AND floor > $3)`

// Store is the projection's rows in the actions schema: known_assets and
// projection_floor.
type Store struct{ *store.Store }

// NewStore returns the projection's store over the kit's store.
func NewStore(s *store.Store) *Store { return &Store{s} }

// applyAsset writes what an asset event says to known_assets (see
// Projection.ApplyAsset).
func (s *Store) applyAsset(ctx context.Context, ev AssetEvent) error {
	var sql string
	switch ev.Op {
	case outbox.OpCreated, outbox.OpUpdated:
		sql = `INSERT INTO known_assets (asset_id, asset_type_id, event_id) SELECT $1, $2, $3 WHERE ` + notBelowFloor + `
			ON CONFLICT (asset_id) DO UPDATE SET asset_type_id = excluded.asset_type_id, event_id = excluded.event_id
			WHERE NOT known_assets.deleted AND known_assets.event_id < excluded.event_id`
	case outbox.OpDeleted:
		sql = `INSERT INTO known_assets (asset_id, asset_type_id, deleted, event_id) SELECT $1, $2, true, $3 WHERE ` + notBelowFloor + `
			ON CONFLICT (asset_id) DO UPDATE SET deleted = true,
				event_id = GREATEST(known_assets.event_id, excluded.event_id)`
	default:
		return nil // an operation this projection does not know changes nothing it keeps
	}
	var typeID *uuid.UUID
	if ev.Op != outbox.OpDeleted {
		typeID = &ev.AssetTypeID
	}
	_, err := s.Pool.Exec(ctx, sql, ev.AssetID, typeID, ev.ID)
	return store.Classify(err, "apply asset event")
}

// setFloor makes the events of the projection before floor count as in
// its rows (a rebuild's listing holds them).
func (s *Store) setFloor(ctx context.Context, projection string, floor uuid.UUID) error {
	_, err := s.Pool.Exec(ctx, `INSERT INTO projection_floor (projection, floor) VALUES ($1, $2)
		ON CONFLICT (projection) DO UPDATE SET floor = excluded.floor`, projection, floor)
	return store.Classify(err, "set projection floor")
}

// putListed writes a page of the listing as of floor: a row an event
// newer than floor wrote stays.
func (s *Store) putListed(ctx context.Context, page []ListedAsset, floor uuid.UUID) error {
	ids, types := make([]uuid.UUID, len(page)), make([]uuid.UUID, len(page))
	for i, a := range page {
		ids[i], types[i] = a.ID, a.AssetTypeID
	}
	_, err := s.Pool.Exec(ctx, `INSERT INTO known_assets (asset_id, asset_type_id, event_id)
		SELECT id, type, $3 FROM unnest($1::uuid[], $2::uuid[]) AS listed(id, type)
		ON CONFLICT (asset_id) DO UPDATE SET asset_type_id = excluded.asset_type_id, deleted = false, event_id = excluded.event_id
		WHERE known_assets.event_id < excluded.event_id`, ids, types, floor)
	return store.Classify(err, "rebuild known assets")
}

// removeUnlisted removes the rows neither the listing nor an event newer
// than floor wrote.
func (s *Store) removeUnlisted(ctx context.Context, floor uuid.UUID) (int64, error) {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM known_assets WHERE event_id < $1`, floor)
	return tag.RowsAffected(), store.Classify(err, "remove unlisted assets")
}
