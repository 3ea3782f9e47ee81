package passport

import (
	"context"
	"io"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/services/events/tlog"
)

// Service is the passports' domain.
type Service interface {
	// Passport is an asset's record with the proofs of every event of it.
	Passport(ctx context.Context, asset uuid.UUID) (Bundle, error)
}

type service struct {
	store *Store
	log   *tlog.Store
}

// NewService returns the service over st, against the checkpoints of log.
func NewService(st *Store, log *tlog.Store) Service { return &service{store: st, log: log} }

// Passport is an asset's passport against the latest checkpoint (the
// events after it are not in it yet: the next checkpoint, within
// seconds, holds them), measured now and read when written: it is written
// as it is read, so what a passport holds in the process is one batch,
// whatever its size.
func (s *service) Passport(ctx context.Context, asset uuid.UUID) (Bundle, error) {
	if err := Visible(ctx, s.store, asset); err != nil {
		return Bundle{}, err
	}
	c, err := s.log.LatestCheckpoint(ctx)
	if apperr.Is(err, apperr.KindNotFound) {
		return Bundle{}, tlog.ErrNoCheckpoint()
	}
	if err != nil {
		return Bundle{}, err
	}
	events, bytes, err := s.store.Size(ctx, asset, c.Size)
	if err != nil {
		return Bundle{}, err
	}
	return Bundle{AssetID: asset, Checkpoint: c, Events: events, Size: passportSize(events, bytes),
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
			if err := s.store.Read(ctx, asset, c.Size, p); err != nil {
				return err
			}
			return p.Close()
		}}, nil
}
