package custody

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/assets/custody/accesslog"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Assets is what custody needs of the assets it guards, given by the
// package that owns them (the service's spec.go): custody knows the
// assets table's owner column and nothing else of an asset.
type Assets struct {
	// Representation reads an asset as GET /assets/{id} shows it, through
	// the write's transaction (ctx), for the asset.updated event of an
	// owner change.
	Representation func(ctx context.Context, id uuid.UUID) (any, error)
	// FindScopes are the cached finds that a change of who sees the asset
	// with this serial number makes stale: finds are cached per
	// organization.
	FindScopes func(serial string) []string
}

// Store is the PostgreSQL persistence of grants and transfers. Every write
// that changes an asset's owner or grants writes the asset's access to
// the access change log in its own transaction (accesslog).
type Store struct {
	*store.Store
	assets Assets
	log    *accesslog.Log
}

// NewStore returns the custody store and declares its side of the
// reference protocol: the organizations that own assets, hold grants or
// take part in a pending transfer keep their organization from being
// deleted (a 409 naming them), and transfers are a kind of this service.
func NewStore(s *store.Store, r refs.Kinds, assets Assets) *Store {
	r.Owns("transfer", refs.ExistsIn("asset_transfers"))
	r.PointsAt("organization", organizationRefs)
	return &Store{Store: s, assets: assets, log: accesslog.New(s)}
}

// organizationTarget is a reference to an organization made through field.
func organizationTarget(field string, id uuid.UUID) refs.Target {
	return refs.Target{Field: field, Kind: "organization", ID: id}
}

// OrganizationTarget is an asset's reference to its owner organization,
// which the assets' writes confirm as custody's do.
func OrganizationTarget(id uuid.UUID) refs.Target {
	return organizationTarget("owner_organization_id", id)
}

// accessRow is an asset's access as the queries below read it.
type accessRow struct {
	AssetID uuid.UUID          `db:"asset_id"`
	Owner   *uuid.UUID         `db:"owner_organization_id"`
	Grants  []model.AssetGrant `db:"grants"`
	Version int64              `db:"version"`
}

func (r accessRow) access() model.Access {
	a := model.Access{AssetID: r.AssetID.String(), Grants: r.Grants, Version: r.Version}
	if r.Owner != nil {
		a.OwnerOrganizationID = r.Owner.String()
	}
	return a
}

// accessSQL reads the current access of the assets among $1, with the
// version of each one's latest change (0: never changed).
const accessSQL = `SELECT a.id AS asset_id, a.owner_organization_id, ` + accesslog.GrantsOf + ` AS grants,
	COALESCE((SELECT max(c.version) FROM asset_access_changes c WHERE c.asset_id = a.id), 0) AS version
	FROM assets a WHERE a.id = ANY($1) ORDER BY a.id`

// AccessOf reads an asset's current access through q; an asset that does
// not exist is a 404.
func AccessOf(ctx context.Context, q store.Querier, id uuid.UUID) (model.Access, error) {
	r, err := store.One[accessRow](ctx, q, "read asset access", "asset", id, accessSQL, []uuid.UUID{id})
	return r.access(), err
}

// lookup reads the current access of each of ids that exists.
func lookup(ctx context.Context, q store.Querier, ids []uuid.UUID) ([]model.Access, error) {
	rows, err := store.Many[accessRow](ctx, q, "look up asset access", accessSQL, ids)
	out := make([]model.Access, len(rows))
	for i, r := range rows {
		out[i] = r.access()
	}
	return out, err
}

// AccessChanges reads up to limit changes after version after.
func (s *Store) AccessChanges(ctx context.Context, after int64, limit int) ([]model.Access, error) {
	rows, err := store.Many[accessRow](ctx, s.DB(ctx), "read access changes",
		`SELECT version, asset_id, owner_organization_id, grants FROM asset_access_changes
		WHERE version > $1 ORDER BY version LIMIT $2`, after, limit)
	out := make([]model.Access, len(rows))
	for i, r := range rows {
		out[i] = r.access()
	}
	return out, err
}

