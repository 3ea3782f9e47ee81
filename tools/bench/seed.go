package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/tlog"
)

// seedLog fills the empty log of pool's schema with n leaves, the hash of
// entry(i) each, writing its tiles in bulk (tlog.SeedTiles): what the
// rows of proofs in a large log start from, without storing n events. It
// refuses a log that has leaves.
func seedLog(ctx context.Context, pool *store.Pool, log *tlog.Store, n uint64, entry func(i uint64) []byte) error {
	if size, _, err := log.LogState(ctx); err != nil || size != 0 {
		return errors.Join(err, fmt.Errorf("seed the log: it has %d leaves already", size))
	}
	const copyRows = (8 << 20) / (16 * 32) // tiles a COPY sends: 8 MiB
	var rows [][]any
	flush := func() error {
		_, err := pool.CopyFrom(ctx, pgx.Identifier{"log_tiles16"}, []string{"level", "idx", "hashes"}, pgx.CopyFromRows(rows))
		rows = rows[:0]
		return store.Classify(err, "seed the log's tiles")
	}
	root, err := tlog.SeedTiles(n, entry, func(level uint, index uint64, hashes []byte) error {
		rows = append(rows, []any{int16(level), int64(index), hashes})
		if len(rows) < copyRows {
			return nil
		}
		return flush()
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `UPDATE log_state SET size = $1, root = $2`, int64(n), root)
	return store.Classify(err, "seed the log's state")
}
