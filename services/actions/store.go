package actions

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
	"github.com/assetregistry/registry/services/actions/compliance"
)

// Store is the PostgreSQL persistence of actions and action documents.
// Every write commits through store.Write. The asset, person and
// organization an action names and the document an action document links
// are asked about by the service (pkg/refs); a write confirms the check it
// is given under the targets' locks inside its transaction, and the owners
// ask this store what points at them before deleting one.
type Store struct {
	*store.Store
}

// NewStore returns the actions store over the kit's store and declares its
// side of the reference protocol.
func NewStore(s *store.Store, r refs.Kinds) *Store {
	r.Owns("action", refs.ExistsIn("actions"))
	r.Owns("action_document", refs.ExistsIn("action_documents"))
	for kind, column := range map[string]string{"asset": "asset_id", "person": "person_id", "organization": "organization_id"} {
		r.PointsAt(kind, func(ctx context.Context, q store.Querier, id uuid.UUID) ([]refs.Ref, error) {
			return actionsNaming(ctx, q, column, id)
		})
	}
	r.PointsAt("document", actionDocumentsLinking)
	return &Store{Store: s}
}

const actionColumns = `a.id, a.asset_id, a.action_type, a.action_subtype, a.performed_at, a.person_id, a.performed_by_person,
	a.organization_id, a.performed_by_organization, a.reference, a.status, a.status_ok, a.status_use_ok, a.status_finalized,
	a.status_valid_through, a.source_system, a.source_reference, a.data, a.meta_data,
	a.created_at, a.created_by, a.updated_at, a.updated_by`

