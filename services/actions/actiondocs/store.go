package actiondocs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
)

// Store is the PostgreSQL persistence of action documents. Every write
// commits through store.Write. The document an action document links is
// asked about by the service (pkg/refs); a write confirms the check it is
// given under the document's lock inside its transaction, and the
// documents service asks this store what links a document before
// deleting it.
type Store struct {
	*store.Store
}

// NewStore returns the store of action documents over the kit's store and
// declares their side of the reference protocol.
func NewStore(s *store.Store, r refs.Kinds) *Store {
	r.Owns("action_document", refs.ExistsIn("action_documents"))
	r.PointsAt("document", actionDocumentsLinking)
	return &Store{Store: s}
}

// EmbeddedSQL is the select list of an action's first model.MaxEmbedded
// action documents in creation order (action_documents), their times in
// UTC as every other timestamp of the API, and whether it has more
// (action_documents_truncated), of the action a in the root's queries.
var EmbeddedSQL = `COALESCE((SELECT json_agg(json_build_object('id', d.id, 'action_id', d.action_id,
	'document_id', d.document_id, 'source_system', d.source_system, 'source_reference', d.source_reference,
	'created_at', ` + utc("d.created_at") + `, 'created_by', d.created_by,
	'updated_at', ` + utc("d.updated_at") + `, 'updated_by', d.updated_by) ORDER BY d.id)
	FROM (SELECT * FROM action_documents d WHERE d.action_id = a.id ORDER BY d.id LIMIT ` + fmt.Sprint(model.MaxEmbedded) + `) d), '[]') AS action_documents,
	EXISTS (SELECT 1 FROM action_documents d WHERE d.action_id = a.id ORDER BY d.id OFFSET ` + fmt.Sprint(model.MaxEmbedded) + ` LIMIT 1) AS action_documents_truncated`

// utc renders a timestamptz column as RFC 3339 in UTC inside JSON, where
// the session's time zone would otherwise decide the offset.
func utc(column string) string {
	return `to_char(` + column + ` AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
}

const actionDocumentColumns = `d.id, d.action_id, d.document_id, d.source_system, d.source_reference,
	d.created_at, d.created_by, d.updated_at, d.updated_by`

// DeleteOfAction deletes the action documents of the action in tx, each
// with its event recorded on behalf of by (rather than unseen by the
// foreign key's cascade): the first step of the root's delete of an
// action.
func DeleteOfAction(ctx context.Context, tx pgx.Tx, s *store.Store, by model.Caller, action uuid.UUID) error {
	docs, err := store.Many[ActionDocument](ctx, tx, "delete action documents of action",
		`DELETE FROM action_documents d WHERE d.action_id = $1 RETURNING `+actionDocumentColumns, action)
	if err != nil {
		return err
	}
	slices.SortFunc(docs, func(a, b ActionDocument) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	deleted := make([]outbox.Change, len(docs))
	for i, d := range docs {
		deleted[i] = outbox.Deleted(outbox.KindActionDocument, d.ID.String(), utcTimes(d))
	}
	return s.Record(ctx, tx, by, deleted...)
}

// actionDocumentsLinking is the reference protocol's question for a
// document: the action documents linking it, with what GET /documents/{id}
// shows of each.
func actionDocumentsLinking(ctx context.Context, q store.Querier, id uuid.UUID) ([]refs.Ref, error) {
	links, err := store.Many[ActionDocument](ctx, q, "action documents of document",
		`SELECT `+actionDocumentColumns+` FROM action_documents d WHERE d.document_id = $1 ORDER BY d.id`, id)
	if err != nil {
		return nil, err
	}
	found := make([]refs.Ref, 0, len(links))
	for _, d := range links {
		details, err := d.linked()
		if err != nil {
			return nil, err
		}
		found = append(found, refs.Ref{Kind: "action_document", ID: d.ID, Label: "of action " + d.ActionID.String(), Details: details})
	}
	return found, nil
}

// documentsLinkedSeen is, of the documents ids, those an action on an
// asset the organization sees links, each with those action documents.
func documentsLinkedSeen(ctx context.Context, q store.Querier, organization string, ids []uuid.UUID) (map[uuid.UUID][]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT d.document_id, d.id FROM action_documents d JOIN actions a ON a.id = d.action_id
		WHERE d.document_id = ANY($1) AND `+access.VisibleTo("a.asset_id", "$2")+` ORDER BY d.id`, ids, organization)
	if err != nil {
		return nil, store.Classify(err, "documents seen")
	}
	seen := map[uuid.UUID][]uuid.UUID{}
	var doc, link uuid.UUID
	_, err = pgx.ForEachRow(rows, []any{&doc, &link}, func() error { seen[doc] = append(seen[doc], link); return nil })
	return seen, store.Classify(err, "documents seen")
}

