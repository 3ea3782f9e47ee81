package compliance

import (
	"context"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions/actiontypes"
	"github.com/assetregistry/registry/services/actions/due"
)

// Service answers GET /compliance. Errors are *apperr.Error.
type Service interface {
	// Compliance is one page of what is due: a row per asset and action
	// type, in asset creation order, then action type.
	Compliance(ctx context.Context, by model.Caller, f Filter, page model.Page) (model.Paged[Row], error)
}

// Settings are what the service asks besides its store: the copy of who
// sees which asset (pkg/access), and the action types some inspection
// plan is for (the plans component's).
type Settings struct {
	Seen    *access.Copy
	Planned func(ctx context.Context) ([]string, error)
}

type service struct {
	store *Store
	types *actiontypes.Catalog
	due   *due.Store // components
	today func() model.Date
	Settings
}

// NewService returns the service over store; the action types a filter
// may name are read from the same schema (actiontypes).
func NewService(store *Store, s Settings) Service {
	return &service{store: store, types: actiontypes.NewCatalog(actiontypes.NewStore(store.Store)),
		due: due.NewStore(store.Store), today: model.Today, Settings: s}
}

// Compliance measures overdue against today (UTC) whatever due_before
// says: a due_before in the past is allowed, and then no row is due.
func (s *service) Compliance(ctx context.Context, by model.Caller, f Filter, page model.Page) (model.Paged[Row], error) {
	if err := s.types.CheckAll(ctx, "action_type", f.ActionTypes); err != nil {
		return model.Paged[Row]{}, err
	}
	planned, err := s.Planned(ctx)
	if err == nil {
		f.seenBy, err = s.Seen.ForRead(ctx, by)
	}
	if err != nil {
		return model.Paged[Row]{}, err
	}
	types, err := s.types.Names(ctx)
	if err != nil {
		return model.Paged[Row]{}, err
	}
	q := f.definite(s.today(), planned, types)
	paged, err := s.store.Compliance(ctx, q, page)
	if err != nil || !f.Components {
		return paged, err
	}
	return paged, s.rollUp(ctx, q, paged.Items)
}
