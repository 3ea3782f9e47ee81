// Package accesslog is the assets service's log of changes of who sees an
// asset (asset_access_changes: its owner organization and grants after
// each change) and the log's watermark in Redis. The other services keep
// copies of who sees which asset (pkg/access) that follow the log; the
// watermark tells a copy, at the cost of one Redis read, that it has
// read every change answered so far.
package accesslog

import (
	"context"
	"fmt"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/store"
)

// lock is the advisory lock every write to the log takes before it
// numbers its row, so versions commit in the order they are numbered (see
// Log.Write).
const lock = 0x6173736574616363 // "assetacc"

// GrantsOf is the JSON array of an asset's grants (alias a), in
// organization order: what the log keeps, and the lookups answer.
const GrantsOf = `COALESCE((SELECT jsonb_agg(jsonb_build_object('organization_id', g.organization_id, 'role', g.role)
	ORDER BY g.organization_id) FROM asset_grants g WHERE g.asset_id = a.id), '[]'::jsonb)`

// Log writes the access change log, in the transactions of the writes
// that change who sees an asset, and keeps its watermark in Redis:
// the highest version written, which the other services' copies
// (pkg/access) compare with the version they have read up to, so that a
// bound caller's read asks this service nothing while nothing changed.
type Log struct {
	st   *store.Store
	mark *cache.Watermark // a no-op without Redis
}

// The watermark's key in the service's namespace, its lifetime, and how
// often RenewJob renews it (well within the lifetime, so a live service's
// watermark never lapses).
const (
	Lifetime = 3 * time.Second
	renewal  = time.Second
)

// New returns the log of the assets in s's schema, its watermark in the
// Redis of s's find cache.
func New(s *store.Store) *Log {
	f, _ := s.Invalidator().(*cache.Finds)
	if f == nil {
		return &Log{st: s}
	}
	return &Log{st: s, mark: f.Watermark(access.WatermarkName)}
}

// WatermarkKey is where the copies find the watermark ("" without Redis).
func (l *Log) WatermarkKey() string { return l.mark.Key() }

// Write logs the current access of each of ids, in tx, the transaction
// of the write that changed it. The advisory lock, held until tx ends,
// makes every such write wait for the one before it to commit before it
// draws its version: a follower that read up to version V never finds a
// smaller version appear later. Such writes are rare (a transfer, a grant,
// an admin's owner change); creating an asset writes nothing here and
// takes no lock.
//
// Before tx commits, the watermark is raised to the version drawn: a copy
// that reads it after this write is answered sees a version it has not
// read and reads the log. When Redis does not take the raise, the write
// waits out the watermark's lifetime, still holding the lock (which
// RenewJob takes too): every watermark below its version, set before it,
// has then expired, and the copies read the log until a renewal after the
// commit sets one that counts the write.
func (l *Log) Write(ctx context.Context, tx pgx.Tx, ids ...uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lock)); err != nil {
		return store.Classify(err, "lock the access log")
	}
	var top *int64
	err := tx.QueryRow(ctx, `WITH logged AS (INSERT INTO asset_access_changes (asset_id, owner_organization_id, grants)
		SELECT a.id, a.owner_organization_id, `+GrantsOf+` FROM assets a WHERE a.id = ANY($1) ORDER BY a.id
		RETURNING version) SELECT max(version) FROM logged`, ids).Scan(&top)
	if err != nil || top == nil {
		return store.Classify(err, "log asset access")
	}
	if err := l.mark.Raise(ctx, *top, Lifetime); err != nil {
		select {
		case <-time.After(Lifetime):
		case <-ctx.Done():
			return fmt.Errorf("wait out the access watermark's lifetime: %w", ctx.Err())
		}
	}
	return nil
}

// Renew raises the watermark to the last version committed, renewing its
// lifetime, under the log's lock: no write is between its raise and its
// commit meanwhile, so the version read counts every write answered.
func (l *Log) Renew(ctx context.Context) error {
	if l.mark.Key() == "" {
		return nil
	}
	return store.InTx(ctx, l.st.Pool, "renew the access watermark", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lock)); err != nil {
			return err
		}
		var top int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM asset_access_changes`).Scan(&top); err != nil {
			return err
		}
		return l.mark.Raise(ctx, top, Lifetime)
	})
}

// RenewJob renews the watermark every renewal: it lives while
// the service does, and comes back after Redis lost it (a restart, a
// failover), where until then every copy read the log.
func (l *Log) RenewJob(logger log.Logger) job.Job {
	failing := false
	return job.Every("access watermark", renewal, func(ctx context.Context) {
		err := l.Renew(ctx)
		if err != nil && !failing && ctx.Err() == nil {
			level.Warn(logger).Log("msg", "cannot renew the access watermark; the copies read the access log before each bound read", "err", err)
		}
		failing = err != nil
	})
}
