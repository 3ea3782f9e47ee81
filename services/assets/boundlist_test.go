package assets

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

// boundSeed is 20,000 assets in id order of two types, owned by 200
// organizations in turn (organization 0 is md5('org0')), every hundredth
// with no owner, every tenth granted to another organization (asset 195 and
// every 200th after it to organization 0).
const boundSeed = `
	INSERT INTO assets (id, asset_type_id, serial_number, owner_organization_id, created_by, updated_by)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(k), 12, '0'))::uuid, CASE WHEN k % 2 = 0 THEN $1::uuid ELSE $2::uuid END,
			'SN-' || k, CASE WHEN k % 100 <> 1 THEN md5('org' || k % 200)::uuid END, 'seed', 'seed'
		FROM generate_series(1, 20000) k;
	INSERT INTO asset_grants (asset_id, organization_id, role, created_by)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(k), 12, '0'))::uuid, md5('org' || (k + 5) % 200)::uuid, 'read', 'seed'
		FROM generate_series(1, 20000) k WHERE k % 10 = 5 AND k % 100 <> 1;
	ANALYZE assets, asset_grants`

// A bound client's pages of assets are the assets its organization sees
// (the rule as one condition: own, granted, without owner) in id order,
// every page of them, with a filter too; and the page's plan walks one
// range of an index for each way of seeing, in id order, never every
// asset from the cursor: with the rule as one condition, an organization
// that sees few assets walked the whole table for each page.
func TestBoundAssetPagesWalkTheirOwnRanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.RedisURL(t))
	types := []uuid.UUID{f.assetType(t, "Liftmaster", "LM-200", nil).ID, f.assetType(t, "Liftmaster", "LM-300", nil).ID}
	for _, q := range strings.Split(boundSeed, ";") {
		var args []any
		if strings.Contains(q, "$1") {
			args = []any{types[0], types[1]}
		}
		if _, err := f.store.DB(f.ctx).Exec(f.ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	var org string
	if err := f.store.DB(f.ctx).QueryRow(f.ctx, `SELECT md5('org0')::uuid::text`).Scan(&org); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		filter AssetFilter
		cond   string
	}{
		{"every asset", AssetFilter{}, "true"},
		{"one type", AssetFilter{AssetTypeID: &types[1]}, "a.asset_type_id = '" + types[1].String() + "'"},
	} {
		c.filter.VisibleTo = org
		rows, err := f.store.DB(f.ctx).Query(f.ctx, `SELECT id FROM assets a WHERE `+c.cond+` AND (a.owner_organization_id IS NULL
			OR a.owner_organization_id = $1 OR EXISTS (SELECT 1 FROM asset_grants g WHERE g.asset_id = a.id AND g.organization_id = $1))
			ORDER BY id`, org)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			t.Fatal(err)
		}
		var got []uuid.UUID
		for page := (model.Page{Limit: 7}); ; {
			p, err := f.store.ListAssets(f.ctx, c.filter, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range p.Items {
				got = append(got, a.ID)
			}
			if p.Next == uuid.Nil {
				break
			}
			page.After = p.Next
		}
		// Seen in each way: 100 own, 200 without owner, 100 granted,
		// halved by the type.
		if len(want) < 150 || !slices.Equal(got, want) {
			t.Errorf("%s: the bound pages hold %d assets, want %d: %v…", c.name, len(got), len(want), got[:min(5, len(got))])
		}
	}
	var where store.Filter
	page := model.Page{Limit: model.DefaultLimit, After: uuid.MustParse("00000000-0000-7000-8000-000000000100")}
	from := boundAssets(&where, org, page)
	plan := testkit.Explain(t, f.store.DB(f.ctx), fmt.Sprintf(`SELECT `+assetColumns+from+where.SQL()+` ORDER BY id LIMIT %d`, page.Limit+1), where.Args()...)
	for _, index := range []string{"assets_owner_organization_idx", "assets_without_owner_idx", "asset_grants_organization_idx"} {
		if !strings.Contains(plan, index) {
			t.Errorf("the bound page does not walk %s:\n%s", index, plan)
		}
	}
	if strings.Contains(plan, "Seq Scan on assets") {
		t.Errorf("the bound page reads every asset:\n%s", plan)
	}
}
