package actions

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/actiondocs"
	"github.com/assetregistry/registry/services/actions/compliance"
)

// Store is the PostgreSQL persistence of actions (their action documents
// are the component's store's, Documents: the answers embed them and a
// delete takes them along).
// Every write commits through store.Write. The asset, person and
// organization an action names are asked about by the service
// (pkg/refs); a write confirms the check it is given under the targets'
// locks inside its transaction, and the owners ask this store what points
// at them before deleting one.
type Store struct {
	*store.Store
	Documents *actiondocs.Store
}

// NewStore returns the actions store, and its action documents' store,
// over the kit's store, and declares both sides of the reference protocol.
func NewStore(s *store.Store, r refs.Kinds) *Store {
	r.Owns("action", refs.ExistsIn("actions"))
	for kind, column := range map[string]string{"asset": "asset_id", "person": "person_id", "organization": "organization_id"} {
		r.PointsAt(kind, func(ctx context.Context, q store.Querier, id uuid.UUID) ([]refs.Ref, error) {
			return actionsNaming(ctx, q, column, id)
		})
	}
	return &Store{Store: s, Documents: actiondocs.NewStore(s, r)}
}

const actionColumns = `a.id, a.asset_id, a.action_type, a.action_subtype, a.performed_at, a.person_id, a.performed_by_person,
	a.organization_id, a.performed_by_organization, a.reference, a.status, a.status_ok, a.status_use_ok, a.status_finalized,
	a.status_valid_through, a.source_system, a.source_reference, a.data, a.meta_data,
	a.created_at, a.created_by, a.updated_at, a.updated_by`

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
		`SELECT `+actionColumns+`, `+actiondocs.EmbeddedSQL+` FROM actions a
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

// insertActions is insertAction for a batch, in statements whose number
// does not grow with it: one inserts every item (insertActionsSQL), one
// recomputes the compliance rows of their pairs, and the events go in one
// (pkg/outbox). The caller holds the pairs' locks (compliance.LockLatest).
func (s *Store) insertActions(ctx context.Context, tx pgx.Tx, by model.Caller, ins []ActionInput) ([]ActionDetail, error) {
	ids := make([]uuid.UUID, len(ins))
	var pairs []compliance.Pair
	for i, in := range ins {
		ids[i] = store.NewID()
		if changesLatest(in) {
			pairs = append(pairs, compliance.Pair{AssetID: in.AssetID.UUID, ActionType: in.ActionType})
		}
	}
	rows, err := store.Many[ActionDetail](ctx, tx, "insert actions", insertActionsSQL, append(inputArrays(ids, ins), by.Subject)...)
	if err != nil {
		return nil, err
	}
	if len(rows) < len(ids) {
		return nil, errSourceHeld
	}
	if err := compliance.RecomputeLatest(ctx, tx, pairs); err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]ActionDetail, len(rows))
	for _, a := range rows {
		byID[a.ID] = a
	}
	created := make([]ActionDetail, len(ids))
	events := make([]outbox.Change, len(ids))
	for i, id := range ids {
		created[i] = byID[id]
		events[i] = outbox.Created(outbox.KindAction, id.String(), created[i])
	}
	return created, s.Record(ctx, tx, by, events...)
}

// insertActionsSQL inserts the actions of arrays of their columns
// (inputArrays), in their order, but each whose sync key is held inserts
// nothing (and the transaction goes on, so that what the references said
// is answered first). The pairs are claimed in action_source_keys first,
// in the same statement; a claim that finds its pair held by a transaction
// in flight waits for its outcome, as the unique index of the
// unpartitioned table did, and of two items of one statement with the
// same pair only the first claims it. A new action has no action documents
// yet: nothing else can link one to an id this transaction has not
// committed.
const insertActionsSQL = `WITH item AS (
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::uuid[], $7::text[], $8::uuid[],
			$9::text[], $10::text[], $11::text[], $12::bool[], $13::bool[], $14::bool[], $15::text[], $16::text[], $17::text[],
			$18::text[], $19::text[]) WITH ORDINALITY AS i(id, asset_id, action_type, action_subtype, performed_at, person_id,
			performed_by_person, organization_id, performed_by_organization, reference, status, status_ok, status_use_ok,
			status_finalized, status_valid_through, source_system, source_reference, data, meta_data, n)),
	claim AS (
		INSERT INTO action_source_keys (source_system, source_reference, action_id)
		SELECT source_system, source_reference, id FROM item WHERE source_system IS NOT NULL AND source_reference IS NOT NULL
		ORDER BY n
		ON CONFLICT DO NOTHING RETURNING action_id)
	INSERT INTO actions AS a (id, asset_id, action_type, action_subtype, performed_at, person_id,
		performed_by_person, organization_id, performed_by_organization, reference, status, status_ok, status_use_ok,
		status_finalized, status_valid_through, source_system, source_reference, data, meta_data, created_by, updated_by)
	SELECT id, asset_id, action_type, action_subtype, performed_at::date, person_id, performed_by_person, organization_id,
		performed_by_organization, reference, status, status_ok, status_use_ok, status_finalized, status_valid_through::date,
		source_system, source_reference, data::jsonb, meta_data::jsonb, $20, $20
	FROM item WHERE source_system IS NULL OR source_reference IS NULL OR id IN (SELECT action_id FROM claim)
	ORDER BY n
	RETURNING ` + actionColumns + `, '[]'::json AS action_documents, false AS action_documents_truncated`

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
	pipeline.Queue(insertActionsSQL, append(inputArrays([]uuid.UUID{id}, []ActionInput{in}), by.Subject)...)
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

// inputValues are an input's columns in the order of the update.
func inputValues(in ActionInput) []any {
	return []any{in.AssetID.UUID, in.ActionType, in.ActionSubtype, in.PerformedAt, in.PersonID.Ptr(),
		in.PerformedByPerson, in.OrganizationID.Ptr(), in.PerformedByOrganization, in.Reference, in.Status,
		in.StatusOK, in.StatusUseOK, in.StatusFinalized, in.StatusValidThrough, in.SourceSystem, in.SourceReference,
		jsonb(in.Data), jsonb(in.MetaData)}
}

// inputArrays are the columns of ins, each an array, in insertActionsSQL's
// order: ids, then inputValues's. Dates and JSON go as text, which the
// statement casts.
func inputArrays(ids []uuid.UUID, ins []ActionInput) []any {
	n := len(ins)
	assets, persons, organizations := make([]uuid.UUID, n), make([]*uuid.UUID, n), make([]*uuid.UUID, n)
	types, performed := make([]string, n), make([]string, n)
	subtypes, byPerson, byOrganization, references, statuses := make([]*string, n), make([]*string, n), make([]*string, n),
		make([]*string, n), make([]*string, n)
	oks, useOKs, finalized := make([]*bool, n), make([]*bool, n), make([]*bool, n)
	validThrough, systems, sourceReferences, data, metaData := make([]*string, n), make([]*string, n), make([]*string, n),
		make([]*string, n), make([]*string, n)
	for i, in := range ins {
		assets[i], persons[i], organizations[i] = in.AssetID.UUID, in.PersonID.Ptr(), in.OrganizationID.Ptr()
		types[i], performed[i] = in.ActionType, in.PerformedAt.String()
		subtypes[i], byPerson[i], byOrganization[i], references[i], statuses[i] = in.ActionSubtype, in.PerformedByPerson,
			in.PerformedByOrganization, in.Reference, in.Status
		oks[i], useOKs[i], finalized[i] = in.StatusOK, in.StatusUseOK, in.StatusFinalized
		if in.StatusValidThrough != nil {
			validThrough[i] = new(in.StatusValidThrough.String())
		}
		systems[i], sourceReferences[i] = in.SourceSystem, in.SourceReference
		if in.Data != nil {
			data[i] = new(string(in.Data))
		}
		if in.MetaData != nil {
			metaData[i] = new(string(in.MetaData))
		}
	}
	return []any{ids, assets, types, subtypes, performed, persons, byPerson, organizations, byOrganization, references,
		statuses, oks, useOKs, finalized, validThrough, systems, sourceReferences, data, metaData}
}

// GetAction reads an action with its action documents.
func (s *Store) GetAction(ctx context.Context, id uuid.UUID) (ActionDetail, error) {
	return s.getAction(ctx, s.DB(ctx), id)
}

func (s *Store) getAction(ctx context.Context, q store.Querier, id uuid.UUID) (ActionDetail, error) {
	return store.One[ActionDetail](ctx, q, "get action", "action", id,
		`SELECT `+actionColumns+`, `+actiondocs.EmbeddedSQL+` FROM actions a WHERE a.id = $1`, id)
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
		if err := actiondocs.DeleteOfAction(ctx, tx, s.Store, by, id); err != nil {
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
