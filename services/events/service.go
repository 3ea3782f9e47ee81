// Package events is the change feed, each resource's history and the
// webhooks of the registry: it consumes the stream every service's outbox
// is published to (NATS JetStream), stores each event once in a global
// order, serves GET /events and GET /<resource>/{id}/history, and delivers
// events to subscribed URLs, signed, retried and in order per subject.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/services/events/feed"
)

// Service is the events service's domain.
type Service interface {
	Feed(ctx context.Context, q feed.FeedQuery) (feed.Feed, error)
	History(ctx context.Context, q feed.HistoryQuery) (feed.History, error)

	// The transparency log.
	Checkpoint(ctx context.Context, _ struct{}) (LogCheckpoint, error)
	LogKeys(ctx context.Context, _ struct{}) (LogKeysAnswer, error)
	Inclusion(ctx context.Context, q InclusionQuery) (InclusionAnswer, error)
	Consistency(ctx context.Context, q ConsistencyQuery) (ConsistencyAnswer, error)
	// Entry is the bytes of a leaf: an event's, or a redaction's entry.
	Entry(ctx context.Context, leaf uint64) (LogEntry, error)
	// AsOf is a resource as it was at an instant, from its history.
	AsOf(ctx context.Context, q feed.AsOfQuery) (json.RawMessage, error)
	// Passport is an asset's record with the proofs of every event of it.
	Passport(ctx context.Context, asset uuid.UUID) (PassportBundle, error)
}

// Settings are the service's rules that an operator sets.
type Settings struct {
	// Keys sign the log's checkpoints and verify them.
	Keys LogKeys
}

type service struct {
	store    *Store
	settings Settings
}

// NewService returns the service over st.
func NewService(st *Store, settings Settings) Service { return &service{store: st, settings: settings} }

func (s *service) Feed(ctx context.Context, q feed.FeedQuery) (feed.Feed, error) {
	return s.store.Feed(ctx, q)
}

func (s *service) History(ctx context.Context, q feed.HistoryQuery) (feed.History, error) {
	return s.store.History(ctx, q)
}

// errNoCheckpoint is the 404 of a log that has signed nothing yet.
func errNoCheckpoint() error {
	return apperr.New(apperr.KindNotFound, "the log has no signed checkpoint yet: the registry signs one within seconds of an event, once a signing key is set (transparency.signing-key)")
}

func (s *service) Checkpoint(ctx context.Context, _ struct{}) (LogCheckpoint, error) {
	c, err := s.store.LatestCheckpoint(ctx)
	if apperr.Is(err, apperr.KindNotFound) {
		return LogCheckpoint{}, errNoCheckpoint()
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
		return 0, errNoCheckpoint()
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

func (s *service) AsOf(ctx context.Context, q feed.AsOfQuery) (json.RawMessage, error) {
	return s.store.AsOf(ctx, q.Kind, q.ID, q.At)
}

// Passport is an asset's passport against the latest checkpoint (the
// events after it are not in it yet: the next checkpoint, within
// seconds, holds them), measured now and read when written: it is written
// as it is read, so what a passport holds in the process is one batch,
// whatever its size.
func (s *service) Passport(ctx context.Context, asset uuid.UUID) (PassportBundle, error) {
	c, err := s.store.LatestCheckpoint(ctx)
	if apperr.Is(err, apperr.KindNotFound) {
		return PassportBundle{}, errNoCheckpoint()
	}
	if err != nil {
		return PassportBundle{}, err
	}
	events, bytes, err := s.store.PassportSize(ctx, asset, c.Size)
	if err != nil {
		return PassportBundle{}, err
	}
	return PassportBundle{AssetID: asset, Checkpoint: c, Events: events, Size: passportSize(events, bytes),
		write: func(ctx context.Context, w io.Writer) error {
			// The snapshot stays open while the client reads: a client
			// too slow to take the passport in passportTime loses it
			// rather than hold back the schema's vacuum.
			ctx, cancel := context.WithTimeout(ctx, passportTime)
			defer cancel()
			p, err := newPassportWriter(w, asset.String(), c.Note)
			if err != nil {
				return err
			}
			if err := s.store.ReadPassport(ctx, asset, c.Size, p); err != nil {
				return err
			}
			return p.Close()
		}}, nil
}