// Lookup reads the current access of each of ids that exists.
func (s *Store) Lookup(ctx context.Context, ids []uuid.UUID) ([]model.Access, error) {
	return lookup(ctx, s.DB(ctx), ids)
}

// Access reads an asset's current access.
func (s *Store) Access(ctx context.Context, id uuid.UUID) (model.Access, error) {
	return AccessOf(ctx, s.DB(ctx), id)
}

// lockAsset locks an asset's row for a change of its custody and reads
// its access and serial number.
func lockAsset(ctx context.Context, tx pgx.Tx, id uuid.UUID) (model.Access, string, error) {
	var serial string
	err := tx.QueryRow(ctx, `SELECT serial_number FROM assets WHERE id = $1 FOR UPDATE`, id).Scan(&serial)
	if errors.Is(err, pgx.ErrNoRows) {
		return model.Access{}, "", apperr.NotFound("asset", id.String())
	}
	if err != nil {
		return model.Access{}, "", store.Classify(err, "lock asset")
	}
	acc, err := AccessOf(ctx, tx, id)
	return acc, serial, err
}

// managedAsset locks an asset for a change of its grants or its owner,
// has decide judge its access, and confirms the organization the change
// names (org: a check of that one target).
func managedAsset(ctx context.Context, tx pgx.Tx, id uuid.UUID, decide func(model.Access) error, org *refs.Checked) (model.Access, string, error) {
	acc, serial, err := lockAsset(ctx, tx, id)
	if err == nil {
		err = decide(acc)
	}
	if err == nil {
		_, err = org.Confirm(ctx, tx)
	}
	return acc, serial, err
}

const grantColumns = `asset_id, organization_id, role, created_at, created_by`

// Grants lists an asset's grants in the order they were made.
func (s *Store) Grants(ctx context.Context, assetID uuid.UUID) ([]Grant, error) {
	grants, err := store.Many[Grant](ctx, s.DB(ctx), "list grants",
		`SELECT `+grantColumns+` FROM asset_grants WHERE asset_id = $1 ORDER BY created_at, organization_id`, assetID)
	if grants == nil {
		grants = []Grant{}
	}
	return grants, err
}

// PutGrant gives the organization in the role on the locked asset, or
// replaces the role it holds; decide, the service's rule, sees the asset's
// access first. created reports a new grant. The organization is confirmed
// with checked.
func (s *Store) PutGrant(ctx context.Context, by model.Caller, assetID uuid.UUID, in GrantInput, checked *refs.Checked,
	decide func(model.Access) error) (g Grant, created bool, err error) {
	err = s.Write(ctx, "put grant", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		_, serial, err := managedAsset(ctx, tx, assetID, decide, checked.Of(organizationTarget("organization_id", in.OrganizationID.UUID)))
		if err != nil {
			return nil, err
		}
		var old *Grant
		if prior, err := store.One[Grant](ctx, tx, "read grant", "grant", assetID, `SELECT `+grantColumns+` FROM asset_grants
			WHERE asset_id = $1 AND organization_id = $2`, assetID, in.OrganizationID.UUID); err == nil {
			old = &prior
		} else if !apperr.Is(err, apperr.KindNotFound) {
			return nil, err
		}
		if g, err = store.One[Grant](ctx, tx, "put grant", "grant", assetID, `INSERT INTO asset_grants (asset_id, organization_id, role, created_by)
			VALUES ($1, $2, $3, $4) ON CONFLICT (asset_id, organization_id) DO UPDATE SET role = EXCLUDED.role
			RETURNING `+grantColumns, assetID, in.OrganizationID.UUID, in.Role, by.Subject); err != nil {
			return nil, err
		}
		created = old == nil
		subject := grantSubject(assetID, g.OrganizationID)
		switch {
		case created:
			err = s.Record(ctx, tx, by, outbox.Created(outbox.KindAssetGrant, subject, grantEvent{assetID, g}))
		case old.Role != g.Role:
			err = s.Record(ctx, tx, by, outbox.Updated(outbox.KindAssetGrant, subject, grantEvent{assetID, *old}, grantEvent{assetID, g}))
		default:
			return nil, nil // the same role again: nothing changed
		}
		if err != nil {
			return nil, err
		}
		return s.assets.FindScopes(serial), s.log.Write(ctx, tx, assetID)
	})
	return g, created, err
}