// lockAction holds the action against a concurrent delete until the
// transaction ends; an unknown action is a 404. Linking a document to an
// action is the action's: the owner rule of g, if its route declares it,
// is the action's creator's.
func lockAction(ctx context.Context, tx pgx.Tx, g model.Guard, id uuid.UUID) error {
	var createdBy string
	err := tx.QueryRow(ctx, `SELECT created_by FROM actions WHERE id = $1 FOR KEY SHARE`, id).Scan(&createdBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.NotFound("action", id.String())
	}
	if err != nil {
		return store.Classify(err, "lock action")
	}
	return g.MayChange("action", id.String(), createdBy)
}

// CreateActionDocument links a document to an action: the action must
// exist (404), the targets checked names too (422, confirmed after the
// action's 404 and 403), and the pair must be new (409 naming the action
// document that holds it; concurrent creates of one pair make one, the
// unique index decides).
func (s *Store) CreateActionDocument(ctx context.Context, g model.Guard, in ActionDocumentInput, checked *refs.Checked) (ActionDocument, error) {
	var d ActionDocument
	err := s.Write(ctx, "create action document", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var err error
		d, err = s.insertActionDocument(ctx, tx, g, in, func() error {
			_, err := checked.Confirm(ctx, tx)
			return err
		})
		return nil, err
	})
	return utcTimes(d), err
}

// CreateActionDocuments links a batch, items of many actions: out[i]
// already holds the error of an item that failed before (its decoding, its
// rules). The documents of all items were asked about together, each owner
// once, before the transaction (checked, the service's); the items are
// written in one transaction (the request's unit of work, if it has one),
// each in a savepoint, and each answers as its single create would (404 or
// 403 for its action, 422 for its document, 409 for a pair linked already)
// without failing the others. A failure of the check or of the database
// fails the whole batch and commits none of it.
func (s *Store) CreateActionDocuments(ctx context.Context, g model.Guard, ins []ActionDocumentInput, out []model.ItemOutcome,
	checked *refs.Checked) error {
	var known refs.Known
	return s.WriteBatch(ctx, out, store.BatchWrite{
		Prepare: checked.ConfirmInto(&known),
		Item: func(ctx context.Context, i int) (model.ItemOutcome, error) {
			var d ActionDocument
			err := s.Write(ctx, "create action document", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
				var err error
				d, err = s.insertActionDocument(ctx, tx, g, ins[i], func() error {
					return known.Missing(documentReferences(ins[i], nil)...)
				})
				return nil, err
			})
			return model.ItemOutcome{ID: d.ID, Created: err == nil}, err
		},
	})
}

// insertActionDocument links in's document to its locked action, once
// confirm (the check of the document, after the action's 404 and 403) has
// passed, and records the event.
func (s *Store) insertActionDocument(ctx context.Context, tx pgx.Tx, g model.Guard, in ActionDocumentInput, confirm func() error) (ActionDocument, error) {
	if err := lockAction(ctx, tx, g, in.ActionID.UUID); err != nil {
		return ActionDocument{}, err
	}
	if err := confirm(); err != nil {
		return ActionDocument{}, err
	}
	row, inserted, err := store.Inserted(ctx, tx, "insert action document",
		`INSERT INTO action_documents (id, action_id, document_id, source_system, source_reference, created_by, updated_by)
		VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (action_id, document_id) DO NOTHING RETURNING `+
			`id, action_id, document_id, source_system, source_reference, created_at, created_by, updated_at, updated_by`,
		[]any{store.NewID(), in.ActionID.UUID, in.DocumentID.UUID, in.SourceSystem, in.SourceReference, g.Subject},
		func() (ActionDocument, error) { return s.actionDocumentOfPair(ctx, tx, in) })
	if err == nil && !inserted {
		err = apperr.Duplicate(pairDuplicate(in), row.ID.String())
	}
	if err != nil {
		return row, err
	}
	return row, s.RecordCreated(ctx, tx, g.Caller, outbox.KindActionDocument, row.ID, func() (any, error) {
		return s.GetActionDocument(ctx, in.ActionID.UUID, row.ID)
	})
}

