package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
)

// The batch skeleton: each item in a savepoint of its own, a failure of
// the database (or a peer) failing the whole batch, Prepare settling items
// before any is written, All trying every item at once first.
func TestWriteBatch(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	decodeErr := apperr.Invalid(apperr.FieldError{Field: "name", Message: "is required"})
	for _, c := range []struct {
		name        string
		items       []string // "" is an item that failed before the batch
		allAtOnce   bool
		wantErr     apperr.Kind // -1: the batch succeeds
		wantKinds   []apperr.Kind
		wantWritten []string
		wantCalls   int // Item calls
	}{
		{name: "each item in its own savepoint", items: []string{"a", "a", "b", ""},
			wantErr: -1, wantKinds: []apperr.Kind{-1, apperr.KindConflict, -1, apperr.KindInvalid}, wantWritten: []string{"a", "b"}, wantCalls: 3},
		{name: "an unavailable database fails the batch", items: []string{"c", "unavailable", "d"},
			wantErr: apperr.KindUnavailable, wantCalls: 2},
		{name: "prepare settles an item", items: []string{"settled", "e"},
			wantErr: -1, wantKinds: []apperr.Kind{apperr.KindInvalid, -1}, wantWritten: []string{"e"}, wantCalls: 1},
		{name: "all at once", items: []string{"f", "g"}, allAtOnce: true,
			wantErr: -1, wantKinds: []apperr.Kind{-1, -1}, wantWritten: []string{"f", "g"}, wantCalls: 0},
		{name: "all at once refused, then one by one", items: []string{"h", "h"}, allAtOnce: true,
			wantErr: -1, wantKinds: []apperr.Kind{-1, apperr.KindConflict}, wantWritten: []string{"h"}, wantCalls: 2},
		{name: "nothing pending", items: []string{"", ""},
			wantErr: -1, wantKinds: []apperr.Kind{apperr.KindInvalid, apperr.KindInvalid}, wantCalls: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			out := make([]model.ItemOutcome, len(c.items))
			for i, name := range c.items {
				if name == "" {
					out[i].Err = decodeErr
				}
			}
			insertThing := func(ctx context.Context, tx pgx.Tx, name string) error {
				if name == "unavailable" {
					return apperr.New(apperr.KindUnavailable, "the database is unavailable")
				}
				_, err := tx.Exec(ctx, "INSERT INTO things (id, name) VALUES ($1, $2)", store.NewID(), name)
				if _, taken := store.Constraint(err, store.UniqueViolation); taken {
					return apperr.Conflict("a thing named " + name + " exists already")
				}
				return store.Classify(err, "insert thing")
			}
			calls, prepared := 0, 0
			b := store.BatchWrite{
				Prepare: func(ctx context.Context, tx pgx.Tx, out []model.ItemOutcome) error {
					prepared++
					for i, name := range c.items {
						if name == "settled" {
							out[i].Err = decodeErr
						}
					}
					return nil
				},
				Item: func(ctx context.Context, i int) (model.ItemOutcome, error) {
					calls++
					err := s.Write(ctx, "insert thing", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
						return nil, insertThing(ctx, tx, c.items[i])
					})
					return model.ItemOutcome{Created: err == nil}, err
				},
			}
			if c.allAtOnce {
				b.All = func(ctx context.Context, pending []int) error {
					err := s.Write(ctx, "insert things", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
						for _, i := range pending {
							if err := insertThing(ctx, tx, c.items[i]); err != nil {
								return nil, err
							}
						}
						return nil, nil
					})
					for _, i := range pending {
						if err == nil {
							out[i].Created = true
						}
					}
					return err
				}
			}
			err := s.WriteBatch(ctx, out, b)
			if kindOf(err) != c.wantErr {
				t.Fatalf("batch: %v, want kind %v", err, c.wantErr)
			}
			if calls != c.wantCalls {
				t.Errorf("%d item calls, want %d", calls, c.wantCalls)
			}
			// Prepared once when some item was pending; nothing pending, no
			// transaction at all.
			if want := slices.ContainsFunc(c.items, func(n string) bool { return n != "" }); (prepared == 1) != want || prepared > 1 {
				t.Errorf("prepared %d times, want once: %v", prepared, want)
			}
			if c.wantErr == -1 {
				for i, o := range out {
					if kindOf(o.Err) != c.wantKinds[i] || (o.Err == nil) != o.Created {
						t.Errorf("item %d: %+v, want kind %v", i, o, c.wantKinds[i])
					}
				}
			}
			rows, err := s.Pool.Query(ctx, "SELECT name FROM things WHERE name = ANY($1) ORDER BY name", c.items)
			if err != nil {
				t.Fatal(err)
			}
			written, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(written, c.wantWritten) {
				t.Errorf("written %v, want %v", written, c.wantWritten)
			}
		})
	}
}

// kindOf is err's kind, -1 for no error.
func kindOf(err error) apperr.Kind {
	if err == nil {
		return -1
	}
	return apperr.KindOf(err)
}
