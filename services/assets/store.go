package assets

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/assets/assettypes"
	"github.com/assetregistry/registry/services/assets/custody"
	"github.com/assetregistry/registry/services/assets/custody/accesslog"
)

var assetExternals = assettypes.Externals{Table: "asset_external_ids", Owner: "asset_id", Resource: "asset"}

// Store is the PostgreSQL persistence of assets. Every write commits
// through store.Write, which then makes stale the cached finds the write
// says it changed. References to people are asked about by the service
// (pkg/refs); a write confirms the check it is given under the targets'
// locks inside its transaction, and the people's owner asks this store
// what points at a person before deleting one. An asset's type must exist:
// the schema's foreign key holds it.
type Store struct {
	*store.Store
	access *accesslog.Log
}

// NewStore returns the assets store over the kit's store and declares its
// side of the reference protocol.
func NewStore(s *store.Store, r refs.Kinds) *Store {
	r.Owns("asset", refs.ExistsIn("assets"))
	// The actions service rebuilds its projection of assets (compliance:
	// each asset's type and parent) from this listing.
	r.Lists("asset", refs.ListIn("assets", "asset_type_id", "parent_asset_id"))
	// ... and relearns from this one the readings a usage plan counts.
	r.Lists("meter_reading", listReadings)
	r.PointsAt("person", func(ctx context.Context, q store.Querier, id uuid.UUID) ([]refs.Ref, error) {
		return assetRefs(ctx, q, "responsible_person_id", id)
	})
	return &Store{Store: s, access: accesslog.New(s)}
}

// AssetsOfType names the assets of an asset type: what the asset types'
// store answers a refused delete with (assettypes.NewStore).
func AssetsOfType(ctx context.Context, q store.Querier, typeID uuid.UUID) ([]refs.Ref, error) {
	return assetRefs(ctx, q, "asset_type_id", typeID)
}

var assetColumns = `a.id, a.serial_number, a.asset_type_id, a.production_year, a.status, a.responsible_person_id, ` +
	assetExternals.Column("a") + `, a.parent_asset_id, a.owner_organization_id, a.created_at, a.created_by, a.updated_at, a.updated_by`

// idRow is the RETURNING of an insert that may not insert.
type idRow struct {
	ID uuid.UUID `db:"id"`
}

// CreateAsset inserts an asset; its type must exist and its responsible
// person, when given, too (confirmed with checked). An asset with the same
// serial number in the type is a 409.
func (s *Store) CreateAsset(ctx context.Context, by model.Caller, in AssetInput, checked *refs.Checked) (Asset, error) {
	a, created, err := s.CreateAssetIfAbsent(ctx, by, in, checked)
	if err == nil && !created {
		err = apperr.Duplicate(assetDuplicate(in), a.ID.String())
	}
	return a, err
}

// CreateAssetIfAbsent inserts an asset unless its type holds the serial
// number already, in which case it returns that asset. Concurrent callers
// with the same type and serial number all get the one row: the unique
// index arbitrates. The responsible person is confirmed with checked.
func (s *Store) CreateAssetIfAbsent(ctx context.Context, by model.Caller, in AssetInput, checked *refs.Checked) (Asset, bool, error) {
	return s.createAssetIfAbsent(ctx, by, in, func(ctx context.Context, tx pgx.Tx) error {
		if targets := refsOf(in); len(targets) > 0 {
			_, err := checked.Of(targets...).Confirm(ctx, tx)
			return err
		}
		return nil
	})
}

// CreateAssets finds or creates each asset of a batch by its type and
// serial number: out[i] already holds the error of an item that failed
// before (its decoding, its rules). The responsible people of the whole
// batch were asked about together, once, before the transaction (checked,
// the service's); the items are written in one transaction (the request's
// unit of work, if it has one), each in a savepoint, so an item that fails
// leaves the others. A failure of the check or of the database fails the
// whole batch and writes none of it.
func (s *Store) CreateAssets(ctx context.Context, by model.Caller, ins []AssetInput, out []model.ItemOutcome, checked *refs.Checked) error {
	var known refs.Known
	return s.WriteBatch(ctx, out, store.BatchWrite{
		Prepare: checked.ConfirmInto(&known),
		Item: func(ctx context.Context, i int) (model.ItemOutcome, error) {
			a, created, err := s.createAssetIfAbsent(ctx, by, ins[i], func(context.Context, pgx.Tx) error {
				return known.Missing(refsOf(ins[i])...)
			})
			return model.ItemOutcome{ID: a.ID, Created: created}, err
		},
	})
}

