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
	"github.com/assetregistry/registry/pkg/refs"
)

// Service is what the actions service does. Errors are *apperr.Error.
type Service interface {
	CreateAction(ctx context.Context, in ActionInput) (ActionDetail, error)
	// CreateActions records a batch, each item as CreateAction would, with
	// their references asked about together; errs[i] is item i's decoding
	// error. Each outcome is an item's; the error fails the whole batch.
	CreateActions(ctx context.Context, in []ActionInput, errs []error) ([]model.ItemOutcome, error)
	GetAction(ctx context.Context, id uuid.UUID) (ActionDetail, error)
	ListActions(ctx context.Context, f ActionFilter, page model.Page) (model.Paged[Action], error)
	UpdateAction(ctx context.Context, id uuid.UUID, p ActionPatch) (ActionDetail, error)
	// DeleteAction deletes the action with its action documents.
	DeleteAction(ctx context.Context, id uuid.UUID) error

	CreateActionDocument(ctx context.Context, actionID uuid.UUID, in ActionDocumentInput) (ActionDocument, error)
	// CreateActionDocuments links documents to many actions in one call:
	// each item is an action document's create body, action_id included.
	CreateActionDocuments(ctx context.Context, in []ActionDocumentInput, errs []error) ([]model.ItemOutcome, error)
	UpdateActionDocument(ctx context.Context, actionID, id uuid.UUID, p ActionDocumentPatch) (ActionDocument, error)
	DeleteActionDocument(ctx context.Context, actionID, id uuid.UUID) error

	// Compliance is one page of what is due: a row per asset and action
	// type, in asset creation order, then action type.
	Compliance(ctx context.Context, f ComplianceFilter, page model.Page) (model.Paged[ComplianceRow], error)
}

// service holds the rules: what an input must be, which references an
// action or an action document makes (the store checks them with their
// owners inside the write), and which list filters agree. The store
// speaks SQL.
type service struct {
	store *Store
	today func() model.Date // the UTC date overdue is measured against
}

// NewService returns the service over store.
func NewService(store *Store) Service { return &service{store: store, today: model.Today} }

// actionReferences are the references an action makes that must exist: its
// asset and, when given, its person and organization. With old (a patch),
// only those that differ from old's: nothing left alone is asked again.
func actionReferences(in ActionInput, old *Action) []refs.Target {
	var was Action
	if old != nil {
		was = *old
	}
	changed := func(now, before *uuid.UUID) bool {
		return now != nil && (old == nil || before == nil || *before != *now)
	}
	var out []refs.Target
	if old == nil || was.AssetID != in.AssetID.UUID {
		out = append(out, refs.Target{Field: "asset_id", Kind: "asset", ID: in.AssetID.UUID})
	}
	if id := in.PersonID.Ptr(); changed(id, was.PersonID) {
		out = append(out, refs.Target{Field: "person_id", Kind: "person", ID: *id})
	}
	if id := in.OrganizationID.Ptr(); changed(id, was.OrganizationID) {
		out = append(out, refs.Target{Field: "organization_id", Kind: "organization", ID: *id})
	}
	return out
}

// documentReferences is the reference an action document makes: its
// document, asked again only when a patch changes it.
func documentReferences(in ActionDocumentInput, old *ActionDocument) []refs.Target {
	if old != nil && old.DocumentID == in.DocumentID.UUID {
		return nil
	}
	return []refs.Target{{Field: "document_id", Kind: "document", ID: in.DocumentID.UUID}}
}

func (s *service) CreateAction(ctx context.Context, in ActionInput) (ActionDetail, error) {
	in, err := in.Normalize()
	if err != nil {
		return ActionDetail{}, err
	}
	return s.store.CreateAction(ctx, in, auth.Subject(ctx), actionReferences(in, nil))
}

func (s *service) CreateActions(ctx context.Context, in []ActionInput, errs []error) ([]model.ItemOutcome, error) {
	out := make([]model.ItemOutcome, len(in))
	for i := range in {
		if out[i].Err = errs[i]; out[i].Err == nil {
			in[i], out[i].Err = in[i].Normalize()
		}
	}
	targetsOf := func(in ActionInput) []refs.Target { return actionReferences(in, nil) }
	return out, s.store.CreateActions(ctx, in, out, auth.Subject(ctx), targetsOf)
}

func (s *service) GetAction(ctx context.Context, id uuid.UUID) (ActionDetail, error) {
	return s.store.GetAction(ctx, id)
}

func (s *service) UpdateAction(ctx context.Context, id uuid.UUID, p ActionPatch) (ActionDetail, error) {
	changed := func(old Action, in ActionInput) []refs.Target { return actionReferences(in, &old) }
	if err := s.store.UpdateAction(ctx, id, auth.Subject(ctx), p.Apply, changed); err != nil {
		return ActionDetail{}, err
	}
	return s.store.GetAction(ctx, id)
}

func (s *service) DeleteAction(ctx context.Context, id uuid.UUID) error {
	return s.store.DeleteAction(ctx, id)
}

// ListActions refuses a performed_at range that ends before it starts:
// an empty answer would hide a client's mistake.
func (s *service) ListActions(ctx context.Context, f ActionFilter, page model.Page) (model.Paged[Action], error) {
	if f.PerformedFrom != nil && f.PerformedTo != nil && f.PerformedTo.Before(*f.PerformedFrom) {
		return model.Paged[Action]{}, apperr.Invalid(apperr.FieldError{Field: "performed_to",
			Message: "must not be before performed_from " + f.PerformedFrom.String()})
	}
	return s.store.ListActions(ctx, f, page)
}

func (s *service) CreateActionDocument(ctx context.Context, actionID uuid.UUID, in ActionDocumentInput) (ActionDocument, error) {
	in, err := in.Normalize(actionID)
	if err != nil {
		return ActionDocument{}, err
	}
	return s.store.CreateActionDocument(ctx, in, auth.Subject(ctx), documentReferences(in, nil))
}

func (s *service) CreateActionDocuments(ctx context.Context, in []ActionDocumentInput, errs []error) ([]model.ItemOutcome, error) {
	out := make([]model.ItemOutcome, len(in))
	for i := range in {
		if out[i].Err = errs[i]; out[i].Err == nil {
			in[i], out[i].Err = in[i].Normalize(in[i].ActionID.UUID)
		}
	}
	return out, s.store.CreateActionDocuments(ctx, in, out, auth.Subject(ctx))
}

func (s *service) UpdateActionDocument(ctx context.Context, actionID, id uuid.UUID, p ActionDocumentPatch) (ActionDocument, error) {
	changed := func(old ActionDocument, in ActionDocumentInput) []refs.Target { return documentReferences(in, &old) }
	if err := s.store.UpdateActionDocument(ctx, actionID, id, auth.Subject(ctx), p.Apply, changed); err != nil {
		return ActionDocument{}, err
	}
	return s.store.GetActionDocument(ctx, actionID, id)
}

func (s *service) DeleteActionDocument(ctx context.Context, actionID, id uuid.UUID) error {
	return s.store.DeleteActionDocument(ctx, actionID, id)
}

// Compliance measures overdue against today (UTC) whatever due_before
// says: a due_before in the past is allowed, and then no row is due.
func (s *service) Compliance(ctx context.Context, f ComplianceFilter, page model.Page) (model.Paged[ComplianceRow], error) {
	return s.store.Compliance(ctx, f.definite(s.today()), page)
}