// The action's first model.MaxEmbedded documents in creation order,
// their times in UTC as every other timestamp of the API, and whether it
// has more.
var actionDocumentsSQL = `COALESCE((SELECT json_agg(json_build_object('id', d.id, 'action_id', d.action_id,
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

// CreateAction inserts an action once the targets it references are
// confirmed to exist with checked (the service's check of them, see
// refs.Registry.Checking), under the targets' locks, which keep them from
// being deleted until the transaction ends.
func (s *Store) CreateAction(ctx context.Context, by model.Caller, in ActionInput, checked *refs.Checked) (ActionDetail, error) {
	var a ActionDetail
	err := s.Write(ctx, "create action", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var err error
		a, err = s.insertAction(ctx, tx, by, in, checked)
		return nil, err
	})
	return a, err
}

// sourceKeyIndex is the sync key's unique index: the primary key of
// action_source_keys (migration 005; actions is partitioned and can hold
// no unique index without its id).
const sourceKeyIndex = "action_source_keys_pkey"

// actionHoldingSourceSQL is the id of the action holding a
// (source_system, source_reference) pair.
const actionHoldingSourceSQL = `SELECT action_id FROM action_source_keys WHERE source_system = $1 AND source_reference = $2`

// sourceTaken turns the sync key's unique violation (a patch onto a held
// pair) into the 409 duplicate naming the action that holds the pair;
// other errors pass.
func (s *Store) sourceTaken(ctx context.Context, err error, in ActionInput) error {
	if name, dup := store.Constraint(err, store.UniqueViolation); !dup || name != sourceKeyIndex ||
		in.SourceSystem == nil || in.SourceReference == nil {
		return err
	}
	detail := sourceDuplicate(*in.SourceSystem, *in.SourceReference)
	var holder uuid.UUID
	if s.DB(ctx).QueryRow(ctx, actionHoldingSourceSQL, *in.SourceSystem, *in.SourceReference).Scan(&holder) != nil {
		return apperr.Conflict(detail) // deleted again in the meantime: still a conflict, without an id
	}
	return apperr.Duplicate(detail, holder.String())
}

// ActionBySource reads the action that holds the pair; none is a 404.
func (s *Store) ActionBySource(ctx context.Context, key SourceKey) (ActionDetail, error) {
	found, err := store.Many[ActionDetail](ctx, s.DB(ctx), "find action by source",
		`SELECT `+actionColumns+`, `+actionDocumentsSQL+` FROM actions a
		WHERE a.source_system = $1 AND a.source_reference = $2 AND NOT a.source_duplicate`, key.SourceSystem, key.SourceReference)
	if err != nil {
		return ActionDetail{}, err
	}
	if len(found) == 0 {
		return ActionDetail{}, apperr.New(apperr.KindNotFound, fmt.Sprintf("no action has source_system %q and source_reference %q",
			key.SourceSystem, key.SourceReference))
	}
	return found[0], nil
}

// actionsBySource reads the ids of the actions holding any of keys.
func (s *Store) actionsBySource(ctx context.Context, keys []SourceKey) (map[SourceKey]uuid.UUID, error) {
	systems, references := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		systems[i], references[i] = k.SourceSystem, k.SourceReference
	}
	rows, err := s.DB(ctx).Query(ctx, `SELECT a.id, a.source_system, a.source_reference FROM actions a
		JOIN unnest($1::text[], $2::text[]) AS k(system, reference) ON a.source_system = k.system AND a.source_reference = k.reference
		WHERE NOT a.source_duplicate`, systems, references)
	if err != nil {
		return nil, store.Classify(err, "find actions by source")
	}
	found := map[SourceKey]uuid.UUID{}
	var id uuid.UUID
	var key SourceKey
	_, err = pgx.ForEachRow(rows, []any{&id, &key.SourceSystem, &key.SourceReference}, func() error {
		found[key] = id
		return nil
	})
	return found, store.Classify(err, "find actions by source")
}

// CreateActions records a batch: out[i] already holds the error of an item
// that failed before (its decoding, its rules, a target its owner said
// does not exist); the targets of all were asked about together, each
// owner once, before the transaction (checked, the service's). The items
// are inserted in one transaction (the request's unit of work, if it has
// one), each in a savepoint, so an item that fails leaves the others. A
// failure of the check or of the database fails the whole batch and
// commits none of it.
func (s *Store) CreateActions(ctx context.Context, by model.Caller, ins []ActionInput, out []model.ItemOutcome,
	checked *refs.Checked, targetsOf func(ActionInput) []refs.Target) error {
	var pairs []compliance.Pair
	for i, in := range ins {
		if out[i].Err == nil && changesLatest(in) {
			pairs = append(pairs, compliance.Pair{AssetID: in.AssetID.UUID, ActionType: in.ActionType})
		}
	}
	return s.WriteBatch(ctx, out, store.BatchWrite{
		Prepare: func(ctx context.Context, tx pgx.Tx, out []model.ItemOutcome) error {
			known, err := checked.ConfirmAll(ctx, tx)
			if err != nil {
				return err
			}
			for i, in := range ins {
				if out[i].Err == nil {
					out[i].Err = known.Missing(targetsOf(in)...)
				}
			}
			// The compliance rows' locks, all at once.
			return compliance.LockLatest(ctx, tx, pairs)
		},
		// All at once, in a few round trips; when that fails (an item the
		// database refuses), item by item, each in a savepoint of its own.
		All: func(ctx context.Context, ready []int) error {
			var created []ActionDetail
			err := s.Write(ctx, "create actions", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
				batch := make([]ActionInput, len(ready))
				for k, i := range ready {
					batch[k] = ins[i]
				}
				var err error
				created, err = s.insertActions(ctx, tx, by, batch)
				return nil, err
			})
			if err != nil {
				return err
			}
			for k, i := range ready {
				out[i] = model.ItemOutcome{ID: created[k].ID, Created: true}
			}
			return nil
		},
		Item: func(ctx context.Context, i int) (model.ItemOutcome, error) {
			var a ActionDetail
			err := s.Write(ctx, "create action", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
				var err error
				a, err = s.insertAction(ctx, tx, by, ins[i], nil)
				return nil, err
			})
			return model.ItemOutcome{ID: a.ID, Created: err == nil}, err
		},
	})
}

// insertActions is insertAction for a batch, in a few round trips: the
// inserts, the compliance rows of their pairs, the representations and the
// events each in one. The caller holds the pairs' locks
// (compliance.LockLatest).
func (s *Store) insertActions(ctx context.Context, tx pgx.Tx, by model.Caller, ins []ActionInput) ([]ActionDetail, error) {
	ids := make([]uuid.UUID, len(ins))
	inserts := &pgx.Batch{}
	var pairs []compliance.Pair
	for i, in := range ins {
		ids[i] = store.NewID()
		inserts.Queue(insertActionSQL, append([]any{ids[i]}, append(inputValues(in), by.Subject)...)...)
		if p := (compliance.Pair{AssetID: in.AssetID.UUID, ActionType: in.ActionType}); changesLatest(in) && !slices.Contains(pairs, p) {
			pairs = append(pairs, p)
		}
	}
	for _, p := range pairs {
		compliance.QueueRecompute(inserts, p)
	}
	if err := tx.SendBatch(ctx, inserts).Close(); err != nil {
		return nil, store.Classify(err, "insert actions")
	}
	rows, err := store.Many[ActionDetail](ctx, tx, "get actions",
		`SELECT `+actionColumns+`, `+actionDocumentsSQL+` FROM actions a WHERE a.id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]ActionDetail, len(rows))
	for _, a := range rows {
		byID[a.ID] = a
	}
	created := make([]ActionDetail, len(ids))
	events := make([]outbox.Change, len(ids))
	for i, id := range ids {
		a, ok := byID[id]
		if !ok {
			return nil, errSourceHeld
		}
		created[i], events[i] = a, outbox.Created(outbox.KindAction, id.String(), a)
	}
	return created, s.Record(ctx, tx, by, events...)
}

