package access

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
)

// Store is the copy's tables (the kit's migration 010) in a service's
// schema.
type Store struct{ st *store.Store }

// VisibleTo is the WHERE condition a store adds to a read by a bound
// caller: the row's asset (assetColumn, qualified by its table or alias:
// unqualified, it would name the copy's own column) is one the
// organization in placeholder ($n) sees: no owner, owned by it, or granted to it. An asset
// the copy has never met is not seen. It is model.Access.Sees in SQL; the
// end-to-end matrix holds the two equal.
//
// Each of the three alternatives is one the copy's indexes answer (the
// owner's b-tree, NULL included, and the grantees' GIN index, which takes
// containment, @>, and not = ANY), so the planner can begin from the few
// assets an organization sees (a bitmap of the three) and join the rows
// to them, rather than read the whole copy: at a million assets over
// ten thousand organizations, a bound client's first page of /compliance
// read every row of the copy with = ANY.
func VisibleTo(assetColumn, placeholder string) string {
	return fmt.Sprintf(`EXISTS (SELECT 1 FROM asset_access seen WHERE seen.asset_id = %s
		AND (seen.owner_organization_id IS NULL OR seen.owner_organization_id = %s::uuid OR seen.grantees @> ARRAY[%s::uuid]))`,
		assetColumn, placeholder, placeholder)
}

// Everyone is the organization id of the row an asset with no owner has
// in the copy's asset_seen_by (the kit's migration 011): every client sees
// such an asset.
const Everyone = "00000000-0000-0000-0000-000000000000"

// SeenAssets is the query of the assets the organization in placeholder
// ($n) sees through its own rows in asset_seen_by, in asset order (its
// key's). The assets an organization sees are SeenAssets of its own id and
// SeenAssets of Everyone, never both (VisibleTo in two halves): a bound
// page walks each half in asset order and stops at the page's end, which
// the condition of VisibleTo, an OR of three indexes, cannot (it answers
// in no order, so a page gathered every asset the organization sees and
// sorted them, or walked every row and tested each).
func SeenAssets(placeholder string) string {
	return fmt.Sprintf(`SELECT asset_id FROM asset_seen_by WHERE organization_id = %s::uuid`, placeholder)
}

// GrantedAssets is SeenAssets of the assets the organization in
// placeholder ($n) sees through a grant only, in asset order (the kit's
// migration 012): what a read model keyed by the owner organization (the
// actions service's compliance rows) walks beside the ranges of its own
// indexes of the organization's assets and Everyone's.
func GrantedAssets(placeholder string) string {
	return SeenAssets(placeholder) + ` AND granted`
}

// Cursor is the last change version the copy applied.
func (s *Store) Cursor(ctx context.Context) (int64, error) {
	var v int64
	err := s.st.DB(ctx).QueryRow(ctx, `SELECT version FROM asset_access_cursor`).Scan(&v)
	if err == pgx.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, store.Classify(err, "read the asset access cursor")
	}
	return v, nil
}

// Apply keeps changes and moves the cursor to next, in one transaction.
func (s *Store) Apply(ctx context.Context, changes []model.Access, next int64) error {
	return s.st.Write(store.WithoutUnit(ctx), "apply asset access changes", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if err := s.Learn(ctx, changes); err != nil {
			return nil, err
		}
		_, err := tx.Exec(ctx, `INSERT INTO asset_access_cursor (version) VALUES ($1)
			ON CONFLICT (only_row) DO UPDATE SET version = GREATEST(asset_access_cursor.version, EXCLUDED.version)`, next)
		return nil, store.Classify(err, "move the asset access cursor")
	})
}

// Learn keeps each access unless the copy holds a newer one for its asset.
func (s *Store) Learn(ctx context.Context, access []model.Access) error {
	access = newestOfEach(access)
	if len(access) == 0 {
		return nil
	}
	ids := make([]string, len(access))
	owners := make([]*string, len(access))
	grantees := make([]string, len(access)) // a Postgres array literal per row
	grants := make([]string, len(access))
	versions := make([]int64, len(access))
	for i, a := range access {
		ids[i], versions[i] = a.AssetID, a.Version
		if a.OwnerOrganizationID != "" {
			owner := a.OwnerOrganizationID
			owners[i] = &owner
		}
		list := "{"
		for j, g := range a.Grants {
			if j > 0 {
				list += ","
			}
			list += g.OrganizationID
		}
		grantees[i] = list + "}"
		raw, err := json.Marshal(orEmpty(a.Grants))
		if err != nil {
			return fmt.Errorf("access: encode grants of asset %s: %w", a.AssetID, err)
		}
		grants[i] = string(raw)
	}
	// An access the copy holds already (as new or newer) is left out before
	// the upsert: ON CONFLICT DO UPDATE locks the row it meets even when
	// its WHERE then updates nothing, and writers of actions that look up
	// the same asset at once queued on that lock (pg_stat_activity under
	// the compliance lag's load).
	_, err := s.st.DB(ctx).Exec(ctx, `INSERT INTO asset_access (asset_id, owner_organization_id, grantees, grants, version)
		SELECT id, owner, grantees::uuid[], grants::jsonb, version
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::bigint[]) AS u(id, owner, grantees, grants, version)
		WHERE NOT EXISTS (SELECT 1 FROM asset_access held WHERE held.asset_id = u.id AND held.version >= u.version)
		ON CONFLICT (asset_id) DO UPDATE SET owner_organization_id = EXCLUDED.owner_organization_id,
			grantees = EXCLUDED.grantees, grants = EXCLUDED.grants, version = EXCLUDED.version
		WHERE asset_access.version < EXCLUDED.version`, ids, owners, grantees, grants, versions)
	return store.Classify(err, "keep asset access")
}

// Get returns the copy's access of those of ids it holds.
func (s *Store) Get(ctx context.Context, ids []string) (map[string]model.Access, error) {
	rows, err := s.st.DB(ctx).Query(ctx, `SELECT asset_id::text, COALESCE(owner_organization_id::text, ''), grants, version
		FROM asset_access WHERE asset_id = ANY ($1::uuid[])`, ids)
	if err != nil {
		return nil, store.Classify(err, "read asset access")
	}
	defer rows.Close()
	found := make(map[string]model.Access, len(ids))
	for rows.Next() {
		var a model.Access
		if err := rows.Scan(&a.AssetID, &a.OwnerOrganizationID, &a.Grants, &a.Version); err != nil {
			return nil, store.Classify(err, "read asset access")
		}
		found[a.AssetID] = a
	}
	return found, store.Classify(rows.Err(), "read asset access")
}

func orEmpty(g []model.AssetGrant) []model.AssetGrant {
	if g == nil {
		return []model.AssetGrant{}
	}
	return g
}

// newestOfEach keeps the newest access of each asset: a page of the change
// log may hold several changes of one asset, and one statement may not
// upsert a row twice.
func newestOfEach(access []model.Access) []model.Access {
	newest := make(map[string]int, len(access))
	out := make([]model.Access, 0, len(access))
	for _, a := range access {
		if i, ok := newest[a.AssetID]; ok {
			if a.Version >= out[i].Version {
				out[i] = a
			}
			continue
		}
		newest[a.AssetID] = len(out)
		out = append(out, a)
	}
	return out
}
