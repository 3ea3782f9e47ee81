package documents

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
)

// Document is a stored file's metadata; the bytes are in object storage.
type Document struct {
	ID           uuid.UUID `json:"id" db:"id"`
	DocumentType string    `json:"document_type" db:"document_type"`
	Filename     *string   `json:"filename" db:"filename"`
	ContentType  string    `json:"content_type" db:"content_type"`
	Size         int64     `json:"size" db:"size"`
	SHA256       string    `json:"sha256" db:"sha256"`
	CreatedAt    time.Time `json:"created_at" db:"created_at"`
	CreatedBy    string    `json:"created_by" db:"created_by"`
	// SniffedType is the media type the service found from the file's
	// first bytes; peers learn it (a thumbnail must be a raster image), the
	// API does not show it.
	SniffedType string `json:"-" db:"sniffed_type"`
	// CreatedByOrganization is the uploader's organization ("" none): its
	// clients see the document (docs/tenancy.md). Not shown.
	CreatedByOrganization string `json:"-" db:"created_by_organization"`
}

// ActionDocument links an action to a document. The actions service owns
// them; a document lists those that point at it, as actions reports them.
type ActionDocument struct {
	ID              uuid.UUID `json:"id"`
	ActionID        uuid.UUID `json:"action_id"`
	DocumentID      uuid.UUID `json:"document_id"`
	SourceSystem    string    `json:"source_system"`
	SourceReference string    `json:"source_reference"`
	CreatedAt       time.Time `json:"created_at"`
}

// DocumentDetail is a document with the first action documents that link
// it (model.MaxEmbedded, in id order): the shape of every single-document
// answer. ActionDocumentsTruncated says more link it; GET
// /documents/{id}/action_documents pages through them all.
type DocumentDetail struct {
	Document
	ActionDocuments          []ActionDocument `json:"action_documents"`
	ActionDocumentsTruncated bool             `json:"action_documents_truncated"`
}

// UploadForm yields the parts of an upload in the order the client sent
// them, so a file is stored as it streams in, never held whole.
type UploadForm interface {
	// Next returns the next part, or io.EOF after the last one.
	Next() (Part, error)
}

// Part is one part of an upload form.
type Part struct {
	Name        string    // the form field
	Filename    string    // "" when the part has none
	ContentType string    // as the client sent it; "" when absent
	Body        io.Reader // valid until the next call of Next
}

// File is an open stored file; Body reads the requested range.
type File struct {
	Document
	Body       io.ReadCloser
	Range      *ByteRange // nil: the whole file
	ObjectETag string
}

// ByteRange is an inclusive range of a file's bytes.
type ByteRange struct{ First, Last int64 }

// Length is the number of bytes in the range.
func (r ByteRange) Length() int64 { return r.Last - r.First + 1 }

// ContentRange is the Content-Range value of the range within size bytes.
func (r ByteRange) ContentRange(size int64) string {
	return fmt.Sprintf("bytes %d-%d/%d", r.First, r.Last, size)
}

// actionDocumentFrom decodes what the actions service reports.
func actionDocumentFrom(details json.RawMessage) (ActionDocument, error) {
	var ad ActionDocument
	err := json.Unmarshal(details, &ad)
	return ad, err
}
