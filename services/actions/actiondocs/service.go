package actiondocs

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/refs"
)

// Service is what action documents do. Errors are *apperr.Error.
type Service interface {
	CreateActionDocument(ctx context.Context, g model.Guard, actionID uuid.UUID, in ActionDocumentInput) (ActionDocument, error)
	// CreateActionDocuments links documents to many actions in one call:
	// each item is an action document's create body, action_id included.
	CreateActionDocuments(ctx context.Context, g model.Guard, in []ActionDocumentInput, errs []error) ([]model.ItemOutcome, error)
	// ListActionDocuments is one page of an action's action documents, in
	// creation order: all of them, where the action's answer embeds the first.
	ListActionDocuments(ctx context.Context, by model.Caller, f ActionDocumentFilter, page model.Page) (model.Paged[ActionDocument], error)
	UpdateActionDocument(ctx context.Context, g model.Guard, actionID, id uuid.UUID, p ActionDocumentPatch) (ActionDocument, error)
	DeleteActionDocument(ctx context.Context, g model.Guard, actionID, id uuid.UUID) error

	// DocumentsSeen is the documents service's question (internal): which
	// documents an action an organization sees links.
	DocumentsSeen(ctx context.Context, in DocumentsSeenRequest) (DocumentsSeenAnswer, error)
}

// Actions is what action documents ask of their actions (the root's
// rules of organizations as tenants, docs/tenancy.md): each is nil for a
// caller bound to no organization.
type Actions interface {
	// SeesAction is nil when by sees the action with id: else the 404 of
	// an action that does not exist.
	SeesAction(ctx context.Context, by model.Caller, id uuid.UUID) error
	// ChangesAction is nil when by may change the action with id (or
	// link documents to it): 404 when it does not see it, 403
	// not-permitted when it sees its asset through a read grant.
	ChangesAction(ctx context.Context, by model.Caller, id uuid.UUID) error
}

// Settings are what the service asks to apply the tenancy rule: the
// action's rules, the copy of the assets' access (refreshed before the
// documents service's question), and the documents service, which says
// whether a caller sees a document no action it sees links (nil:
// unconfigured, and only such links are seen).
type Settings struct {
	Actions   Actions
	Seen      *access.Copy
	Documents *peer.Client
}

// service holds the rules: what an input must be, which reference an
// action document makes, and who may link what. It asks the owners of
// the documents (refs.Registry.Checking, or Ask for a batch) and hands the
// store the check, which the store confirms inside its transaction.
type service struct {
	store    *Store
	refs     *refs.Registry
	settings Settings
}

// NewService returns the service over store, asking peers through r.
func NewService(store *Store, r *refs.Registry, s Settings) Service {
	return &service{store: store, refs: r, settings: s}
}

// documentReferences is the reference an action document makes: its
// document, asked again only when a patch changes it.
func documentReferences(in ActionDocumentInput, old *ActionDocument) []refs.Target {
	if old != nil && old.DocumentID == in.DocumentID.UUID {
		return nil
	}
	return []refs.Target{{Field: "document_id", Kind: "document", ID: in.DocumentID.UUID}}
}

func (s *service) CreateActionDocument(ctx context.Context, g model.Guard, actionID uuid.UUID, in ActionDocumentInput) (ActionDocument, error) {
	in, err := in.Normalize(actionID)
	if err == nil {
		err = s.linkable(ctx, g.Caller, in)
	}
	if err != nil {
		return ActionDocument{}, err
	}
	return refs.CheckingFor(ctx, s.refs, func(checked *refs.Checked) (ActionDocument, error) {
		return s.store.CreateActionDocument(ctx, g, in, checked.Of(documentReferences(in, nil)...))
	})
}

