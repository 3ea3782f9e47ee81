package tlog

import (
	"context"

	"github.com/assetregistry/registry/pkg/httpx"
)

// The answers of the log that the adapters of pkg/endpoints do not make
// alone; the route table (transport.go) names each operation's endpoint
// where it routes it.

// CheckpointQuery says how the checkpoint is answered: as JSON (the
// default), or as the signed note's text alone (C2SP tlog-checkpoint, what
// the standard tools read), when the request prefers text/plain.
type CheckpointQuery struct{ Text bool }

// checkpointAs answers the checkpoint in the form asked for.
func checkpointAs(s Service) func(context.Context, CheckpointQuery) (any, error) {
	return func(ctx context.Context, q CheckpointQuery) (any, error) {
		c, err := s.Checkpoint(ctx, struct{}{})
		if err != nil || !q.Text {
			return c, err
		}
		return httpx.Raw{ContentType: "text/plain; charset=utf-8", Body: []byte(c.Note)}, nil
	}
}

// Tiles are cached as C2SP tlog-tiles asks: a full tile never changes, a
// partial one is replaced by a wider one as the log grows.
const (
	fullTileCaching    = "public, max-age=31536000, immutable"
	partialTileCaching = "public, max-age=10"
)

// servedTile answers a tile's hashes, with their caching rule and ETag.
func servedTile(s Service) func(context.Context, TilePath) (any, error) {
	return func(ctx context.Context, t TilePath) (any, error) {
		tile, err := s.Tile(ctx, t)
		if err != nil {
			return nil, err
		}
		caching := partialTileCaching
		if t.Full() {
			caching = fullTileCaching
		}
		return httpx.Raw{ContentType: "application/octet-stream", CacheControl: caching, ETag: tile.ETag, Body: tile.Hashes}, nil
	}
}
