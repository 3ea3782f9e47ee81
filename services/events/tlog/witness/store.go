package witness

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/store"
)

// Store is the SQL of the witnesses: what each has seen of the log
// (witness_state) and the cosignatures each returned
// (witness_cosignatures), in schema events.
type Store struct{ s *store.Store }

// NewStore returns the store over s.
func NewStore(s *store.Store) *Store { return &Store{s: s} }

// Seen is the size of the latest checkpoint the witness named has seen of
// the log (0: none yet).
func (st *Store) Seen(ctx context.Context, witness string) (uint64, error) {
	var size int64
	err := st.s.DB(ctx).QueryRow(ctx, `SELECT size FROM witness_state WHERE witness = $1`, witness).Scan(&size)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return uint64(size), store.Classify(err, "read a witness's state")
}

// SetSeen records the size the witness says it has seen.
func (st *Store) SetSeen(ctx context.Context, witness string, size uint64) error {
	_, err := st.s.DB(ctx).Exec(ctx, `INSERT INTO witness_state (witness, size) VALUES ($1, $2)
		ON CONFLICT (witness) DO UPDATE SET size = EXCLUDED.size`, witness, int64(size))
	return store.Classify(err, "record a witness's state")
}

// Cosigned says whether the witness's cosignature of the checkpoint of
// size, signed as note, is kept.
func (st *Store) Cosigned(ctx context.Context, witness string, size uint64, note string) (bool, error) {
	var ok bool
	err := st.s.DB(ctx).QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM witness_cosignatures WHERE size = $1 AND witness = $2 AND note = $3)`,
		int64(size), witness, note).Scan(&ok)
	return ok, store.Classify(err, "read a cosignature")
}

// Keep stores the witness's cosignature line of the checkpoint of size,
// signed as note, and that it has seen it, in one transaction.
func (st *Store) Keep(ctx context.Context, witness string, size uint64, note, line string) error {
	return store.InTx(ctx, st.s.Pool, "keep a cosignature", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO witness_cosignatures (size, witness, note, line) VALUES ($1, $2, $3, $4)
			ON CONFLICT (size, witness) DO UPDATE SET note = EXCLUDED.note, line = EXCLUDED.line, cosigned_at = now()`,
			int64(size), witness, note, line); err != nil {
			return store.Classify(err, "keep a cosignature")
		}
		_, err := tx.Exec(ctx, `INSERT INTO witness_state (witness, size) VALUES ($1, $2)
			ON CONFLICT (witness) DO UPDATE SET size = GREATEST(witness_state.size, EXCLUDED.size)`, witness, int64(size))
		return store.Classify(err, "record a witness's state")
	})
}
