// Package actiondocs is the actions service's component of action
// documents: the links from an action to a document of the documents
// service, under /actions/{action_id}/action_documents. An action document
// stays with its action: its action's rules (who may change it, who sees
// it) are the action's, which the root answers (Actions); its document
// is kept whole with pkg/refs. The root's answers embed an action's first
// action documents (EmbeddedSQL) and delete them with their action
// (DeleteOfAction).
package actiondocs

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// ActionDocumentFilter is the list of one action's action documents.
type ActionDocumentFilter struct {
	ActionID uuid.UUID
}

// ActionDocument links an action to a document of the documents service.
type ActionDocument struct {
	ID              uuid.UUID `json:"id" db:"id"`
	ActionID        uuid.UUID `json:"action_id" db:"action_id"`
	DocumentID      uuid.UUID `json:"document_id" db:"document_id"`
	SourceSystem    string    `json:"source_system" db:"source_system"`
	SourceReference string    `json:"source_reference" db:"source_reference"`
	model.Audit
}

// ActionDocumentInput is the body of POST /actions/{action_id}/action_documents.
type ActionDocumentInput struct {
	ActionID        model.UUID `json:"action_id"`
	DocumentID      model.UUID `json:"document_id"`
	SourceSystem    string     `json:"source_system"`
	SourceReference string     `json:"source_reference"`
}

// Normalize trims the text and checks every field; action is the path's
// action, which the body's action_id must name.
func (in ActionDocumentInput) Normalize(action uuid.UUID) (ActionDocumentInput, error) {
	var v apperr.Validation
	if id := model.RequiredID(&v, "action_id", in.ActionID); id != uuid.Nil && id != action {
		v.Add("action_id", "must be the action of the path, %s", action)
	}
	model.RequiredID(&v, "document_id", in.DocumentID)
	in.SourceSystem = model.Required(&v, "source_system", in.SourceSystem, model.NumberLen)
	in.SourceReference = model.Required(&v, "source_reference", in.SourceReference, model.NameLen)
	return in, v.Err()
}

// ActionDocumentPatch is a JSON merge patch of an action document. An
// action document stays with its action: action_id, when given, must be
// the path's (moving a link is a delete and a create).
type ActionDocumentPatch struct {
	ActionID        model.PatchField[model.UUID] `json:"action_id"`
	DocumentID      model.PatchField[model.UUID] `json:"document_id"`
	SourceSystem    model.PatchField[string]     `json:"source_system"`
	SourceReference model.PatchField[string]     `json:"source_reference"`
}

// Apply returns the input that results from patching d.
func (p ActionDocumentPatch) Apply(d ActionDocument) (ActionDocumentInput, error) {
	in := actionDocumentInputOf(d)
	var v apperr.Validation
	model.Keep(&v, "action_id", p.ActionID, &in.ActionID)
	model.Keep(&v, "document_id", p.DocumentID, &in.DocumentID)
	model.Keep(&v, "source_system", p.SourceSystem, &in.SourceSystem)
	model.Keep(&v, "source_reference", p.SourceReference, &in.SourceReference)
	if err := v.Err(); err != nil {
		return in, err
	}
	return in.Normalize(d.ActionID)
}

func actionDocumentInputOf(d ActionDocument) ActionDocumentInput {
	return ActionDocumentInput{ActionID: model.ID(d.ActionID), DocumentID: model.ID(d.DocumentID),
		SourceSystem: d.SourceSystem, SourceReference: d.SourceReference}
}

// linked is what the documents service shows of an action document on
// GET /documents/{id} (services/documents decodes it).
func (d ActionDocument) linked() ([]byte, error) {
	return json.Marshal(map[string]any{"id": d.ID, "action_id": d.ActionID, "document_id": d.DocumentID,
		"source_system": d.SourceSystem, "source_reference": d.SourceReference, "created_at": d.CreatedAt.UTC()})
}

func pairDuplicate(in ActionDocumentInput) string {
	return fmt.Sprintf("document %s is linked to action %s already", in.DocumentID.UUID, in.ActionID.UUID)
}

// utcTimes gives an action document's times in UTC, as its place in an
// action's action_documents shows them, so both answers (and their ETags)
// agree.
func utcTimes(d ActionDocument) ActionDocument {
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d
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