// createAssetIfAbsent is CreateAssetIfAbsent with the check of the
// responsible person and the owner organization the caller chooses. An
// asset that exists already but that by does not see is a 409
// asset-not-visible, which names neither the asset nor its owner.
func (s *Store) createAssetIfAbsent(ctx context.Context, by model.Caller, in AssetInput,
	checkRefs func(ctx context.Context, tx pgx.Tx) error) (Asset, bool, error) {
	var a Asset
	created := false
	err := s.Write(ctx, "create asset", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if err := holdParent(ctx, tx, in.ParentAssetID.Ptr()); err != nil {
			return nil, err
		}
		row, inserted, err := store.Inserted(ctx, tx, "insert asset",
			`INSERT INTO assets (id, asset_type_id, serial_number, production_year, status, responsible_person_id, owner_organization_id, parent_asset_id, created_by, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6, $8, $9, $7, $7) ON CONFLICT (asset_type_id, serial_number) DO NOTHING RETURNING id`,
			[]any{store.NewID(), in.AssetTypeID.UUID, in.SerialNumber, in.ProductionYear, in.Status, in.ResponsiblePersonID.Ptr(), by.Subject,
				in.OwnerOrganizationID.Ptr(), in.ParentAssetID.Ptr()},
			func() (idRow, error) {
				return store.One[idRow](ctx, tx, "get asset by serial number", "asset", uuid.Nil,
					`SELECT id FROM assets WHERE asset_type_id = $1 AND serial_number = $2`, in.AssetTypeID.UUID, in.SerialNumber)
			})
		if err != nil {
			return nil, assetTypeMissing(err, in.AssetTypeID.UUID)
		}
		if !inserted && by.Organization != "" {
			if acc, err := custody.AccessOf(ctx, tx, row.ID); err != nil || !acc.Sees(by) {
				return nil, cmp.Or(err, notVisible(in))
			}
		}
		if inserted {
			if err := checkRefs(ctx, tx); err != nil {
				return nil, err
			}
			if err := assetExternals.Save(ctx, tx, row.ID, in.ExternalIDs); err != nil {
				return nil, err
			}
		}
		created = inserted
		if a, err = s.getAsset(ctx, tx, row.ID); err != nil || !inserted {
			return nil, err
		}
		if err := s.Record(ctx, tx, by, outbox.Created(outbox.KindAsset, a.ID.String(), a)); err != nil {
			return nil, err
		}
		if err := s.Record(ctx, tx, by, componentChanges(a, nil, a.ParentAssetID)...); err != nil {
			return nil, err
		}
		return []string{assetFinds(in.SerialNumber)}, nil
	})
	return a, created, err
}

// confirmPerson confirms with checked that the responsible person (nil:
// none) exists, and keeps them from being deleted until the transaction
// ends (pkg/refs).
func confirmPerson(ctx context.Context, tx pgx.Tx, checked *refs.Checked, id *uuid.UUID) error {
	if id == nil {
		return nil
	}
	_, err := checked.Of(personTarget(*id)).Confirm(ctx, tx)
	return err
}

// assetTypeMissing turns the foreign key of an asset's type into the 422
// of a type that does not exist.
func assetTypeMissing(err error, typeID uuid.UUID) error {
	name, missing := store.Constraint(err, store.ForeignKeyViolation)
	if missing && name == "assets_parent_asset_id_fkey" {
		return apperr.Invalid(apperr.FieldError{Field: "parent_asset_id", Message: "must name an existing asset; it was deleted meanwhile"})
	}
	if missing {
		return apperr.Invalid(apperr.FieldError{Field: "asset_type_id",
			Message: fmt.Sprintf("must name an existing asset type; %s does not exist", typeID)})
	}
	return err
}

