package actions

// Organizations as tenants (docs/tenancy.md): what a caller bound
// to an organization sees and records on. An action is seen with its asset,
// its action documents with their action; model.Access decides, over the
// service's copy of who sees which asset (pkg/access), refreshed before
// each call of a bound caller. A caller bound to no organization (and an
// admin) takes none of these steps: its calls cost what they did before.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/refs"
)

// Tenancy is what the service asks to apply the rule: the copy of the
// assets' access, and the documents service, which says whether a caller
// sees a document no action it sees links (nil: unconfigured, and only
// such links are seen).
type Tenancy struct {
	Seen      *access.Copy
	Documents *peer.Client
}

// bound reports whether by sees only its organization's rows.
func bound(by model.Caller) bool { return by.Organization != "" }

// unknownAsset is what a caller is told of an asset it does not see: the
// 422 of an asset that does not exist.
func unknownAsset(id uuid.UUID) error {
	return refs.Known(nil).Missing(refs.Target{Field: "asset_id", Kind: "asset", ID: id})
}

// recordable is, for each asset of ids, nil when by may record an action
// on it, else the item's error: a 422 on asset_id for an asset by does not
// see (or that does not exist), a 403 not-permitted for one by sees
// through a read grant. An unbound caller gets no answers (all nil).
func (s *service) recordable(ctx context.Context, by model.Caller, ids []uuid.UUID) (map[uuid.UUID]error, error) {
	out := map[uuid.UUID]error{}
	if !bound(by) || len(ids) == 0 {
		return out, nil
	}
	if err := s.tenancy.Seen.Refresh(ctx); err != nil {
		return nil, err
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = id.String()
	}
	found, err := s.tenancy.Seen.Lookup(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		a, ok := found[id.String()]
		switch {
		case !ok || !a.Sees(by):
			out[id] = unknownAsset(id)
		default:
			out[id] = a.MayRecord(by)
		}
	}
	return out, nil
}

// recordableOn is recordable of one asset.
func (s *service) recordableOn(ctx context.Context, by model.Caller, id uuid.UUID) error {
	errs, err := s.recordable(ctx, by, []uuid.UUID{id})
	if err != nil {
		return err
	}
	return errs[id]
}

// seesAction is nil when by sees the action (its asset): else the 404 of
// an action that does not exist.
func (s *service) seesAction(ctx context.Context, by model.Caller, a Action) error {
	if !bound(by) {
		return nil
	}
	seen, err := s.tenancy.Seen.Sees(ctx, by, a.AssetID.String())
	if err != nil {
		return err
	}
	if !seen {
		return apperr.NotFound("action", a.ID.String())
	}
	return nil
}

// changesAction is nil when by may change the action with id (or link
// documents to it): 404 when it does not see it (or there is none), 403
// not-permitted when it sees its asset through a read grant. Only a bound
// caller is asked about; the rest of the rules are the store's, in its
// transaction.
func (s *service) changesAction(ctx context.Context, by model.Caller, id uuid.UUID) error {
	if !bound(by) {
		return nil
	}
	a, err := s.store.GetAction(ctx, id)
	if err != nil {
		return err
	}
	if err := s.seesAction(ctx, by, a.Action); err != nil {
		return err
	}
	if err := s.recordableOn(ctx, by, a.AssetID); apperr.Is(err, apperr.KindInvalid) {
		return apperr.NotFound("action", id.String()) // gone from its view since
	} else if err != nil {
		return err
	}
	return nil
}

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
	if len(ask) == 0 || s.tenancy.Documents == nil {
		return seen, nil
	}
	var answer struct {
		DocumentIDs []uuid.UUID `json:"document_ids"`
	}
	if err := s.tenancy.Documents.Call(ctx, "POST", documentsVisiblePath, map[string]any{"document_ids": ask}, &answer); err != nil {
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
	if err := s.changesAction(ctx, by, in.ActionID.UUID); err != nil {
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
// action with p: as changesAction, and a document the patch names anew
// must be one by sees.
func (s *service) relinkable(ctx context.Context, by model.Caller, actionID, id uuid.UUID, p ActionDocumentPatch) error {
	if !bound(by) {
		return nil
	}
	if err := s.changesAction(ctx, by, actionID); err != nil {
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

// hideHolder is err, unless it is a 409 duplicate naming an action a
// bound caller does not see: then a conflict that names none.
func (s *service) hideHolder(ctx context.Context, by model.Caller, err error) error {
	holder, ok := existingID(err)
	if !ok || !bound(by) {
		return err
	}
	if _, gerr := s.GetAction(ctx, by, holder); apperr.Is(gerr, apperr.KindNotFound) {
		var dup *apperr.Error
		errors.As(err, &dup)
		return apperr.Conflict(dup.Detail)
	} else if gerr != nil {
		return gerr
	}
	return err
}

// hiddenHolders are, of the source pairs found (each with the action
// holding it), those whose action a bound caller does not see: their
// items answer a conflict that names no action. found loses them.
func (s *service) hiddenHolders(ctx context.Context, by model.Caller, found map[SourceKey]uuid.UUID) (map[SourceKey]bool, error) {
	hidden := map[SourceKey]bool{}
	if !bound(by) {
		return hidden, nil
	}
	for k, id := range found {
		_, err := s.GetAction(ctx, by, id)
		switch {
		case apperr.Is(err, apperr.KindNotFound):
			hidden[k] = true
			delete(found, k)
		case err != nil:
			return nil, err
		}
	}
	return hidden, nil
}

// DocumentsSeenRequest is the body of the internal route the documents
// service asks: which of DocumentIDs an action on an asset Organization
// sees links.
type DocumentsSeenRequest struct {
	OrganizationID string      `json:"organization_id"`
	DocumentIDs    []uuid.UUID `json:"document_ids"`
}

// DocumentsSeenAnswer lists those documents, and the action documents
// linking them on the actions the organization sees.
type DocumentsSeenAnswer struct {
	DocumentIDs       []uuid.UUID `json:"document_ids"`
	ActionDocumentIDs []uuid.UUID `json:"action_document_ids"`
}

// DocumentsSeenPath is the internal route of that question.
const DocumentsSeenPath = "/internal/documents_seen"

// maxDocumentsSeen bounds the ids of one question.
const maxDocumentsSeen = 1000

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
	if err := s.tenancy.Seen.Refresh(ctx); err != nil {
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
