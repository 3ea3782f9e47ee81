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
	GetReading(ctx context.Context, assetID, id uuid.UUID) (Reading, error)
	// ListReadings pages through an asset's readings, oldest first.
	ListReadings(ctx context.Context, f ReadingFilter, page model.Page) (model.Paged[Reading], error)
}

// service holds the rules of a reading's fields; the store checks it
// against its neighbours under the meter's lock.
type service struct{ store *Store }

// NewService returns the service over store.
func NewService(store *Store) Service { return &service{store: store} }

func (s *service) CreateReading(ctx context.Context, by model.Caller, assetID uuid.UUID, in ReadingInput) (Reading, error) {
	r, err := in.check()
	if err != nil {
		return Reading{}, err
	}
	return s.store.CreateReading(ctx, by, assetID, r)
}

func (s *service) CreateReadings(ctx context.Context, by model.Caller, assetID uuid.UUID, in []ReadingInput, errs []error) ([]model.ItemOutcome, error) {
	out, checked := make([]model.ItemOutcome, len(in)), make([]reading, len(in))
	for i := range in {
		if out[i].Err = errs[i]; out[i].Err == nil {
			checked[i], out[i].Err = in[i].check()
		}
	}
	return out, s.store.CreateReadings(ctx, by, assetID, checked, out)
}

func (s *service) GetReading(ctx context.Context, assetID, id uuid.UUID) (Reading, error) {
	return s.store.GetReading(ctx, assetID, id)
}

func (s *service) ListReadings(ctx context.Context, f ReadingFilter, page model.Page) (model.Paged[Reading], error) {
	return s.store.ListReadings(ctx, f, page)
}