// notVisible is the 409 of a create whose asset type and serial number
// are held by an asset the caller does not see.
func notVisible(in AssetInput) error {
	return apperr.AssetNotVisible(fmt.Sprintf("an asset with serial_number %s exists already in asset type %s, held by an organization "+
		"that has not shared it with yours; ask its owner for a grant or a transfer", in.SerialNumber, in.AssetTypeID.UUID))
}

func assetDuplicate(in AssetInput) string {
	return fmt.Sprintf("an asset with serial_number %s exists already in asset type %s", in.SerialNumber, in.AssetTypeID.UUID)
}

// GetAsset reads an asset.
func (s *Store) GetAsset(ctx context.Context, id uuid.UUID) (Asset, error) {
	return s.getAsset(ctx, s.DB(ctx), id)
}

// GetAssetSeenBy reads an asset the organization org sees (visibleTo:
// "" sees every asset), in one query; any other is a 404, as one that
// does not exist.
func (s *Store) GetAssetSeenBy(ctx context.Context, id uuid.UUID, org string) (Asset, error) {
	var where store.Filter
	where.Where("a.id = ?", id)
	visibleTo(&where, org)
	return store.One[Asset](ctx, s.DB(ctx), "get asset", "asset", id, `SELECT `+assetColumns+` FROM assets a`+where.SQL(), where.Args()...)
}

func (s *Store) getAsset(ctx context.Context, q store.Querier, id uuid.UUID) (Asset, error) {
	return store.One[Asset](ctx, q, "get asset", "asset", id, `SELECT `+assetColumns+` FROM assets a WHERE a.id = $1`, id)
}

// ListAssets reads one page.
func (s *Store) ListAssets(ctx context.Context, f AssetFilter, page model.Page) (model.Paged[Asset], error) {
	var where store.Filter
	store.Equal(&where, "asset_type_id", f.AssetTypeID)
	store.Equal(&where, "serial_number", f.SerialNumber)
	store.Equal(&where, "responsible_person_id", f.ResponsiblePersonID)
	store.Equal(&where, "parent_asset_id", f.ParentAssetID)
	assetExternals.Filter(&where, "a", f.External)
	from := ` FROM assets a`
	if f.VisibleTo != "" {
		from = boundAssets(&where, f.VisibleTo, page)
	}
	return store.List(ctx, s.Reads(ctx), "list assets", `SELECT `+assetColumns+from,
		where, page, func(a Asset) uuid.UUID { return a.ID })
}

// boundAssets is the FROM of a page of the assets the organization org
// sees, for the conditions in where (alias a): three walks in id order,
// each stopping at the page's end, merged. Its own assets are a range of
// the owner index, those without owner of their partial index (the
// assets migration 005), its grants a range of the grants' index. One
// condition for all (visibleTo) has no index that answers it in id
// order: a page walked every asset from the cursor and tested each, the
// whole table for an organization that sees few (at 1,000 assets over
// 1,000 organizations a bound page took 1.4 times an unbound one). where's
// conditions hold on every part, and again on the merge, which they
// select the same way (a's columns).
func boundAssets(where *store.Filter, org string, page model.Page) string {
	id, _ := uuid.Parse(org) // a claim that is no UUID owns nothing (uuid.Nil)
	// Each walk starts at the cursor (store.List puts it on the merge).
	conds, orgParam, keyset, grants := where.SQL(), where.Arg(id), "", ""
	if page.After != uuid.Nil {
		after := where.Arg(page.After)
		keyset, grants = " AND a.id > "+after, " AND asset_id > "+after
	}
	and := func(cond string) string {
		if conds == "" {
			return " WHERE " + cond
		}
		return conds + " AND " + cond
	}
	limit := fmt.Sprintf(" LIMIT %d", page.Limit+1)
	// The grants are walked in asset order and each one's asset read
	// (a lateral subquery): joined as tables, the planner may hash every
	// asset from the cursor against them.
	return ` FROM ((SELECT a.* FROM assets a` + and("a.owner_organization_id = "+orgParam+keyset) + ` ORDER BY a.id` + limit + `)
		UNION ALL (SELECT a.* FROM assets a` + and("a.owner_organization_id IS NULL"+keyset) + ` ORDER BY a.id` + limit + `)
		UNION ALL (SELECT a.* FROM (SELECT asset_id FROM asset_grants WHERE organization_id = ` + orgParam + grants + `) g
			CROSS JOIN LATERAL (SELECT a.* FROM assets a` + and("a.id = g.asset_id AND a.owner_organization_id <> "+orgParam) + `) a
			ORDER BY g.asset_id` + limit + `)) a`
}

