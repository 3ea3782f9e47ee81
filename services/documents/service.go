// Package documents is the registry's service for documents: files of any
// type, stored in S3-compatible object storage as they stream in, with
// their metadata in the service's schema. Its layers follow go-kit:
// Service (this file), endpoints (endpoint.go), HTTP transport
// (transport.go), PostgreSQL store (store.go) and object storage
// (objects.go).
package documents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
)

// Config of the service's own rules.
type Config struct {
	MaxSize int64 // bytes in one file
	// StepTimeout bounds each database step of an upload (listing its
	// object as loose, recording the document): the request timeout. An
	// upload as a whole runs as long as its bytes take, and a database
	// that stops answering must not hold it that long.
	StepTimeout time.Duration
}

// DefaultMaxSize is the contract's default file size limit.
const DefaultMaxSize = 100 << 20

// Service is what the documents service does. Errors are *apperr.Error.
type Service interface {
	// Upload stores the form's file and records the document; nothing is
	// left behind when it fails.
	Upload(ctx context.Context, by model.Caller, form UploadForm) (DocumentDetail, error)
	// Get, ActionDocuments and Open answer a caller bound to an
	// organization only for a document it sees (tenancy.go): else as for
	// one that does not exist.
	Get(ctx context.Context, by model.Caller, id uuid.UUID) (DocumentDetail, error)
	// ActionDocuments pages through every action document that links the
	// document, in id order: the whole of what its answer's
	// action_documents begins.
	ActionDocuments(ctx context.Context, by model.Caller, id uuid.UUID, page model.Page) (model.Paged[ActionDocument], error)
	// FindBySHA256 pages through the documents whose bytes have the
	// SHA-256 sum (64 lowercase hex digits), those a bound caller sees.
	FindBySHA256(ctx context.Context, by model.Caller, sum string, page model.Page) (model.Paged[Document], error)
	// Open returns a document's metadata, for a download.
	Open(ctx context.Context, by model.Caller, id uuid.UUID) (Document, error)
	// Read streams the document's bytes, or the range r of them.
	Read(ctx context.Context, doc Document, r *ByteRange) (io.ReadCloser, error)
	// Delete removes the document and its file, unless something still
	// links or attaches it.
	Delete(ctx context.Context, g model.Guard, id uuid.UUID) error
	// Visible is, of ids, the documents by sees (internal: the actions
	// service asks it, on a bound caller's behalf, before linking one).
	Visible(ctx context.Context, by model.Caller, in VisibleRequest) (VisibleAnswer, error)
}

type service struct {
	store   *Store
	refs    *refs.Registry
	objects *Objects
	links   ActionDocuments
	tenancy Tenancy
	cfg     Config
}

// ActionDocuments tells which action documents link a document (the
// actions service owns them).
type ActionDocuments func(ctx context.Context, document uuid.UUID) ([]ActionDocument, error)

// NewService returns the service. Documents are deleted through the
// reference protocol (r), which asks the services that link or attach
// them first; r answers them from the store's table.
// t tells what a caller bound to an organization sees.
func NewService(store *Store, r *refs.Registry, objects *Objects, links ActionDocuments, t Tenancy, cfg Config) Service {
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	r.Owns("document", store.exists)
	return &service{store: store, refs: r, objects: objects, links: links, tenancy: t, cfg: cfg}
}

// Form field names of an upload.
const (
	fieldDocumentType = "document_type"
	fieldFile         = "file"
)

// maxFieldBytes bounds a non-file form field.
const maxFieldBytes = 1 << 10

