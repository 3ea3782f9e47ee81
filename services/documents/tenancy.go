package documents

// Organizations as tenants (docs/tenancy.md): a caller bound to an
// organization sees a document its organization's clients (or itself)
// uploaded, one an action on an asset it sees links, and one an asset
// type attaches (asset types are seen by every reader); of a document's
// action documents it sees those of the actions it sees. Any other
// document is answered as one that does not exist. A caller bound to no
// organization (and an admin) asks nobody: its calls cost what they did.

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Tenancy asks the services that know the rest of the rule. A nil
// function knows nothing: only the organization's own uploads are seen.
type Tenancy struct {
	// LinksSeen is, of the action documents that link the document, those
	// on an action whose asset the organization sees (the actions service).
	LinksSeen func(ctx context.Context, organization string, document uuid.UUID) (map[uuid.UUID]bool, error)
	// Attached reports whether an asset type attaches the document, or
	// shows it as its thumbnail (the assets service).
	Attached func(ctx context.Context, document uuid.UUID) (bool, error)
}

// seen reads the document id for by: 404 when by does not see it. For a
// bound caller it also returns the action documents linking it that by
// sees (nil: every one, for an unbound caller).
func (s *service) seen(ctx context.Context, by model.Caller, id uuid.UUID) (Document, map[uuid.UUID]bool, error) {
	doc, err := s.store.Get(ctx, id)
	if err != nil || by.Organization == "" {
		return doc, nil, err
	}
	links, seen, err := s.sees(ctx, by, doc)
	switch {
	case err != nil:
		return Document{}, nil, err
	case !seen:
		return Document{}, nil, apperr.NotFound("document", id.String())
	}
	return doc, links, nil
}

// sees applies the rule to a document read for a caller bound to an
// organization: whether it sees doc, and the action documents linking it
// that it sees.
func (s *service) sees(ctx context.Context, by model.Caller, doc Document) (map[uuid.UUID]bool, bool, error) {
	id := doc.ID
	links := map[uuid.UUID]bool{}
	var err error
	if s.tenancy.LinksSeen != nil {
		if links, err = s.tenancy.LinksSeen(ctx, by.Organization, id); err != nil {
			return nil, false, fmt.Errorf("action documents of %s seen by organization %s: %w", id, by.Organization, err)
		}
	}
	if doc.CreatedBy == by.Subject || doc.CreatedByOrganization == by.Organization || len(links) > 0 {
		return links, true, nil
	}
	if s.tenancy.Attached != nil {
		attached, err := s.tenancy.Attached(ctx, id)
		if err != nil {
			return nil, false, fmt.Errorf("asset types attaching %s: %w", id, err)
		}
		if attached {
			return links, true, nil
		}
	}
	return nil, false, nil
}

// FindBySHA256 pages through the documents whose bytes have the SHA-256
// sum: of them, a caller bound to an organization gets those it sees. A
// page may then hold fewer than its limit (none, even) and still be
// followed by another.
func (s *service) FindBySHA256(ctx context.Context, by model.Caller, sum string, page model.Page) (model.Paged[Document], error) {
	if !isSHA256(sum) {
		return model.Paged[Document]{}, apperr.Invalid(apperr.FieldError{Field: "sha256",
			Message: "must be the 64 lowercase hexadecimal digits of a SHA-256 sum"})
	}
	found, err := s.store.BySHA256(ctx, sum, page)
	if err != nil || by.Organization == "" {
		return found, err
	}
	kept := found.Items[:0:0]
	for _, d := range found.Items {
		_, seen, err := s.sees(ctx, by, d)
		if err != nil {
			return model.Paged[Document]{}, err
		}
		if seen {
			kept = append(kept, d)
		}
	}
	found.Items = kept
	return found, nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// linked is the document id as by sees it with the action documents
// linking it that by sees, in id order.
func (s *service) linked(ctx context.Context, by model.Caller, id uuid.UUID) (Document, []ActionDocument, error) {
	doc, seenLinks, err := s.seen(ctx, by, id)
	if err != nil {
		return Document{}, nil, err
	}
	links, err := s.links(ctx, id)
	if err != nil {
		return Document{}, nil, fmt.Errorf("action documents of %s: %w", id, err)
	}
	if seenLinks == nil {
		return doc, links, nil
	}
	kept := links[:0:0]
	for _, l := range links {
		if seenLinks[l.ID] {
			kept = append(kept, l)
		}
	}
	return doc, kept, nil
}

// VisiblePath is the internal route of Visible.
const VisiblePath = "/internal/documents/visible"

// MaxVisible bounds the ids of one Visible question.
const MaxVisible = 100

// VisibleRequest asks which of DocumentIDs the caller (the original
// caller of a peer's call) sees.
type VisibleRequest struct {
	DocumentIDs []uuid.UUID `json:"document_ids"`
}

// VisibleAnswer lists those of them it sees; an id that names no
// document is not among them.
type VisibleAnswer struct {
	DocumentIDs []uuid.UUID `json:"document_ids"`
}

// Visible applies the rule of seen to each document in turn; a caller
// bound to no organization sees every document that exists.
func (s *service) Visible(ctx context.Context, by model.Caller, in VisibleRequest) (VisibleAnswer, error) {
	out := VisibleAnswer{DocumentIDs: []uuid.UUID{}}
	if len(in.DocumentIDs) > MaxVisible {
		return out, apperr.Invalid(apperr.FieldError{Field: "document_ids", Message: fmt.Sprintf("must hold at most %d ids", MaxVisible)})
	}
	for _, id := range in.DocumentIDs {
		_, _, err := s.seen(ctx, by, id)
		switch {
		case err == nil:
			out.DocumentIDs = append(out.DocumentIDs, id)
		case !apperr.Is(err, apperr.KindNotFound):
			return VisibleAnswer{}, err
		}
	}
	return out, nil
}