// FindAssets returns up to limit assets with the serial number in the
// types the criteria name (in any type when they name none).
func (s *Store) FindAssets(ctx context.Context, q AssetQuery, limit int, visibleToOrg string) ([]Asset, error) {
	var where store.Filter
	where.Where("a.serial_number = ?", q.SerialNumber)
	visibleTo(&where, visibleToOrg)
	if q.NamesType() {
		assettypes.Match(&where, q.typeCriteria())
	}
	return store.Many[Asset](ctx, s.Reads(ctx), "find asset",
		`SELECT `+assetColumns+` FROM assets a JOIN asset_types t ON t.id = a.asset_type_id`+where.SQL()+
			fmt.Sprintf(` ORDER BY a.id LIMIT %d`, limit), where.Args()...)
}

// UpdateAsset applies apply to the locked asset; a new responsible person
// is confirmed with checked.
func (s *Store) UpdateAsset(ctx context.Context, g model.Guard, id uuid.UUID, apply func(Asset) (AssetInput, error), checked *refs.Checked) error {
	updater := store.Updater[Asset, AssetInput]{
		Resource: "asset",
		Select:   `SELECT ` + assetColumns + ` FROM assets a WHERE a.id = $1`,
		Input:    assetInputOf,
		Save: func(ctx context.Context, tx pgx.Tx, old Asset, in AssetInput, actor string) ([]string, error) {
			changed, err := saveAsset(ctx, tx, s.access, checked, old, in, actor)
			if err != nil || equalIDs(old.ParentAssetID, in.ParentAssetID.Ptr()) {
				return changed, err
			}
			moved, err := s.getAsset(ctx, tx, old.ID)
			if err != nil {
				return nil, err
			}
			return changed, s.Record(ctx, tx, g.Caller, componentChanges(moved, old.ParentAssetID, in.ParentAssetID.Ptr())...)
		},
		Representation: func(ctx context.Context, a Asset) (any, error) { return s.GetAsset(ctx, a.ID) },
		Kind:           outbox.KindAsset,
		ID:             func(a Asset) uuid.UUID { return a.ID },
	}
	in, err := updater.Update(ctx, s.Store, g, id, apply)
	return s.Duplicate(ctx, err, assetDuplicate(in),
		`SELECT id FROM assets WHERE asset_type_id = $1 AND serial_number = $2`, in.AssetTypeID.UUID, in.SerialNumber)
}