// DeleteGrant removes the organization's grant on the locked asset once
// decide, given the asset's access and the grant (nil: none), allows it.
func (s *Store) DeleteGrant(ctx context.Context, g model.Guard, assetID, organizationID uuid.UUID, decide func(model.Access, *Grant) error) error {
	return s.Write(ctx, "delete grant", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		acc, serial, err := lockAsset(ctx, tx, assetID)
		if err != nil {
			return nil, err
		}
		var held *Grant
		grant, err := store.One[Grant](ctx, tx, "read grant", "grant", assetID, `SELECT `+grantColumns+` FROM asset_grants
			WHERE asset_id = $1 AND organization_id = $2`, assetID, organizationID)
		switch {
		case err == nil:
			held = &grant
		case !apperr.Is(err, apperr.KindNotFound):
			return nil, err
		}
		if err := decide(acc, held); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM asset_grants WHERE asset_id = $1 AND organization_id = $2`, assetID, organizationID); err != nil {
			return nil, store.Classify(err, "delete grant")
		}
		if err := s.Record(ctx, tx, g.Caller, outbox.Deleted(outbox.KindAssetGrant, grantSubject(assetID, organizationID), grantEvent{assetID, grant})); err != nil {
			return nil, err
		}
		return s.assets.FindScopes(serial), s.log.Write(ctx, tx, assetID)
	})
}

const transferColumns = `id, asset_id, from_organization_id, to_organization_id, state, created_at, created_by, updated_at, updated_by`

// CreateTransfer records a pending transfer of the locked asset from its
// owner to the organization in, once decide allows it; the organization
// is confirmed with checked. A pending transfer of the asset is a 409.
func (s *Store) CreateTransfer(ctx context.Context, by model.Caller, assetID uuid.UUID, in TransferInput, checked *refs.Checked,
	decide func(model.Access) error) (Transfer, error) {
	var t Transfer
	err := s.Write(ctx, "create transfer", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		acc, _, err := managedAsset(ctx, tx, assetID, decide, checked.Of(organizationTarget("to_organization_id", in.ToOrganizationID.UUID)))
		if err != nil {
			return nil, err
		}
		t, err = store.One[Transfer](ctx, tx, "create transfer", "transfer", assetID, `INSERT INTO asset_transfers
			(id, asset_id, from_organization_id, to_organization_id, state, created_by, updated_by)
			VALUES ($1, $2, $3, $4, 'pending', $5, $5) RETURNING `+transferColumns,
			store.NewID(), assetID, orgID(acc.OwnerOrganizationID), in.ToOrganizationID.UUID, by.Subject)
		if _, dup := store.Constraint(err, store.UniqueViolation); dup {
			return nil, apperr.Conflict(fmt.Sprintf("asset %s has a pending transfer already: it must be accepted, rejected or cancelled first", assetID))
		}
		if err != nil {
			return nil, err
		}
		return nil, s.Record(ctx, tx, by, outbox.Created(outbox.KindTransfer, t.ID.String(), t))
	})
	return t, err
}

// GetTransfer reads a transfer.
func (s *Store) GetTransfer(ctx context.Context, id uuid.UUID) (Transfer, error) {
	return store.One[Transfer](ctx, s.DB(ctx), "get transfer", "transfer", id, `SELECT `+transferColumns+` FROM asset_transfers WHERE id = $1`, id)
}

// ListTransfers reads one page, of the transfers organization (when not
// empty) sends or receives.
func (s *Store) ListTransfers(ctx context.Context, organization string, f TransferFilter, page model.Page) (model.Paged[Transfer], error) {
	var where store.Filter
	if organization != "" {
		org := orgID(organization)
		where.Where("(from_organization_id = ? OR to_organization_id = ?)", org, org)
	}
	store.Equal(&where, "state", f.State)
	store.Equal(&where, "asset_id", f.AssetID)
	return store.List(ctx, s.Reads(ctx), "list transfers", `SELECT `+transferColumns+` FROM asset_transfers`,
		where, page, func(t Transfer) uuid.UUID { return t.ID })
}

// orgID is a caller's organization as a column value: a claim that is no
// UUID names no organization (uuid.Nil matches none).
func orgID(organization string) uuid.UUID {
	id, _ := uuid.Parse(organization)
	return id
}

// MoveTransfer moves the locked transfer to move's state once decide
// allows it. Accepting it makes the receiver the asset's owner in the
// same transaction (an asset.updated event, and the receiver's grant, now
// pointless, removed); two accepts of one transfer serialize on its lock,
// and the second finds it no longer pending (409).
func (s *Store) MoveTransfer(ctx context.Context, by model.Caller, id uuid.UUID, move Move, decide func(Transfer) error) (Transfer, error) {
	var t Transfer
	err := s.Write(ctx, move.Name+" transfer", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		old, err := store.One[Transfer](ctx, tx, "lock transfer", "transfer", id, `SELECT `+transferColumns+` FROM asset_transfers WHERE id = $1 FOR UPDATE`, id)
		if err != nil {
			return nil, err
		}
		if err := decide(old); err != nil {
			return nil, err
		}
		var changed []string
		if move == Accept {
			if changed, err = s.handOver(ctx, tx, by, old); err != nil {
				return nil, err
			}
		}
		if t, err = store.One[Transfer](ctx, tx, "move transfer", "transfer", id, `UPDATE asset_transfers
			SET state = $2, updated_at = now(), updated_by = $3 WHERE id = $1 RETURNING `+transferColumns, id, move.State, by.Subject); err != nil {
			return nil, err
		}
		return changed, s.Record(ctx, tx, by, outbox.Updated(outbox.KindTransfer, id.String(), old, t))
	})
	return t, err
}

// handOver makes the receiver of t the owner of its asset, which must
// still belong to the sender.
func (s *Store) handOver(ctx context.Context, tx pgx.Tx, by model.Caller, t Transfer) ([]string, error) {
	acc, serial, err := lockAsset(ctx, tx, t.AssetID)
	if err != nil {
		return nil, err
	}
	if acc.OwnerOrganizationID != t.FromOrganizationID.String() {
		return nil, apperr.Conflict(fmt.Sprintf("asset %s no longer belongs to organization %s, which sent this transfer; it can only be cancelled",
			t.AssetID, t.FromOrganizationID))
	}
	return s.setOwners(ctx, tx, by, []uuid.UUID{t.AssetID}, []string{serial}, &t.ToOrganizationID)
}

// ownedRow is an asset's row as an owner change reads it.
type ownedRow struct {
	ID     uuid.UUID  `db:"id"`
	Serial string     `db:"serial_number"`
	Owner  *uuid.UUID `db:"owner_organization_id"`
}

// SetOwners makes owner (nil: none) the owner of the assets of ids, which
// must all exist (a 422 naming the others, and nothing changes); the
// organization is confirmed with checked. Each asset whose owner changes
// gets an asset.updated event and a row in the access change log.
func (s *Store) SetOwners(ctx context.Context, by model.Caller, ids []uuid.UUID, owner *uuid.UUID, checked *refs.Checked) (OwnersResult, error) {
	out := OwnersResult{Changed: []uuid.UUID{}, Unchanged: []uuid.UUID{}}
	err := s.Write(ctx, "set owners", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		out = OwnersResult{Changed: []uuid.UUID{}, Unchanged: []uuid.UUID{}}
		rows, err := store.Many[ownedRow](ctx, tx, "lock assets", `SELECT id, serial_number, owner_organization_id FROM assets
			WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
		if err != nil {
			return nil, err
		}
		var v apperr.Validation
		for i, id := range ids {
			if !slices.ContainsFunc(rows, func(r ownedRow) bool { return r.ID == id }) {
				v.Add(indexed("asset_ids", i), "must name an existing asset; %s does not exist", id)
			}
		}
		if err := v.Err(); err != nil {
			return nil, err
		}
		if owner != nil {
			if _, err := checked.Of(OrganizationTarget(*owner)).Confirm(ctx, tx); err != nil {
				return nil, err
			}
		}
		var changing []uuid.UUID
		var serials []string
		for _, r := range rows {
			if sameOwner(r.Owner, owner) {
				out.Unchanged = append(out.Unchanged, r.ID)
				continue
			}
			changing, serials = append(changing, r.ID), append(serials, r.Serial)
		}
		out.Changed = changing
		if out.Changed == nil {
			out.Changed = []uuid.UUID{}
		}
		return s.setOwners(ctx, tx, by, changing, serials, owner)
	})
	return out, err
}

