// Package retention is the events schema's maintenance of the feed and
// the histories (pkg/leader): their partitions ahead, the feed's horizon,
// and the prune of what the histories no longer keep.
package retention

import (
	"context"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/store"
)

// The events schema's maintenance (pkg/leader): what retention no longer
// keeps leaves the feed, the histories and the deliveries, on one replica
// at a time and a bounded batch per step, so no statement nears the
// statement timeout however large the tables grow, and no request waits
// long behind one.

// maintenanceBatch bounds the rows one step handles.
const maintenanceBatch = 1000

// feedPruneTask moves the feed's horizon past the events older than
// retention: a cursor from before is then a 410. One statement, two probes
// of indexes: the newest stored_at before the cut, then the highest seq
// among the events stored at that instant (one batch shares it). A storing
// transaction that waited for the numbering lock may carry an older
// stored_at than one numbered before it, so the horizon may stop an event
// short of the oldest kept, never past one younger than retention by more
// than that wait.
func feedPruneTask(retention, every time.Duration) leader.Task {
	return leader.Task{Name: "prune the feed", Every: every,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			tag, err := conn.Exec(ctx, `UPDATE feed_horizon SET pruned_through = horizon.seq
				FROM (SELECT max(seq) AS seq FROM events WHERE stored_at =
					(SELECT max(stored_at) FROM events WHERE stored_at < now() - $1::interval)) horizon
				WHERE horizon.seq > pruned_through`, retention)
			if err != nil {
				return 0, false, store.Classify(err, "prune the feed")
			}
			return tag.RowsAffected(), false, nil
		}}
}

// historyPruneTask removes from the histories the events older than
// retention that are not their subject's latest, walking the feed's pruned
// part in seq order a batch at a time (a run starts from its beginning:
// an event kept as its subject's latest goes once a later one arrives).
// Their leaves stay in the log's tiles.
func historyPruneTask(retention, every time.Duration) leader.Task {
	var after int64 // where the run's walk is; 0 at the start of a run
	return leader.Task{Name: "prune the histories", Every: every,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			var (
				last    *int64
				removed int64
			)
			err := conn.QueryRow(ctx, `WITH batch AS (
					SELECT seq FROM events WHERE seq > $2 AND seq <= (SELECT pruned_through FROM feed_horizon)
					ORDER BY seq LIMIT $3
				), gone AS (
					DELETE FROM events e USING batch b WHERE e.seq = b.seq AND e.stored_at < now() - $1::interval
					  AND EXISTS (SELECT 1 FROM events later WHERE later.kind = e.kind AND later.subject_id = e.subject_id AND later.seq > e.seq)
					RETURNING 1
				)
				SELECT (SELECT max(seq) FROM batch), (SELECT count(*) FROM gone)`, retention, after, maintenanceBatch).Scan(&last, &removed)
			if err != nil {
				after = 0
				return 0, false, store.Classify(err, "prune the histories")
			}
			if last == nil {
				after = 0
				return removed, false, nil
			}
			after = *last
			return removed, true, nil
		}}
}

// The partitioned tables (migrations 007 and 008): the feed by ranges of
// 10 million seqs, the deliveries by week of their UUIDv7 ids. The widths
// are those the migrations started with; docs/capacity.md says why.
var (
	feedPartitions = leader.Partitions{Table: "events",
		Key: leader.SeqKey{Sequence: "events_seq", Width: 10_000_000}, Ahead: 2}
)

