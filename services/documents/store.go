package documents

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
)

// Store is the PostgreSQL side of documents: their metadata, and the
// objects in storage that no document row stands for (loose_objects).
type Store struct {
	*store.Store
	logger log.Logger
}

// NewStore returns the store.
func NewStore(s *store.Store, logger log.Logger) *Store {
	return &Store{Store: s, logger: logger}
}

const documentColumns = `id, document_type, filename, content_type, size, sha256, created_at, created_by, sniffed_type,
	COALESCE(created_by_organization::text, '') AS created_by_organization`

// ClaimKey returns a new document id and lists its object as loose until
// deadline, before any byte is stored: a crash at any later point leaves
// an object the sweeper finds. The database being down fails the upload
// here, before the client has sent its file.
func (s *Store) ClaimKey(ctx context.Context, deadline time.Time) (uuid.UUID, error) {
	id := store.NewID()
	_, err := s.Pool.Exec(ctx, `INSERT INTO loose_objects (key, remove_after) VALUES ($1, $2)`, id.String(), deadline)
	return id, store.Classify(err, "claim object key")
}

// Create records a stored document: its row and the end of its object's
// looseness commit together.
func (s *Store) Create(ctx context.Context, by model.Caller, d Document) (Document, error) {
	var doc Document
	err := s.Write(ctx, "create document", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var err error
		doc, err = store.One[Document](ctx, tx, "insert document", "document", d.ID,
			`INSERT INTO documents (id, document_type, filename, content_type, size, sha256, created_by, sniffed_type, created_by_organization)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, '')::uuid) RETURNING `+documentColumns,
			d.ID, d.DocumentType, d.Filename, d.ContentType, d.Size, d.SHA256, d.CreatedBy, d.SniffedType, d.CreatedByOrganization)
		if err != nil {
			return nil, err
		}
		if _, err = tx.Exec(ctx, `DELETE FROM loose_objects WHERE key = $1`, d.ID.String()); err != nil {
			return nil, store.Classify(err, "settle object")
		}
		// A new document is linked by no action document yet: its GET
		// shows an empty list.
		return nil, s.Record(ctx, tx, by, outbox.Created(outbox.KindDocument, doc.ID.String(),
			DocumentDetail{Document: doc, ActionDocuments: []ActionDocument{}}))
	})
	return doc, err
}

// Get reads a document's metadata.
func (s *Store) Get(ctx context.Context, id uuid.UUID) (Document, error) {
	return store.One[Document](ctx, s.DB(ctx), "get document", "document", id,
		`SELECT `+documentColumns+` FROM documents WHERE id = $1`, id)
}

// BySHA256 pages through the documents whose bytes have the sum, in id
// order.
func (s *Store) BySHA256(ctx context.Context, sum string, page model.Page) (model.Paged[Document], error) {
	var f store.Filter
	f.Where("sha256 = ?", sum)
	return store.List(ctx, s.DB(ctx), "find documents by sha256", `SELECT `+documentColumns+` FROM documents`, f, page,
		func(d Document) uuid.UUID { return d.ID })
}

// exists is the owner's answer of the reference protocol: which documents
// exist, with their metadata: the content type decides whether one can be
// a thumbnail, and an asset type shows the documents it attaches (their
// metadata never changes, so the referrer may keep it).
func (s *Store) exists(ctx context.Context, q store.Querier, ids []uuid.UUID) (map[uuid.UUID]refs.Attrs, error) {
	rows, err := q.Query(ctx, `SELECT `+documentColumns+` FROM documents WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, store.Classify(err, "check documents")
	}
	docs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Document])
	found := make(map[uuid.UUID]refs.Attrs, len(docs))
	for _, d := range docs {
		attrs := refs.Attrs{"content_type": d.ContentType, "document_type": d.DocumentType, "size": strconv.FormatInt(d.Size, 10),
			"sha256": d.SHA256, "created_at": d.CreatedAt.UTC().Format(time.RFC3339Nano), "created_by": d.CreatedBy,
			"sniffed_type": d.SniffedType}
		if d.Filename != nil {
			attrs["filename"] = *d.Filename
		}
		found[d.ID] = attrs
	}
	return found, store.Classify(err, "check documents")
}

// Delete is the write that removes a document, its object loose in the
// same transaction, for the service to run once the reference protocol
// found nothing in another service pointing at it (refs.DeleteRow).
func (s *Store) Delete(id uuid.UUID) func(ctx context.Context, tx pgx.Tx) ([]string, error) {
	return func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var key string
		if err := store.Delete(ctx, tx, "document", id, `DELETE FROM documents WHERE id = $1 RETURNING id::text`, &key); err != nil {
			return nil, err
		}
		_, err := tx.Exec(ctx, `INSERT INTO loose_objects (key, remove_after) VALUES ($1, now())
			ON CONFLICT (key) DO UPDATE SET remove_after = now()`, key)
		return nil, store.Classify(err, "loosen object")
	}
}

// RemoveLoose removes a loose object from storage and then forgets it,
// while the key is still listed as loose, under the row's lock: an upload
// that never learnt whether its document committed (the database stopped
// answering mid-commit, and its step gave up) must not remove an object a
// committed document owns after all. It runs after the caller's request
// may have ended (a client gone mid-upload), so it has its own deadline
// and its own transaction (never the request's unit of work); whatever it
// cannot do now, the sweeper does once the key's time is up.
func (s *Store) RemoveLoose(ctx context.Context, key string, objects *Objects) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := store.InTx(ctx, s.Pool, "remove loose object", func(tx pgx.Tx) error {
		var listed bool
		err := tx.QueryRow(ctx, `SELECT true FROM loose_objects WHERE key = $1 FOR UPDATE`, key).Scan(&listed)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // a document owns it
		}
		if err != nil {
			return store.Classify(err, "lock loose object")
		}
		if err := objects.Remove(ctx, key); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM loose_objects WHERE key = $1`, key)
		return store.Classify(err, "forget loose object")
	})
	if err != nil {
		level.Warn(s.logger).Log("msg", "loose object not removed; the sweeper will", "key", key, "err", err)
	}
}

// Sweep removes the loose objects whose time is up: uploads that died
// (a crash between storing the bytes and committing the row) and objects
// of deleted documents whose removal failed. Replicas share the work
// without waiting on each other. It returns how many it removed.
func (s *Store) Sweep(ctx context.Context, objects *Objects) (int, error) {
	removed := 0
	for {
		var keys []string
		err := s.Write(ctx, "sweep loose objects", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			rows, err := tx.Query(ctx, `SELECT key FROM loose_objects WHERE remove_after <= now()
				ORDER BY remove_after LIMIT 100 FOR UPDATE SKIP LOCKED`)
			if err != nil {
				return nil, store.Classify(err, "list loose objects")
			}
			if keys, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return nil, store.Classify(err, "list loose objects")
			}
			for _, key := range keys {
				if err := objects.Remove(ctx, key); err != nil {
					return nil, err
				}
			}
			_, err = tx.Exec(ctx, `DELETE FROM loose_objects WHERE key = ANY($1)`, keys)
			return nil, store.Classify(err, "forget loose objects")
		})
		if err != nil {
			return removed, err
		}
		removed += len(keys)
		if len(keys) < 100 {
			return removed, nil
		}
	}
}
