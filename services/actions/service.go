// Package actions is the registry's service for actions (inspections,
// repairs and other work performed on an asset) and action documents
// (links from an action to a document). Its layers follow go-kit: Service
// (this file, plain Go types), endpoints (endpoint.go), HTTP transport
// (transport.go) and PostgreSQL store (store.go). Assets, people,
// organizations and documents belong to other services: references to
// them are kept whole with pkg/refs.
package actions

import (
	"context"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/model"
)

// Service is what the actions service does. Errors are *apperr.Error.
type Service interface {
	CreateAction(ctx context.Context, in ActionInput) (ActionDetail, error)
	GetAction(ctx context.Context, id uuid.UUID) (ActionDetail, error)
	ListActions(ctx context.Context, f ActionFilter, page model.Page) (model.Paged[Action], error)
	UpdateAction(ctx context.Context, id uuid.UUID, p ActionPatch) (ActionDetail, error)
	// DeleteAction deletes the action with its action documents.
	DeleteAction(ctx context.Context, id uuid.UUID) error

	CreateActionDocument(ctx context.Context, actionID uuid.UUID, in ActionDocumentInput) (ActionDocument, error)
	UpdateActionDocument(ctx context.Context, actionID, id uuid.UUID, p ActionDocumentPatch) (ActionDocument, error)
	DeleteActionDocument(ctx context.Context, actionID, id uuid.UUID) error
}

// service holds the rules. Reads and deletes, which have none beyond the
// store's, are the store's own methods.
type service struct {
	*Store
}

// NewService returns the service over store.
func NewService(store *Store) Service { return &service{store} }

func (s *service) CreateAction(ctx context.Context, in ActionInput) (ActionDetail, error) {
	in, err := in.Normalize()
	if err != nil {
		return ActionDetail{}, err
	}
	return s.Store.CreateAction(ctx, in, auth.Subject(ctx))
}

func (s *service) UpdateAction(ctx context.Context, id uuid.UUID, p ActionPatch) (ActionDetail, error) {
	if err := s.Store.UpdateAction(ctx, id, auth.Subject(ctx), p.Apply); err != nil {
		return ActionDetail{}, err
	}
	return s.Store.GetAction(ctx, id)
}

// ListActions refuses a performed_at range that ends before it starts:
// an empty answer would hide a client's mistake.
func (s *service) ListActions(ctx context.Context, f ActionFilter, page model.Page) (model.Paged[Action], error) {
	if f.PerformedFrom != nil && f.PerformedTo != nil && f.PerformedTo.Before(*f.PerformedFrom) {
		return model.Paged[Action]{}, apperr.Invalid(apperr.FieldError{Field: "performed_to",
			Message: "must not be before performed_from " + f.PerformedFrom.String()})
	}
	return s.Store.ListActions(ctx, f, page)
}

func (s *service) CreateActionDocument(ctx context.Context, actionID uuid.UUID, in ActionDocumentInput) (ActionDocument, error) {
	in, err := in.Normalize(actionID)
	if err != nil {
		return ActionDocument{}, err
	}
	return s.Store.CreateActionDocument(ctx, in, auth.Subject(ctx))
}

func (s *service) UpdateActionDocument(ctx context.Context, actionID, id uuid.UUID, p ActionDocumentPatch) (ActionDocument, error) {
	if err := s.Store.UpdateActionDocument(ctx, actionID, id, auth.Subject(ctx), p.Apply); err != nil {
		return ActionDocument{}, err
	}
	return s.Store.GetActionDocument(ctx, actionID, id)
}
