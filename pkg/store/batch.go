package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// BatchWrite is what a batch write does besides the skeleton every batch
// shares (Store.WriteBatch): how it prepares, how it writes all its items
// at once if it can, and how it writes one.
type BatchWrite struct {
	// Prepare runs once, in the batch's transaction, before any item: the
	// locks and reads the items rely on (the references' confirmation,
	// locks taken in one order so two batches never wait for each other
	// in a circle). It may settle items (out[i].Err) that need not be
	// written. Nil: nothing to prepare.
	Prepare func(ctx context.Context, tx pgx.Tx, out []model.ItemOutcome) error
	// All writes every pending item at once (in a few round trips) and
	// sets their outcomes; when it fails, the items are written one by
	// one. Nil: one by one from the start.
	All func(ctx context.Context, pending []int) error
	// Item writes item i in a write of its own (a savepoint of the
	// batch's transaction) and answers its outcome; an error is the
	// item's unless it is the database's or a peer's
	// (apperr.KindUnavailable).
	Item func(ctx context.Context, i int) (model.ItemOutcome, error)
}

// WriteBatch is the skeleton of a batch write: out[i] already holds the
// error of an item that failed before (its decoding, its rules); the
// others are written in one transaction (the request's unit of work, if
// it has one), after b.Prepare, each in a savepoint of its own, so that an
// item that fails leaves the others. A failure of Prepare, or of the
// database or a peer while an item is written, fails the whole batch,
// which then commits none of it. Nothing pending: no transaction.
func (s *Store) WriteBatch(ctx context.Context, out []model.ItemOutcome, b BatchWrite) error {
	if len(pendingItems(out)) == 0 {
		return nil
	}
	return s.Together(ctx, func(ctx context.Context) error {
		if b.Prepare != nil {
			if err := s.Write(ctx, "check batch references", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
				return nil, b.Prepare(ctx, tx, out)
			}); err != nil {
				return err
			}
		}
		pending := pendingItems(out)
		if b.All != nil && len(pending) > 0 {
			err := b.All(ctx, pending)
			if err == nil || apperr.Is(err, apperr.KindUnavailable) {
				return err
			}
		}
		for _, i := range pending {
			outcome, err := b.Item(ctx, i)
			if apperr.Is(err, apperr.KindUnavailable) {
				return err
			}
			outcome.Err = err
			out[i] = outcome
		}
		return nil
	})
}

// pendingItems are the items of out no error has settled.
func pendingItems(out []model.ItemOutcome) []int {
	var pending []int
	for i := range out {
		if out[i].Err == nil {
			pending = append(pending, i)
		}
	}
	return pending
}

// UpdateBatch is the write of a batch of updates (PATCH /<resources>/batch):
// errs[i] is item i's decoding error; the others are applied by update,
// the service's single update, under g with the item's own If-Match, each
// in a savepoint of one transaction (WriteBatch), in order, so a later
// item sees what an earlier one changed. An item applied answers the new
// ETag of what update returns (the resource as a GET shows it).
func UpdateBatch[P, T any](ctx context.Context, s *Store, g model.Guard, items []model.PatchItem[P], errs []error,
	update func(context.Context, model.Guard, uuid.UUID, P) (T, error)) ([]model.ItemOutcome, error) {
	out := make([]model.ItemOutcome, len(items))
	for i, item := range items {
		out[i] = model.ItemOutcome{ID: item.ID, Err: errs[i]}
	}
	return out, s.WriteBatch(ctx, out, BatchWrite{Item: func(ctx context.Context, i int) (model.ItemOutcome, error) {
		ig := g
		ig.IfMatch = items[i].IfMatch
		v, err := update(ctx, ig, items[i].ID, items[i].Patch)
		if err != nil {
			return model.ItemOutcome{ID: items[i].ID}, err
		}
		_, tag, err := model.ETagOf(v)
		return model.ItemOutcome{ID: items[i].ID, ETag: tag}, err
	}})
}