func sameOwner(a, b *uuid.UUID) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// setOwners writes owner on the locked assets of ids, each with its
// asset.updated event, removes the grants the new owner held on them
// (each with its event), and logs their access.
func (s *Store) setOwners(ctx context.Context, tx pgx.Tx, by model.Caller, ids []uuid.UUID, serials []string, owner *uuid.UUID) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	before := make([]any, len(ids))
	for i, id := range ids {
		var err error
		if before[i], err = s.assets.Representation(ctx, id); err != nil {
			return nil, err
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE assets SET owner_organization_id = $2, updated_at = now(), updated_by = $3 WHERE id = ANY($1)`,
		ids, owner, by.Subject); err != nil {
		return nil, store.Classify(err, "set owner")
	}
	if owner != nil {
		dropped, err := store.Many[Grant](ctx, tx, "drop the new owner's grants", `DELETE FROM asset_grants
			WHERE asset_id = ANY($1) AND organization_id = $2 RETURNING `+grantColumns, ids, *owner)
		if err != nil {
			return nil, err
		}
		for _, g := range dropped {
			if err := s.Record(ctx, tx, by, outbox.Deleted(outbox.KindAssetGrant, grantSubject(g.AssetID, g.OrganizationID), grantEvent{g.AssetID, g})); err != nil {
				return nil, err
			}
		}
	}
	var scopes []string
	for i, id := range ids {
		after, err := s.assets.Representation(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := s.Record(ctx, tx, by, outbox.Updated(outbox.KindAsset, id.String(), before[i], after)); err != nil {
			return nil, err
		}
		scopes = append(scopes, s.assets.FindScopes(serials[i])...)
	}
	return scopes, s.log.Write(ctx, tx, ids...)
}

// organizationRefs names what points at an organization here: the assets
// it owns or holds a grant on, and the pending transfers it sends or
// receives.
func organizationRefs(ctx context.Context, q store.Querier, id uuid.UUID) ([]refs.Ref, error) {
	rows, err := q.Query(ctx, `SELECT 'asset', id, 'owned, serial number ' || serial_number FROM assets WHERE owner_organization_id = $1
		UNION ALL SELECT 'asset', a.id, 'granted, serial number ' || a.serial_number FROM asset_grants g JOIN assets a ON a.id = g.asset_id
			WHERE g.organization_id = $1
		UNION ALL SELECT 'transfer', t.id, 'pending, of asset ' || t.asset_id FROM asset_transfers t
			WHERE t.state = 'pending' AND (t.from_organization_id = $1 OR t.to_organization_id = $1)
		ORDER BY 2`, id)
	if err != nil {
		return nil, store.Classify(err, "assets of organization")
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (refs.Ref, error) {
		var ref refs.Ref
		err := row.Scan(&ref.Kind, &ref.ID, &ref.Label)
		return ref, err
	})
	return found, store.Classify(err, "assets of organization")
}