// insertActionSQL inserts an action unless its sync key is held (then it
// inserts nothing, and the transaction goes on, so that what the
// references said is answered first). The pair is claimed in
// action_source_keys first, in the same statement; a claim that finds the
// pair held by a transaction in flight waits for its outcome, as the
// unique index of the unpartitioned table did.
const insertActionSQL = `WITH claim AS (
		INSERT INTO action_source_keys (source_system, source_reference, action_id)
		SELECT $16::text, $17::text, $1::uuid WHERE $16::text IS NOT NULL AND $17::text IS NOT NULL
		ON CONFLICT DO NOTHING RETURNING 1)
	INSERT INTO actions AS a (id, asset_id, action_type, action_subtype, performed_at, person_id,
		performed_by_person, organization_id, performed_by_organization, reference, status, status_ok, status_use_ok,
		status_finalized, status_valid_through, source_system, source_reference, data, meta_data, created_by, updated_by)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $20
	WHERE $16::text IS NULL OR $17::text IS NULL OR EXISTS (SELECT 1 FROM claim)`

// errSourceHeld is an action of a batch that inserted nothing: its sync
// key is held, and the batch goes item by item to say which.
var errSourceHeld = errors.New("an action's source pair is held")

// insertAction inserts an action, keeps its compliance row and records
// its event. Its references are confirmed already (checked nil), or are
// confirmed by checked in the same round trip as the insert: the targets'
// locks and rows go first in the pipeline, and when the check fails the
// insert is undone with the write.
func (s *Store) insertAction(ctx context.Context, tx pgx.Tx, by model.Caller, in ActionInput, checked *refs.Checked) (ActionDetail, error) {
	id := store.NewID()
	// One round trip: the references' locks and rows, the insert (which
	// answers with the action), compliance.KeepLatest's lock and recompute (each
	// statement of a pipeline takes its snapshot when it runs, so the
	// recompute sees what the lock waited for).
	pair := compliance.Pair{AssetID: in.AssetID.UUID, ActionType: in.ActionType}
	pipeline := &pgx.Batch{}
	confirm, err := checked.Queue(pipeline)
	if err != nil {
		return ActionDetail{}, err
	}
	// A new action has no action documents yet: nothing else can link one
	// to an id this transaction has not committed.
	pipeline.Queue(insertActionSQL+` RETURNING `+actionColumns+`, '[]'::json AS action_documents, false AS action_documents_truncated`,
		append([]any{id}, append(inputValues(in), by.Subject)...)...)
	var ops []string
	if changesLatest(in) {
		ops = append(ops, compliance.QueueKeepLatest(pipeline, pair)...)
	}
	results := tx.SendBatch(ctx, pipeline)
	checkErr := confirm.Read(results)
	var a ActionDetail
	held := false // the sync key's holder is another action
	if checkErr == nil {
		a, err = func() (ActionDetail, error) {
			rows, err := results.Query()
			if err != nil {
				return ActionDetail{}, store.Classify(err, "insert action")
			}
			inserted, err := pgx.CollectRows(rows, pgx.RowToStructByName[ActionDetail])
			if err != nil {
				return ActionDetail{}, store.Classify(err, "insert action")
			}
			if len(inserted) == 0 {
				held = true
			} else {
				a = inserted[0]
			}
			for _, op := range ops {
				if _, err := results.Exec(); err != nil {
					return ActionDetail{}, store.Classify(err, op)
				}
			}
			return a, nil
		}()
	}
	if cerr := results.Close(); err == nil && checkErr == nil && cerr != nil {
		err = store.Classify(cerr, "insert action")
	}
	if checkErr != nil {
		return ActionDetail{}, checkErr
	}
	if err == nil {
		// What the references' rows said decides before the insert's
		// outcome: a missing target is the 422 it always was.
		known, ferr := confirm.Finish(ctx, tx)
		if ferr == nil {
			ferr = confirm.Missing(known)
		}
		if ferr != nil {
			return ActionDetail{}, ferr
		}
	}
	if err != nil {
		return ActionDetail{}, err
	}
	if held {
		// ON CONFLICT waited for the holder's commit: it is visible here.
		detail := sourceDuplicate(*in.SourceSystem, *in.SourceReference)
		var holder uuid.UUID
		err := tx.QueryRow(ctx, actionHoldingSourceSQL, *in.SourceSystem, *in.SourceReference).Scan(&holder)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return ActionDetail{}, apperr.Conflict(detail) // deleted again in the meantime
		case err != nil:
			return ActionDetail{}, store.Classify(err, "find the holder of a source pair")
		}
		return ActionDetail{}, apperr.Duplicate(detail, holder.String())
	}
	return a, s.Record(ctx, tx, by, outbox.Created(outbox.KindAction, id.String(), a))
}