func (s *service) CreateActionDocuments(ctx context.Context, g model.Guard, in []ActionDocumentInput, errs []error) ([]model.ItemOutcome, error) {
	out := make([]model.ItemOutcome, len(in))
	var all []refs.Target
	for i := range in {
		if out[i].Err = errs[i]; out[i].Err == nil {
			in[i], out[i].Err = in[i].Normalize(in[i].ActionID.UUID)
		}
		if out[i].Err == nil {
			// The item's own answer (404, 403, 422); anything else fails the batch.
			if out[i].Err = s.linkable(ctx, g.Caller, in[i]); out[i].Err != nil && !apperr.Is(out[i].Err, apperr.KindNotFound) &&
				!apperr.Is(out[i].Err, apperr.KindForbidden) && !apperr.Is(out[i].Err, apperr.KindInvalid) {
				return out, out[i].Err
			}
		}
		if out[i].Err == nil {
			all = append(all, documentReferences(in[i], nil)...)
		}
	}
	if len(all) == 0 {
		return out, nil
	}
	// The documents of all items asked about together, each owner once,
	// before the store's transaction.
	checked, err := s.refs.Ask(ctx, all...)
	if err != nil {
		return out, err
	}
	return out, s.refs.CheckingFrom(ctx, checked, func(checked *refs.Checked) error {
		return s.store.CreateActionDocuments(ctx, g, in, out, checked)
	})
}

func (s *service) ListActionDocuments(ctx context.Context, by model.Caller, f ActionDocumentFilter, page model.Page) (model.Paged[ActionDocument], error) {
	if bound(by) {
		if err := s.settings.Actions.SeesAction(ctx, by, f.ActionID); err != nil {
			return model.Paged[ActionDocument]{}, err
		}
	}
	return s.store.ListActionDocuments(ctx, f, page)
}

func (s *service) UpdateActionDocument(ctx context.Context, g model.Guard, actionID, id uuid.UUID, p ActionDocumentPatch) (ActionDocument, error) {
	if err := s.relinkable(ctx, g.Caller, actionID, id, p); err != nil {
		return ActionDocument{}, err
	}
	changed := func(old ActionDocument, in ActionDocumentInput) []refs.Target { return documentReferences(in, &old) }
	if err := s.refs.Checking(ctx, func(checked *refs.Checked) error {
		return s.store.UpdateActionDocument(ctx, g, actionID, id, p.Apply, changed, checked)
	}); err != nil {
		return ActionDocument{}, err
	}
	return s.store.GetActionDocument(ctx, actionID, id)
}

// DeleteActionDocument removes an action document (the document itself
// stays) through the reference protocol, as the root's delete of an
// action does.
func (s *service) DeleteActionDocument(ctx context.Context, g model.Guard, actionID, id uuid.UUID) error {
	if err := s.settings.Actions.ChangesAction(ctx, g.Caller, actionID); err != nil {
		return err
	}
	current := func(ctx context.Context) (any, error) { return s.store.GetActionDocument(ctx, actionID, id) }
	return s.refs.DeleteRow(ctx, g, "action_document", "action_documents", id, current, s.store.DeleteActionDocument(actionID, id))
}

// Organizations as tenants (docs/tenancy.md): an action document is seen
// with its action, which the root decides (Actions). A caller bound to no
// organization (and an admin) takes none of these steps.

// bound reports whether by sees only its organization's rows.
func bound(by model.Caller) bool { return by.Organization != "" }