func (s *Store) actionDocumentOfPair(ctx context.Context, q store.Querier, in ActionDocumentInput) (ActionDocument, error) {
	return store.One[ActionDocument](ctx, q, "get action document by pair", "action document", uuid.Nil,
		`SELECT `+actionDocumentColumns+` FROM action_documents d WHERE d.action_id = $1 AND d.document_id = $2`,
		in.ActionID.UUID, in.DocumentID.UUID)
}

// GetActionDocument reads an action document of the action.
func (s *Store) GetActionDocument(ctx context.Context, actionID, id uuid.UUID) (ActionDocument, error) {
	d, err := store.One[ActionDocument](ctx, s.DB(ctx), "get action document", "action document", id,
		`SELECT `+actionDocumentColumns+` FROM action_documents d WHERE d.id = $1 AND d.action_id = $2`, id, actionID)
	return utcTimes(d), err
}

// ListActionDocuments reads one page of the action's action documents in
// creation order; an action that does not exist is a 404.
func (s *Store) ListActionDocuments(ctx context.Context, f ActionDocumentFilter, page model.Page) (model.Paged[ActionDocument], error) {
	var where store.Filter
	where.Where("action_id = ?", f.ActionID)
	found, err := store.List(ctx, s.Reads(ctx), "list action documents", `SELECT `+actionDocumentColumns+` FROM action_documents d`,
		where, page, func(d ActionDocument) uuid.UUID { return d.ID })
	if err != nil {
		return found, err
	}
	for i := range found.Items {
		found.Items[i] = utcTimes(found.Items[i])
	}
	if len(found.Items) == 0 {
		// An empty page of an action that exists is an empty list.
		var exists bool
		if err := s.Reads(ctx).QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM actions WHERE id = $1)`, f.ActionID).Scan(&exists); err != nil {
			return found, store.Classify(err, "find action")
		}
		if !exists {
			return found, apperr.NotFound("action", f.ActionID.String())
		}
	}
	return found, nil
}

// UpdateActionDocument applies apply to the locked action document of the
// action; the targets the service names must exist (confirmed with
// checked), and a new document must not be linked to the action yet.
func (s *Store) UpdateActionDocument(ctx context.Context, g model.Guard, actionID, id uuid.UUID,
	apply func(ActionDocument) (ActionDocumentInput, error), targets func(old ActionDocument, in ActionDocumentInput) []refs.Target,
	checked *refs.Checked) error {
	updater := store.Updater[ActionDocument, ActionDocumentInput]{
		Resource: "action document",
		// The id is the path's, a UUID: nothing to quote.
		Select: `SELECT ` + actionDocumentColumns + ` FROM action_documents d WHERE d.id = $1 AND d.action_id = '` + actionID.String() + `'`,
		Input:  actionDocumentInputOf,
		Save: func(ctx context.Context, tx pgx.Tx, old ActionDocument, in ActionDocumentInput, actor string) ([]string, error) {
			if _, err := checked.Of(targets(old, in)...).Confirm(ctx, tx); err != nil {
				return nil, err
			}
			_, err := tx.Exec(ctx, `UPDATE action_documents SET document_id = $2, source_system = $3, source_reference = $4,
				updated_at = now(), updated_by = $5 WHERE id = $1`, old.ID, in.DocumentID.UUID, in.SourceSystem, in.SourceReference, actor)
			return nil, store.Classify(err, "update action document")
		},
		// If-Match names the action document as its own answers show it.
		Representation: func(ctx context.Context, d ActionDocument) (any, error) {
			return s.GetActionDocument(ctx, actionID, d.ID)
		},
		Kind: outbox.KindActionDocument,
		ID:   func(d ActionDocument) uuid.UUID { return d.ID },
	}
	in, err := updater.Update(ctx, s.Store, g, id, apply)
	return s.Duplicate(ctx, err, pairDuplicate(in),
		`SELECT id FROM action_documents WHERE action_id = $1 AND document_id = $2`, in.ActionID.UUID, in.DocumentID.UUID)
}

// DeleteActionDocument is the write that removes an action document of
// the action (the document itself stays), for the service to run through
// the reference protocol (refs.DeleteRow).
func (s *Store) DeleteActionDocument(actionID, id uuid.UUID) func(ctx context.Context, tx pgx.Tx) ([]string, error) {
	return func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		return nil, store.Delete(ctx, tx, "action document", id,
			`DELETE FROM action_documents WHERE id = $1 AND action_id = '`+actionID.String()+`' RETURNING id`, new(uuid.UUID))
	}
}