func (s *service) Upload(ctx context.Context, by model.Caller, form UploadForm) (DocumentDetail, error) {
	claimCtx, cancel := s.step(ctx)
	id, err := s.store.ClaimKey(claimCtx, s.objects.UploadDeadline())
	cancel()
	if err != nil {
		return DocumentDetail{}, err
	}
	var (
		stored       *Stored
		documentType *string
		v            apperr.Validation
	)
	// A failed upload leaves nothing: the object (whole or in part) is
	// removed before the answer, or by the sweeper if even that fails.
	// After a failure of the database or of storage the removal runs in
	// the background: it would only wait on what just failed (a paused
	// database does not answer at all), and the answer must not.
	abandon := func(err error) (DocumentDetail, error) {
		if apperr.Is(err, apperr.KindUnavailable) {
			go s.store.RemoveLoose(ctx, id.String(), s.objects)
		} else {
			s.store.RemoveLoose(ctx, id.String(), s.objects)
		}
		return DocumentDetail{}, err
	}
	for {
		part, err := form.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return abandon(err)
		}
		switch part.Name {
		case fieldFile:
			if stored != nil {
				v.Add(fieldFile, "must be sent once")
				continue
			}
			contentType, ok := partContentType(part.ContentType)
			if !ok {
				v.Add(fieldFile, "has a Content-Type that is not a media type: %q", part.ContentType)
				continue
			}
			st, err := s.objects.Put(ctx, id.String(), part.Body, contentType, s.cfg.MaxSize)
			if err != nil {
				return abandon(err)
			}
			stored = &st
			if part.Filename != "" {
				stored.Filename = &part.Filename
			}
		case fieldDocumentType:
			if documentType != nil {
				v.Add(fieldDocumentType, "must be sent once")
				continue
			}
			value, err := io.ReadAll(io.LimitReader(part.Body, maxFieldBytes+1))
			if err != nil {
				return abandon(uploadError(bodyError{err}))
			}
			if len(value) > maxFieldBytes {
				v.Add(fieldDocumentType, "must be at most 64 characters")
				continue
			}
			t := strings.TrimSpace(string(value))
			documentType = &t
		default:
			v.Add(part.Name, "is not a known form field; an upload has %s and %s", fieldDocumentType, fieldFile)
		}
	}
	if stored == nil {
		v.Add(fieldFile, "is required: a part holding the file's bytes")
	}
	if documentType == nil {
		v.Add(fieldDocumentType, "is required, e.g. expert_control_report")
	} else {
		model.Token(&v, fieldDocumentType, *documentType, "expert_control_report")
	}
	if stored != nil && stored.Filename != nil {
		switch name := *stored.Filename; {
		case len(name) > maxFilenameBytes:
			v.Add(fieldFile, "has a filename longer than %d bytes", maxFilenameBytes)
		case !utf8.ValidString(name) || strings.ContainsRune(name, 0):
			v.Add(fieldFile, "has a filename that is not UTF-8 or holds the character U+0000")
		}
	}
	if err := v.Err(); err != nil {
		return abandon(err)
	}
	createCtx, cancel := s.step(ctx)
	defer cancel()
	doc, err := s.store.Create(createCtx, by, Document{
		ID: id, DocumentType: *documentType, Filename: stored.Filename, ContentType: stored.ContentType,
		Size: stored.Size, SHA256: stored.SHA256, CreatedBy: by.Subject, SniffedType: stored.Sniffed,
		CreatedByOrganization: by.Organization,
	})
	if err != nil {
		return abandon(err)
	}
	return DocumentDetail{Document: doc, ActionDocuments: []ActionDocument{}}, nil
}

const maxFilenameBytes = 1024

// step is ctx for one database step of a long request.
func (s *service) step(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.StepTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.cfg.StepTimeout)
}

// partContentType is the file part's own media type, normalised; "" (to
// sniff) when the part has none.
func partContentType(header string) (string, bool) {
	if strings.TrimSpace(header) == "" {
		return "", true
	}
	mediaType, params, err := mime.ParseMediaType(header)
	if err != nil {
		return "", false
	}
	return mime.FormatMediaType(mediaType, params), true
}

func (s *service) Get(ctx context.Context, by model.Caller, id uuid.UUID) (DocumentDetail, error) {
	doc, links, err := s.linked(ctx, by, id)
	if err != nil {
		return DocumentDetail{}, err
	}
	detail := DocumentDetail{Document: doc, ActionDocuments: links}
	if len(links) > model.MaxEmbedded {
		detail.ActionDocuments, detail.ActionDocumentsTruncated = links[:model.MaxEmbedded], true
	}
	return detail, nil
}

// ActionDocuments pages over what the actions service answers, which
// lists a document's action documents in id order.
func (s *service) ActionDocuments(ctx context.Context, by model.Caller, id uuid.UUID, page model.Page) (model.Paged[ActionDocument], error) {
	_, links, err := s.linked(ctx, by, id)
	if err != nil {
		return model.Paged[ActionDocument]{}, err
	}
	start, _ := slices.BinarySearchFunc(links, page.After, func(l ActionDocument, after uuid.UUID) int {
		return bytes.Compare(l.ID[:], after[:])
	})
	if page.After != uuid.Nil && start < len(links) && links[start].ID == page.After {
		start++
	}
	links = links[start:]
	return model.TrimPage(links[:min(len(links), page.Limit+1)], page, func(l ActionDocument) uuid.UUID { return l.ID }), nil
}

func (s *service) Open(ctx context.Context, by model.Caller, id uuid.UUID) (Document, error) {
	doc, _, err := s.seen(ctx, by, id)
	return doc, err
}

func (s *service) Read(ctx context.Context, doc Document, r *ByteRange) (io.ReadCloser, error) {
	return s.objects.Read(ctx, doc.ID.String(), r)
}

func (s *service) Delete(ctx context.Context, g model.Guard, id uuid.UUID) error {
	if g.Organization != "" {
		if _, _, err := s.seen(ctx, g.Caller, id); err != nil {
			return err // nobody deletes what it does not see (a 404 before a 403 not-owner)
		}
	}
	current := func(ctx context.Context) (any, error) { return s.Get(ctx, g.Caller, id) }
	if err := s.refs.DeleteRow(ctx, g, "document", "documents", id, current, s.store.Delete(id)); err != nil {
		return err
	}
	// The row is gone and the object listed as loose in the same
	// transaction; removing it now is a courtesy the sweeper would do.
	s.store.RemoveLoose(ctx, id.String(), s.objects)
	return nil
}

// unconfigured is a peer this installation does not run: what it would
// answer is unknown, so the question cannot be answered either.
func unconfigured(name string) error {
	return apperr.Unavailable("the "+name+" service", fmt.Errorf("peer %s is not configured", name))
}
