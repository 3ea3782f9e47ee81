// Package meters is the assets service's component for meter readings:
// what an asset's meters (operating hours, kilometres, cycles) showed, and
// when. A meter counts up: a reading below the one before it is refused
// unless it says the meter was reset. Its layers are the service's own:
// Service (this file), endpoints (endpoint.go), HTTP transport
// (transport.go) and PostgreSQL store (store.go), composed in the
// service's spec.go.
package meters

import (
	"context"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Service is what the meters component does. Errors are *apperr.Error.
type Service interface {
	// CreateReading records a reading of one of the asset's meters.
	CreateReading(ctx context.Context, by model.Caller, assetID uuid.UUID, in ReadingInput) (Reading, error)
	// CreateReadings records a batch of readings of the asset, each as
	// CreateReading would, in order; errs[i] is item i's decoding error.
	// Each outcome is an item's; the error fails the whole batch.
	CreateReadings(ctx context.Context, by model.Caller, assetID uuid.UUID, in []ReadingInput, errs []error) ([]model.ItemOutcome, error)
	GetReading(ctx context.Context, by model.Caller, assetID, id uuid.UUID) (Reading, error)
	// ListReadings pages through an asset's readings, oldest first.
	ListReadings(ctx context.Context, by model.Caller, f ReadingFilter, page model.Page) (model.Paged[Reading], error)
}

// AccessFunc is an asset's access (its owner and grants), as the assets
// root keeps it: readings are part of an asset's record, seen with it and
// recorded by those who may record on it (model.Access). A missing asset
// is an apperr not-found.
type AccessFunc func(ctx context.Context, assetID uuid.UUID) (model.Access, error)

// service holds the rules of a reading's fields; the store checks it
// against its neighbours under the meter's lock.
type service struct {
	store  *Store
	access AccessFunc
}

// NewService returns the service over store; access answers who sees
// which asset.
func NewService(store *Store, access AccessFunc) Service {
	return &service{store: store, access: access}
}

// mayRead is nil when by sees the asset: a 404 otherwise, as if it did
// not exist. A caller bound to no organization reads without asking.
func (s *service) mayRead(ctx context.Context, by model.Caller, assetID uuid.UUID) error {
	if by.Organization == "" {
		return nil
	}
	acc, err := s.access(ctx, assetID)
	if err == nil && !acc.Sees(by) {
		err = apperr.NotFound("asset", assetID.String())
	}
	return err
}

// mayRecord is nil when by may record on the asset (model.Access.MayRecord).
func (s *service) mayRecord(ctx context.Context, by model.Caller, assetID uuid.UUID) error {
	if by.Organization == "" {
		return nil
	}
	acc, err := s.access(ctx, assetID)
	if err != nil {
		return err
	}
	return acc.MayRecord(by)
}

func (s *service) CreateReading(ctx context.Context, by model.Caller, assetID uuid.UUID, in ReadingInput) (Reading, error) {
	r, err := in.check()
	if err == nil {
		err = s.mayRecord(ctx, by, assetID)
	}
	if err != nil {
		return Reading{}, err
	}
	return s.store.CreateReading(ctx, by, assetID, r)
}

func (s *service) CreateReadings(ctx context.Context, by model.Caller, assetID uuid.UUID, in []ReadingInput, errs []error) ([]model.ItemOutcome, error) {
	if err := s.mayRecord(ctx, by, assetID); err != nil {
		return nil, err
	}
	out, checked := make([]model.ItemOutcome, len(in)), make([]reading, len(in))
	for i := range in {
		if out[i].Err = errs[i]; out[i].Err == nil {
			checked[i], out[i].Err = in[i].check()
		}
	}
	return out, s.store.CreateReadings(ctx, by, assetID, checked, out)
}

func (s *service) GetReading(ctx context.Context, by model.Caller, assetID, id uuid.UUID) (Reading, error) {
	if err := s.mayRead(ctx, by, assetID); err != nil {
		return Reading{}, err
	}
	return s.store.GetReading(ctx, assetID, id)
}

func (s *service) ListReadings(ctx context.Context, by model.Caller, f ReadingFilter, page model.Page) (model.Paged[Reading], error) {
	if err := s.mayRead(ctx, by, f.AssetID); err != nil {
		return model.Paged[Reading]{}, err
	}
	return s.store.ListReadings(ctx, f, page)
}