// historyDropTask drops whole the partitions of the feed that retention
// has passed and that keep nothing: every event in them is in the feed's
// pruned part, older than the histories' retention, and not its
// subject's latest (which histories keep). A DETACH CONCURRENTLY and a
// DROP free the partition's disk at once, where historyPruneTask's DELETE
// writes each row to the WAL and leaves its space to vacuum. Whether a
// partition keeps a subject's latest event is read a batch a step (one
// index probe an event); the first such event ends the partition's
// survey, and the prune deletes around it. The last partition is never
// dropped: the table goes on from it.
func historyDropTask(parts leader.Partitions, retention, every time.Duration) leader.Task {
	// Where the run's survey is: the partition from which on it looks,
	// and the last seq read in it.
	from, after := int64(math.MinInt64), int64(math.MinInt64)
	next := func(part leader.Partition) { from, after = part.To, math.MinInt64 }
	return leader.Task{Name: "drop the histories' partitions", Every: every,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			list, err := parts.List(ctx, conn)
			if err != nil {
				from, after = math.MinInt64, math.MinInt64
				return 0, false, err
			}
			var horizon int64
			if err := conn.QueryRow(ctx, `SELECT pruned_through FROM feed_horizon`).Scan(&horizon); err != nil {
				from, after = math.MinInt64, math.MinInt64
				return 0, false, store.Classify(err, "read the feed's horizon")
			}
			for _, part := range list[:max(len(list)-1, 0)] {
				if part.To-1 > horizon {
					break
				}
				if part.To <= from { // surveyed in this run already
					continue
				}
				dropped, done, err := surveyStep(ctx, conn, parts, part, retention, &after)
				if err != nil {
					from, after = math.MinInt64, math.MinInt64
					return 0, false, err
				}
				if done {
					next(part)
				}
				return dropped, true, nil
			}
			from, after = math.MinInt64, math.MinInt64
			return 0, false, nil
		}}
}

// surveyStep reads one batch of the partition after *after and drops the
// partition once the whole was read without an event it keeps; done says
// the partition's survey ended (dropped, or kept).
func surveyStep(ctx context.Context, conn *pgx.Conn, parts leader.Partitions, part leader.Partition,
	retention time.Duration, after *int64) (dropped int64, done bool, err error) {
	table := pgx.Identifier{part.Name}.Sanitize()
	if *after == math.MinInt64 {
		var young bool
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(stored_at) >= now() - $1::interval, false) FROM `+table, retention).Scan(&young); err != nil {
			return 0, false, store.Classify(err, "read the partition "+part.Name)
		}
		if young {
			return 0, true, nil
		}
	}
	var (
		last   *int64
		latest bool
	)
	if err := conn.QueryRow(ctx, `SELECT max(seq), coalesce(bool_or(NOT EXISTS (SELECT 1 FROM events later
			WHERE later.kind = e.kind AND later.subject_id = e.subject_id AND later.seq > e.seq)), false)
		FROM (SELECT seq, kind, subject_id FROM `+table+` WHERE seq > $1 ORDER BY seq LIMIT $2) e`,
		*after, maintenanceBatch).Scan(&last, &latest); err != nil {
		return 0, false, store.Classify(err, "read the partition "+part.Name)
	}
	switch {
	case latest:
		return 0, true, nil
	case last != nil:
		*after = *last
		return 0, false, nil
	}
	if err := parts.Drop(ctx, conn, part); err != nil {
		return 0, false, err
	}
	return 1, true, nil
}

// Prune runs the feed's and the histories' tasks to their end on one
// connection of pool, now, and says how many events left the histories:
// the tests' and a command's way to prune without waiting for the leader.
func Prune(ctx context.Context, pool *store.Pool, retention, historyRetention time.Duration) (int64, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, store.Classify(err, "prune the feed")
	}
	defer conn.Release()
	if _, err := feedPruneTask(retention, time.Hour).Drain(ctx, conn.Conn()); err != nil || historyRetention <= 0 {
		return 0, err
	}
	if _, err := historyDropTask(feedPartitions, historyRetention, time.Hour).Drain(ctx, conn.Conn()); err != nil {
		return 0, err
	}
	return historyPruneTask(historyRetention, time.Hour).Drain(ctx, conn.Conn())
}

// Partitions are the feed's partitions, for tests that look at them.
func Partitions() leader.Partitions { return feedPartitions }

// Tasks are the feed's maintenance of the schema: its partitions ahead,
// made up every partitionsEvery, the feed's retention every pruneEvery,
// and, with a retention of histories, their prune.
func Tasks(partitionsEvery, retention, pruneEvery, historyRetention time.Duration) []leader.Task {
	tasks := []leader.Task{feedPartitions.Task(partitionsEvery), feedPruneTask(retention, pruneEvery)}
	if historyRetention > 0 {
		tasks = append(tasks, historyDropTask(feedPartitions, historyRetention, pruneEvery),
			historyPruneTask(historyRetention, pruneEvery))
	}
	return tasks
}
