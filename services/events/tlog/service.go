// Package tlog is the events service's transparency log: every stored
// event is the next leaf of one append-only Merkle tree, kept as tiles,
// signed in checkpoints, audited against them; inclusion and consistency
// proofs, a leaf's entry, the redaction of a person's fields, and an
// asset's passport (the subpackage passport), which a holder checks
// offline.
package tlog

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Service is the log's domain.
type Service interface {
	Checkpoint(ctx context.Context, _ struct{}) (LogCheckpoint, error)
	LogKeys(ctx context.Context, _ struct{}) (LogKeysAnswer, error)
	Inclusion(ctx context.Context, q InclusionQuery) (InclusionAnswer, error)
	Consistency(ctx context.Context, q ConsistencyQuery) (ConsistencyAnswer, error)
	// Entry is the bytes of a leaf: an event's, or a redaction's entry.
	Entry(ctx context.Context, leaf uint64) (LogEntry, error)
	// Tile is a tile of the log's hashes (C2SP tlog-tiles) of the tree of
	// the latest signed checkpoint.
	Tile(ctx context.Context, t TilePath) (Tile, error)
}

// Settings are the log's rules that an operator sets.
type Settings struct {
	// Keys sign the log's checkpoints and verify them.
	Keys LogKeys
}

type service struct {
	store    *Store
	settings Settings
	// signed is the largest size of a signed checkpoint this process has
	// read: a tile in its tree is served without reading it again.
	signed atomic.Uint64
}

// NewService returns the service over st.
func NewService(st *Store, settings Settings) Service { return &service{store: st, settings: settings} }

// ErrNoCheckpoint is the 404 of a log that has signed nothing yet.
func ErrNoCheckpoint() error {
	return apperr.New(apperr.KindNotFound, "the log has no signed checkpoint yet: the registry signs one within seconds of an event, once a signing key is set (transparency.signing-key)")
}

func (s *service) Checkpoint(ctx context.Context, _ struct{}) (LogCheckpoint, error) {
	c, err := s.store.LatestCheckpoint(ctx)
	if apperr.Is(err, apperr.KindNotFound) {
		return LogCheckpoint{}, ErrNoCheckpoint()
	}
	if err != nil {
		return LogCheckpoint{}, err
	}
	return LogCheckpoint{Origin: s.settings.Keys.Origin(), TreeSize: c.Size, RootHash: c.Root, Note: c.Note}, nil
}

func (s *service) LogKeys(context.Context, struct{}) (LogKeysAnswer, error) {
	return LogKeysAnswer{Origin: s.settings.Keys.Origin(), Keys: append([]string{}, s.settings.Keys.Public()...)}, nil
}

// treeSize is the size a proof is made against: the one asked for, which
// no signed checkpoint may be smaller than, or the latest checkpoint's.
func (s *service) treeSize(ctx context.Context, field string, asked *uint64) (uint64, error) {
	latest, err := s.store.LatestCheckpoint(ctx)
	if apperr.Is(err, apperr.KindNotFound) {
		return 0, ErrNoCheckpoint()
	}
	if err != nil {
		return 0, err
	}
	if asked == nil {
		return latest.Size, nil
	}
	if *asked > latest.Size {
		return 0, apperr.Invalid(apperr.FieldError{Field: field,
			Message: fmt.Sprintf("must be at most %d, the size of the latest signed checkpoint", latest.Size)})
	}
	return *asked, nil
}

func (s *service) Inclusion(ctx context.Context, q InclusionQuery) (InclusionAnswer, error) {
	size, err := s.treeSize(ctx, "tree_size", q.TreeSize)
	if err != nil {
		return InclusionAnswer{}, err
	}
	var leaf uint64
	field := "leaf_index"
	if q.EventID != nil {
		if leaf, err = s.store.LeafOf(ctx, *q.EventID); err != nil {
			return InclusionAnswer{}, err
		}
		field = "event_id"
	} else {
		leaf = *q.LeafIndex
	}
	if leaf >= size {
		return InclusionAnswer{}, apperr.Invalid(apperr.FieldError{Field: field, Message: fmt.Sprintf(
			"is leaf %d, not in the tree of %d leaves: ask for a larger tree_size, or again after the next checkpoint (within seconds)", leaf, size)})
	}
	hashes, err := s.store.InclusionProof(ctx, leaf, size)
	return InclusionAnswer{LeafIndex: leaf, TreeSize: size, Hashes: hashes}, err
}

func (s *service) Consistency(ctx context.Context, q ConsistencyQuery) (ConsistencyAnswer, error) {
	to, err := s.treeSize(ctx, "to", q.To)
	if err != nil {
		return ConsistencyAnswer{}, err
	}
	if q.From > to {
		return ConsistencyAnswer{}, apperr.Invalid(apperr.FieldError{Field: "from", Message: fmt.Sprintf("must be at most to (%d)", to)})
	}
	hashes, err := s.store.ConsistencyProof(ctx, q.From, to)
	return ConsistencyAnswer{From: q.From, To: to, Hashes: hashes}, err
}

func (s *service) Entry(ctx context.Context, leaf uint64) (LogEntry, error) {
	return s.store.Entry(ctx, leaf)
}

func (s *service) Tile(ctx context.Context, t TilePath) (Tile, error) {
	if !t.InTree(s.signed.Load()) {
		latest, err := s.store.LatestCheckpoint(ctx)
		if err != nil && !apperr.Is(err, apperr.KindNotFound) {
			return Tile{}, err
		}
		for seen := s.signed.Load(); latest.Size > seen && !s.signed.CompareAndSwap(seen, latest.Size); seen = s.signed.Load() {
		}
		if !t.InTree(latest.Size) {
			return Tile{}, apperr.New(apperr.KindNotFound, fmt.Sprintf(
				"no tile %s in the tree of the latest signed checkpoint (%d leaves)", t, latest.Size))
		}
	}
	return s.store.HashTile(ctx, t)
}
