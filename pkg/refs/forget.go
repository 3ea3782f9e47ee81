package refs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/store"
)

// Forgetting deleted targets. A row of ref_targets marked not alive by a
// delete's question stays, so that a write that read the target's row
// before asking its owner, and reads it again under the lock, sees the
// mark's new version (check.go). The row may go once no write can still
// be between its two reads: longer after the mark than any request takes
// (ForgetAfter), and no sooner than learning from events could still bring
// it back (LearnHorizon).

// LearnHorizon is the age beyond which a created event is not learnt from,
// and the shortest time a row marked not alive is kept.
const LearnHorizon = 12 * time.Hour

// ForgetAfter is how long a row marked not alive is kept, for a service
// whose longest request takes longest: a day, or twice that request when
// it may take longer, and always more than LearnHorizon.
func ForgetAfter(longest time.Duration) time.Duration {
	return max(24*time.Hour, 2*longest, 2*LearnHorizon)
}

// forgetBatch bounds one step of the forgetting.
const forgetBatch = 1000

// ForgetTask is the maintenance task that removes the rows of targets
// marked not alive longer than after ago, a batch at a time, oldest mark
// first (over the partial index of the marks).
func ForgetTask(after time.Duration) leader.Task {
	return leader.Task{Name: "forget deleted targets", Every: time.Hour,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			tag, err := conn.Exec(ctx, `DELETE FROM ref_targets r USING (
					SELECT kind, id FROM ref_targets WHERE NOT alive AND changed_at < now() - $1::interval
					ORDER BY changed_at LIMIT $2 FOR UPDATE SKIP LOCKED) old
				WHERE r.kind = old.kind AND r.id = old.id AND NOT r.alive`, after, forgetBatch)
			if err != nil {
				return 0, false, store.Classify(err, "forget deleted targets")
			}
			return tag.RowsAffected(), tag.RowsAffected() == forgetBatch, nil
		}}
}
