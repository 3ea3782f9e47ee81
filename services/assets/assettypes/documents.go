package assettypes

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/refs"
)

// Document is a document as the documents service describes it. Documents
// never change, so the copy an asset type keeps when it attaches one (or
// takes it as its thumbnail) stays true, and the reference protocol keeps
// the document from being deleted while the copy exists.
type Document struct {
	ID           uuid.UUID `json:"id"`
	DocumentType string    `json:"document_type"`
	Filename     *string   `json:"filename"`
	ContentType  string    `json:"content_type"`
	Size         int64     `json:"size"`
	SHA256       string    `json:"sha256"`
	CreatedAt    time.Time `json:"created_at"`
	CreatedBy    string    `json:"created_by"`
	// SniffedType is what the documents service found the file to be;
	// checked when the document becomes a thumbnail, not shown.
	SniffedType string `json:"-"`
}

// documentFrom reads the attributes the documents service answers a
// reference check with.
func documentFrom(id uuid.UUID, a refs.Attrs) (Document, error) {
	d := Document{ID: id, DocumentType: a["document_type"], ContentType: a["content_type"], SHA256: a["sha256"], CreatedBy: a["created_by"],
		SniffedType: a["sniffed_type"]}
	if name, ok := a["filename"]; ok {
		d.Filename = &name
	}
	var err error
	if d.Size, err = strconv.ParseInt(a["size"], 10, 64); err != nil {
		return d, fmt.Errorf("document %s: size %q: %w", id, a["size"], err)
	}
	if d.CreatedAt, err = time.Parse(time.RFC3339Nano, a["created_at"]); err != nil {
		return d, fmt.Errorf("document %s: created_at %q: %w", id, a["created_at"], err)
	}
	return d, nil
}

// RasterImages are what a thumbnail may be: the types the documents
// service recognises from a file's first bytes, whatever the uploader
// declared. An SVG (which can carry scripts) or a file that only claims to
// be an image is refused.
var RasterImages = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// isRasterImage reports whether a document can be a thumbnail.
func isRasterImage(d Document) bool { return slices.Contains(RasterImages, d.SniffedType) }

// document confirms with checked that a document exists, locking it
// against a concurrent delete until the transaction ends (pkg/refs), and
// reads what its owner told of it; one that does not exist is a 422 naming
// field.
func document(ctx context.Context, tx pgx.Tx, checked *refs.Checked, field string, id uuid.UUID) (Document, error) {
	found, err := checked.Of(documentTarget(field, id)).Confirm(ctx, tx)
	if err != nil {
		return Document{}, err
	}
	return documentFrom(id, found[id])
}

// thumbnail checks that id (nil: none) names an image document.
func thumbnail(ctx context.Context, tx pgx.Tx, checked *refs.Checked, field string, id *uuid.UUID) (*Document, error) {
	if id == nil {
		return nil, nil
	}
	doc, err := document(ctx, tx, checked, field, *id)
	if err != nil {
		return nil, err
	}
	if !isRasterImage(doc) {
		found := doc.SniffedType
		if found == "" {
			found = "of unknown content"
		}
		return nil, apperr.Invalid(apperr.FieldError{Field: field,
			Message: fmt.Sprintf("must name a PNG, JPEG, GIF or WebP image, as its bytes show; document %s is declared %s and is %s",
				doc.ID, doc.ContentType, found)})
	}
	return &doc, nil
}