func saveAsset(ctx context.Context, tx pgx.Tx, access *accesslog.Log, checked *refs.Checked, old Asset, in AssetInput, actor string) ([]string, error) {
	if parent := in.ParentAssetID.Ptr(); !equalIDs(parent, old.ParentAssetID) {
		if err := moveUnder(ctx, tx, old.ID, parent); err != nil {
			return nil, err
		}
	}
	if person := in.ResponsiblePersonID.Ptr(); !equalIDs(person, old.ResponsiblePersonID) {
		if err := confirmPerson(ctx, tx, checked, person); err != nil {
			return nil, err
		}
	}
	ownerChanged := !equalIDs(in.OwnerOrganizationID.Ptr(), old.OwnerOrganizationID)
	if owner := in.OwnerOrganizationID.Ptr(); ownerChanged && owner != nil {
		if _, err := checked.Of(custody.OrganizationTarget(*owner)).Confirm(ctx, tx); err != nil {
			return nil, err
		}
	}
	_, err := tx.Exec(ctx, `UPDATE assets SET asset_type_id = $2, serial_number = $3, production_year = $4, status = $5,
		responsible_person_id = $6, owner_organization_id = $8, parent_asset_id = $9, updated_at = now(), updated_by = $7 WHERE id = $1`,
		old.ID, in.AssetTypeID.UUID, in.SerialNumber, in.ProductionYear, in.Status, in.ResponsiblePersonID.Ptr(), actor,
		in.OwnerOrganizationID.Ptr(), in.ParentAssetID.Ptr())
	if err != nil {
		return nil, assetTypeMissing(store.Classify(err, "update asset"), in.AssetTypeID.UUID)
	}
	if ownerChanged {
		// Who sees the asset changed: the other services' copies follow
		// the log.
		if err := access.Write(ctx, tx, old.ID); err != nil {
			return nil, err
		}
	}
	if !slices.Equal(old.ExternalIDs, in.ExternalIDs) {
		if err := assetExternals.Save(ctx, tx, old.ID, in.ExternalIDs); err != nil {
			return nil, err
		}
	}
	return []string{assetFinds(old.SerialNumber), assetFinds(in.SerialNumber)}, nil
}

// DeleteAsset is the write that removes an asset, its external ids and
// readings, once the reference protocol found nothing in another service
// naming it (refs.DeleteRow). An asset that has components is a 409
// naming them; a component's delete removes it from its parent.
func (s *Store) DeleteAsset(by model.Caller, id uuid.UUID) func(ctx context.Context, tx pgx.Tx) ([]string, error) {
	return func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		components, err := assetRefs(ctx, tx, "parent_asset_id", id)
		if err != nil {
			return nil, err
		}
		if len(components) > 0 {
			for i := range components {
				components[i].Label = "its component, " + components[i].Label
			}
			return nil, refs.StillReferenced("asset", id, components)
		}
		gone, err := s.getAsset(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		err = store.Delete(ctx, tx, "asset", id, `DELETE FROM assets WHERE id = $1 RETURNING serial_number`, &gone.SerialNumber)
		if _, held := store.Constraint(err, store.ForeignKeyViolation); held {
			// A component installed since the look above.
			return nil, apperr.Conflict(fmt.Sprintf("asset %s has components: remove them from it first", id))
		}
		if err != nil {
			return nil, err
		}
		// Its readings' writes held its key-share lock (migration 006).
		if _, err := tx.Exec(ctx, `DELETE FROM meter_readings WHERE asset_id = $1`, id); err != nil {
			return nil, store.Classify(err, "delete the asset's meter readings")
		}
		return []string{assetFinds(gone.SerialNumber)}, s.Record(ctx, tx, by, componentChanges(gone, gone.ParentAssetID, nil)...)
	}
}

// parentMoves is the advisory lock every change of an existing asset's
// parent takes first, before its row's lock: moves then run one at a
// time, so the ancestors each one reads are final, and two moves that
// would close a cycle together (A under B, B under A) cannot both pass.
// Creating an asset under a parent needs no turn: a new asset has no
// components, so it closes no cycle.
const parentMoves = "assets:parent_moves"

// Moving runs fn, a write that may change assets' parents, in a
// transaction that holds the parent moves' lock.
func (s *Store) Moving(ctx context.Context, fn func(ctx context.Context) error) error {
	return s.Write(ctx, "move asset", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, parentMoves); err != nil {
			return nil, store.Classify(err, "lock parent moves")
		}
		return nil, fn(ctx)
	})
}