// changesLatest says whether inserting in can change its pair's compliance
// row: only finalized actions are ever the latest, so an action recorded
// unfinalized leaves the row (and its lock) alone.
func changesLatest(in ActionInput) bool { return in.StatusFinalized != nil && *in.StatusFinalized }

// inputValues are an input's columns in the order of the insert.
func inputValues(in ActionInput) []any {
	return []any{in.AssetID.UUID, in.ActionType, in.ActionSubtype, in.PerformedAt, in.PersonID.Ptr(),
		in.PerformedByPerson, in.OrganizationID.Ptr(), in.PerformedByOrganization, in.Reference, in.Status,
		in.StatusOK, in.StatusUseOK, in.StatusFinalized, in.StatusValidThrough, in.SourceSystem, in.SourceReference,
		jsonb(in.Data), jsonb(in.MetaData)}
}

// GetAction reads an action with its action documents.
func (s *Store) GetAction(ctx context.Context, id uuid.UUID) (ActionDetail, error) {
	return s.getAction(ctx, s.DB(ctx), id)
}

func (s *Store) getAction(ctx context.Context, q store.Querier, id uuid.UUID) (ActionDetail, error) {
	return store.One[ActionDetail](ctx, q, "get action", "action", id,
		`SELECT `+actionColumns+`, `+actionDocumentsSQL+` FROM actions a WHERE a.id = $1`, id)
}

// ListActions reads one page.
func (s *Store) ListActions(ctx context.Context, f ActionFilter, page model.Page) (model.Paged[Action], error) {
	var where store.Filter
	store.Equal(&where, "asset_id", f.AssetID)
	store.Equal(&where, "person_id", f.PersonID)
	store.Equal(&where, "organization_id", f.OrganizationID)
	store.Equal(&where, "action_type", f.ActionType)
	store.Equal(&where, "status_ok", f.StatusOK)
	store.Equal(&where, "status_finalized", f.StatusFinalized)
	store.Equal(&where, "source_system", f.SourceSystem)
	store.Equal(&where, "source_reference", f.SourceReference)
	if f.ValidThroughBefore != nil {
		where.Where("status_valid_through < ?", *f.ValidThroughBefore)
	}
	if f.PerformedFrom != nil {
		where.Where("performed_at >= ?", *f.PerformedFrom)
	}
	if f.PerformedTo != nil {
		where.Where("performed_at <= ?", *f.PerformedTo)
	}
	if f.seenBy != "" { // a bound caller: the actions of assets it sees (the condition takes it twice)
		where.Where(access.VisibleTo("a.asset_id", "?"), f.seenBy, f.seenBy)
	}
	return store.List(ctx, s.Reads(ctx), "list actions", `SELECT `+actionColumns+` FROM actions a`,
		where, page, func(a Action) uuid.UUID { return a.ID })
}