// documentsSeen is the documents of ids by sees, for linking them: those
// an action by sees links already (asked here), and of the others those
// the documents service says by sees (its internal route, asked on by's
// behalf: the peer call carries by's organization). A document by does
// not see is linked as one that does not exist would be (422).
func (s *service) documentsSeen(ctx context.Context, by model.Caller, ids []uuid.UUID) (map[uuid.UUID]bool, error) {
	seen := map[uuid.UUID]bool{}
	if !bound(by) || len(ids) == 0 {
		return seen, nil
	}
	linked, err := documentsLinkedSeen(ctx, s.store.DB(ctx), by.Organization, ids)
	if err != nil {
		return nil, err
	}
	var ask []uuid.UUID
	for _, id := range ids {
		if len(linked[id]) > 0 {
			seen[id] = true
		} else if !slices.Contains(ask, id) {
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 || s.settings.Documents == nil {
		return seen, nil
	}
	var answer struct {
		DocumentIDs []uuid.UUID `json:"document_ids"`
	}
	if err := s.settings.Documents.Call(ctx, "POST", documentsVisiblePath, map[string]any{"document_ids": ask}, &answer); err != nil {
		return nil, fmt.Errorf("ask the documents service which of %d documents the caller sees: %w", len(ask), err)
	}
	for _, id := range answer.DocumentIDs {
		seen[id] = true
	}
	return seen, nil
}

// documentsVisiblePath is the documents service's internal route that
// says which documents the caller on whose behalf it is asked sees.
const documentsVisiblePath = "/internal/documents/visible"

// unseenDocument is a link's document by does not see, as one that does
// not exist.
func unseenDocument(in ActionDocumentInput) error {
	return refs.Known(nil).Missing(documentReferences(in, nil)...)
}

// linkable is nil when by may link in's document to in's action.
func (s *service) linkable(ctx context.Context, by model.Caller, in ActionDocumentInput) error {
	if !bound(by) {
		return nil
	}
	if err := s.settings.Actions.ChangesAction(ctx, by, in.ActionID.UUID); err != nil {
		return err
	}
	seen, err := s.documentsSeen(ctx, by, []uuid.UUID{in.DocumentID.UUID})
	if err != nil {
		return err
	}
	if !seen[in.DocumentID.UUID] {
		return unseenDocument(in)
	}
	return nil
}

// relinkable is nil when by may change the action document id of the
// action with p: as Actions.ChangesAction, and a document the patch names anew
// must be one by sees.
func (s *service) relinkable(ctx context.Context, by model.Caller, actionID, id uuid.UUID, p ActionDocumentPatch) error {
	if !bound(by) {
		return nil
	}
	if err := s.settings.Actions.ChangesAction(ctx, by, actionID); err != nil {
		return err
	}
	old, err := s.store.GetActionDocument(ctx, actionID, id)
	if err != nil {
		return err
	}
	in, err := p.Apply(old)
	if err != nil || in.DocumentID.UUID == old.DocumentID {
		return nil // the patch's own errors are the update's to answer
	}
	seen, err := s.documentsSeen(ctx, by, []uuid.UUID{in.DocumentID.UUID})
	if err == nil && !seen[in.DocumentID.UUID] {
		err = unseenDocument(in)
	}
	return err
}

// DocumentsSeen answers the documents service (the internal route POST
// /internal/documents_seen). The copy is refreshed first: a grant given
// before the question counts.
func (s *service) DocumentsSeen(ctx context.Context, in DocumentsSeenRequest) (DocumentsSeenAnswer, error) {
	out := DocumentsSeenAnswer{DocumentIDs: []uuid.UUID{}, ActionDocumentIDs: []uuid.UUID{}}
	if _, err := uuid.Parse(in.OrganizationID); err != nil {
		return out, apperr.Invalid(apperr.FieldError{Field: "organization_id", Message: "must be an organization's id"})
	}
	if len(in.DocumentIDs) > maxDocumentsSeen {
		return out, apperr.Invalid(apperr.FieldError{Field: "document_ids", Message: fmt.Sprintf("must hold at most %d ids", maxDocumentsSeen)})
	}
	if len(in.DocumentIDs) == 0 {
		return out, nil
	}
	if err := s.settings.Seen.Refresh(ctx); err != nil {
		return out, err
	}
	linked, err := documentsLinkedSeen(ctx, s.store.DB(ctx), in.OrganizationID, in.DocumentIDs)
	if err != nil {
		return out, err
	}
	for _, id := range in.DocumentIDs {
		if links := linked[id]; len(links) > 0 {
			out.DocumentIDs = append(out.DocumentIDs, id)
			out.ActionDocumentIDs = append(out.ActionDocumentIDs, links...)
			delete(linked, id) // an id asked twice is answered once
		}
	}
	return out, nil
}