// holdParent checks that the parent (nil: none) exists and keeps it from
// being deleted until the transaction ends (FOR KEY SHARE, what its
// foreign key takes anyway).
func holdParent(ctx context.Context, tx pgx.Tx, parent *uuid.UUID) error {
	if parent == nil {
		return nil
	}
	var found bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM assets WHERE id = $1 FOR KEY SHARE)`, *parent).Scan(&found)
	if err != nil {
		return store.Classify(err, "lock parent asset")
	}
	if !found {
		return parentMissing(*parent)
	}
	return nil
}

// moveUnder checks that the asset id may become a component of parent
// (nil: of none): the parent exists and is not the asset or one of its
// components, however deep. The caller holds the parent moves' lock
// (Moving), so the ancestors read here are final until it commits.
func moveUnder(ctx context.Context, tx pgx.Tx, id uuid.UUID, parent *uuid.UUID) error {
	if err := holdParent(ctx, tx, parent); err != nil || parent == nil {
		return err
	}
	var cycle bool
	err := tx.QueryRow(ctx, `WITH RECURSIVE up (id, parent_asset_id) AS (
			SELECT id, parent_asset_id FROM assets WHERE id = $1
			UNION SELECT a.id, a.parent_asset_id FROM assets a JOIN up ON a.id = up.parent_asset_id)
		SELECT EXISTS (SELECT 1 FROM up WHERE id = $2)`, *parent, id).Scan(&cycle)
	if err != nil {
		return store.Classify(err, "read ancestors")
	}
	if cycle {
		return apperr.Invalid(apperr.FieldError{Field: "parent_asset_id",
			Message: fmt.Sprintf("would make a cycle: asset %s is %s itself or one of its components", *parent, id)})
	}
	return nil
}

// assetRefs names the assets whose column holds id: those of a person
// (the reference protocol's question) or of an asset type.
func assetRefs(ctx context.Context, q store.Querier, column string, id uuid.UUID) ([]refs.Ref, error) {
	rows, err := q.Query(ctx, `SELECT id, serial_number FROM assets WHERE `+column+` = $1 ORDER BY id`, id)
	if err != nil {
		return nil, store.Classify(err, "assets by "+column)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (refs.Ref, error) {
		ref := refs.Ref{Kind: "asset"}
		var serial string
		err := row.Scan(&ref.ID, &serial)
		ref.Label = "serial number " + serial
		return ref, err
	})
	return found, store.Classify(err, "assets by "+column)
}

// Access reads an asset's owner and grants: who sees it (model.Access).
func (s *Store) Access(ctx context.Context, id uuid.UUID) (model.Access, error) {
	return custody.AccessOf(ctx, s.DB(ctx), id)
}

// visibleTo narrows a query of assets (alias a) to those the bound
// organization org sees: its own, those it holds a grant on, and those
// without owner (model.Access.Sees, as SQL). An empty org sees every row.
func visibleTo(where *store.Filter, org string) {
	if org == "" {
		return
	}
	id, _ := uuid.Parse(org) // a claim that is no UUID owns nothing (uuid.Nil)
	where.Where(`(a.owner_organization_id IS NULL OR a.owner_organization_id = ?
		OR EXISTS (SELECT 1 FROM asset_grants g WHERE g.asset_id = a.id AND g.organization_id = ?))`, id, id)
}

// listReadings is the reference protocol's listing of every meter reading
// (meters), in id order: each reading's fields as its meter_reading.created
// event has them, the times in RFC 3339 (UTC, microseconds as stored), the
// value as PostgreSQL writes a float8, which reads back exactly.
func listReadings(ctx context.Context, q store.Querier, after uuid.UUID, limit int) ([]refs.Found, error) {
	const at = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`
	rows, err := q.Query(ctx, `SELECT id, asset_id::text, meter, value::text, reset::text,
			to_char(read_at AT TIME ZONE 'UTC', `+at+`), to_char(created_at AT TIME ZONE 'UTC', `+at+`)
		FROM meter_readings WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, store.Classify(err, "list meter readings")
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (refs.Found, error) {
		var f refs.Found
		var asset, meter, value, reset, readAt, createdAt string
		err := row.Scan(&f.ID, &asset, &meter, &value, &reset, &readAt, &createdAt)
		f.Attrs = refs.Attrs{"asset_id": asset, "meter": meter, "value": value, "reset": reset, "read_at": readAt, "created_at": createdAt}
		return f, err
	})
	return found, store.Classify(err, "list meter readings")
}