// UpdateAction applies apply to the locked action; the targets the
// service names for the change are confirmed with checked, as a create
// confirms them.
func (s *Store) UpdateAction(ctx context.Context, g model.Guard, id uuid.UUID, apply func(Action) (ActionInput, error),
	targets func(old Action, in ActionInput) []refs.Target, checked *refs.Checked) error {
	updater := store.Updater[Action, ActionInput]{
		Resource: "action",
		Select:   `SELECT ` + actionColumns + ` FROM actions a WHERE a.id = $1`,
		Input:    actionInputOf,
		Save: func(ctx context.Context, tx pgx.Tx, old Action, in ActionInput, actor string) ([]string, error) {
			if _, err := checked.Of(targets(old, in)...).Confirm(ctx, tx); err != nil {
				return nil, err
			}
			_, err := tx.Exec(ctx, `UPDATE actions SET asset_id = $2, action_type = $3, action_subtype = $4, performed_at = $5,
				person_id = $6, performed_by_person = $7, organization_id = $8, performed_by_organization = $9, reference = $10,
				status = $11, status_ok = $12, status_use_ok = $13, status_finalized = $14, status_valid_through = $15,
				source_system = $16, source_reference = $17, data = $18, meta_data = $19, updated_at = now(), updated_by = $20,
				source_duplicate = source_duplicate AND source_system IS NOT DISTINCT FROM $16 AND source_reference IS NOT DISTINCT FROM $17
				WHERE id = $1`, append([]any{old.ID}, append(inputValues(in), actor)...)...)
			if err != nil {
				return nil, store.Classify(err, "update action")
			}
			return nil, compliance.KeepLatest(ctx, tx, compliance.Pair{AssetID: old.AssetID, ActionType: old.ActionType},
				compliance.Pair{AssetID: in.AssetID.UUID, ActionType: in.ActionType})
		},
		// If-Match names the action as a GET shows it.
		Representation: func(ctx context.Context, a Action) (any, error) { return s.GetAction(ctx, a.ID) },
		Kind:           outbox.KindAction,
		ID:             func(a Action) uuid.UUID { return a.ID },
	}
	in, err := updater.Update(ctx, s.Store, g, id, apply)
	return s.sourceTaken(ctx, err, in)
}

// DeleteAction is the write that removes an action with its action
// documents on behalf of by, for the service to run once the reference
// protocol found nothing in another service naming it (refs.DeleteRow).
func (s *Store) DeleteAction(by model.Caller, id uuid.UUID) func(ctx context.Context, tx pgx.Tx) ([]string, error) {
	return func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		// Its action documents go first, each with its event, rather
		// than unseen by the foreign key's cascade.
		docs, err := store.Many[ActionDocument](ctx, tx, "delete action documents of action",
			`DELETE FROM action_documents d WHERE d.action_id = $1 RETURNING `+actionDocumentColumns, id)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(docs, func(a, b ActionDocument) int { return strings.Compare(a.ID.String(), b.ID.String()) })
		deleted := make([]outbox.Change, len(docs))
		for i, d := range docs {
			deleted[i] = outbox.Deleted(outbox.KindActionDocument, d.ID.String(), utcTimes(d))
		}
		if err := s.Record(ctx, tx, by, deleted...); err != nil {
			return nil, err
		}
		var was compliance.Pair
		if err := store.Delete(ctx, tx, "action", id, `DELETE FROM actions WHERE id = $1 RETURNING asset_id, action_type`,
			&was.AssetID, &was.ActionType); err != nil {
			return nil, err
		}
		return nil, compliance.KeepLatest(ctx, tx, was)
	}
}

// actionsNaming is the reference protocol's question for an asset, a
// person or an organization: the actions whose column holds id.
func actionsNaming(ctx context.Context, q store.Querier, column string, id uuid.UUID) ([]refs.Ref, error) {
	rows, err := q.Query(ctx, `SELECT a.id, a.action_type, a.performed_at FROM actions a WHERE a.`+column+` = $1 ORDER BY a.id`, id)
	if err != nil {
		return nil, store.Classify(err, "actions by "+column)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (refs.Ref, error) {
		var a Action
		err := row.Scan(&a.ID, &a.ActionType, &a.PerformedAt)
		return refs.Ref{Kind: "action", ID: a.ID, Label: a.label()}, err
	})
	return found, store.Classify(err, "actions by "+column)
}

const actionDocumentColumns = `d.id, d.action_id, d.document_id, d.source_system, d.source_reference,
	d.created_at, d.created_by, d.updated_at, d.updated_by`

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
		Prepare: func(ctx context.Context, tx pgx.Tx, _ []model.ItemOutcome) (err error) {
			known, err = checked.ConfirmAll(ctx, tx)
			return err
		},
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
