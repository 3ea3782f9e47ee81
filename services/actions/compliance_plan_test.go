package actions

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/tools/testkit"
)

// planSeed is the quick bench's compliance seed in SQL: 20,000 assets in
// id order, owned by 200 organizations in turn (organization 0 is the
// bound caller's: md5('org0')); every tenth granted to another
// (asset 195 and every 200th after it to organization 0); every thousandth with no owner (everyone's); each with a
// latest action of the four types, dated over ten years in id order (the
// first page of overdue rows is the oldest assets'), 5 % failed, 4 %
// open-ended.
const planSeed = `
	INSERT INTO known_assets (asset_id, asset_type_id, event_id)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(k), 12, '0'))::uuid, '00000000-0000-7000-8000-aaaaaaaaaaaa', gen_random_uuid()
		FROM generate_series(1, 20000) k;
	INSERT INTO asset_access (asset_id, owner_organization_id, grantees, grants, version)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(k), 12, '0'))::uuid, CASE WHEN k % 1000 <> 1 THEN md5('org' || k % 200)::uuid END,
			CASE WHEN k % 10 = 5 THEN ARRAY[md5('org' || (k + 5) % 200)::uuid] ELSE '{}' END, '[]', 0
		FROM generate_series(1, 20000) k;
	INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, status_ok, status_use_ok, valid_through, class)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(k), 12, '0'))::uuid, t, gen_random_uuid(), d, k % 20 <> 7, true,
			CASE WHEN k % 25 <> 3 THEN d + 365 END,
			CASE WHEN k % 20 = 7 THEN 'failed' WHEN k % 25 = 3 THEN 'open_ended' ELSE 'dated' END
		FROM generate_series(1, 20000) k, unnest(ARRAY['expert_control', 'maintenance', 'pre_use_inspection', 'repair']) t,
			LATERAL (SELECT date '2016-01-01' + (k * 3650 / 20000) AS d) dd;
	VACUUM ANALYZE known_assets, asset_access, asset_seen_by, latest_actions`

// A bound caller's page of /compliance walks indexes in page order and
// stops at the page's end, as an unbound one's does: it neither gathers
// every asset its organization sees and sorts them, nor reads a table
// whole (at 20,000 assets over 200 organizations such a plan read all of
// known_assets, 10 ms against 0.1 ms unbound). Its rows are the unbound
// page's rows of the assets the organization sees (access.VisibleTo, the
// rule in SQL), live and as_of, through grants and on assets with no owner.
func TestBoundCompliancePageWalksInPageOrder(t *testing.T) {
	ctx := t.Context()
	cfg := store.Config{URL: testkit.PostgresURL(t), Schema: testkit.NewDatabaseSchema(t), MaxConns: 4, StartupWait: time.Second}
	pool, err := store.OpenAndMigrateSets(ctx, cfg, nil, store.Migrations(Spec().Migrations)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, q := range strings.Split(planSeed, ";") {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var org string
	if err := pool.QueryRow(ctx, `SELECT md5('org0')::uuid::text`).Scan(&org); err != nil {
		t.Fatal(err)
	}
	today := model.Today()
	asOf := model.DateOf(today.Time().AddDate(0, -1, 0))
	// Rows are sorted by asset only when already in asset order (the
	// type's order within an asset): an Incremental Sort. (The as_of
	// rows' plans sort a row's few candidates by other keys.)
	fullSort := regexp.MustCompile(`(^|->  )Sort  .*\n\s*Sort Key: [^,\n]*\basset_id\b`)
	wholeTable := regexp.MustCompile(`Seq Scan on (known_assets|latest_actions|asset_access|asset_seen_by)`)
	for _, c := range []struct {
		name   string
		filter compliance.Filter
	}{
		{"overdue expert controls", compliance.Filter{ActionTypes: []string{"expert_control"}, States: []string{"overdue"}}},
		{"every state of two types", compliance.Filter{ActionTypes: []string{"expert_control", "repair"}}},
		{"every state as_of", compliance.Filter{ActionTypes: []string{"expert_control"}, AsOf: &asOf}},
	} {
		page := model.Page{Limit: model.DefaultLimit}
		sql, args := compliance.PageSQL(c.filter, org, today, nil, page)
		plan := testkit.Explain(t, pool, sql, args...)
		if fullSort.MatchString(plan) || wholeTable.MatchString(plan) || !strings.Contains(plan, "asset_seen_by_pkey") {
			t.Errorf("%s: the bound page's plan sorts, reads a table whole, or does not walk asset_seen_by:\n%s", c.name, plan)
		}
		// The rows: the unbound answer, all pages of it, kept where the
		// organization sees the asset, up to a page.
		got := pageRows(t, pool, sql, args)
		all, allArgs := compliance.PageSQL(c.filter, "", today, nil, model.Page{Limit: 100_000})
		want := pageRows(t, pool, `SELECT a.asset_id, a.action_type FROM (`+all+`) a WHERE `+
			access.VisibleTo("a.asset_id", fmt.Sprintf("$%d", len(allArgs)+1)), append(allArgs, org))
		want = want[:min(len(want), page.Limit+1)]
		if len(got) <= page.Limit || !slices.Equal(got, want) {
			t.Errorf("%s: the bound page holds %d rows %v…, want %d %v…", c.name, len(got), got[:min(3, len(got))], len(want), want[:min(3, len(want))])
		}
		// The page holds assets seen in each way: owned, granted, no owner.
		ways := map[string]bool{}
		for _, r := range got {
			switch k, _ := strconv.ParseInt(r[24:36], 16, 64); {
			case k%1000 == 1:
				ways["no owner"] = true
			case k%200 == 0:
				ways["owned"] = true
			default:
				ways["granted"] = true
			}
		}
		if len(ways) != 3 {
			t.Errorf("%s: the page's assets are seen in %d ways, want 3 (owned, granted, no owner): %v", c.name, len(ways), got)
		}
	}
}

// A bound caller's rows of one asset are a probe of the organization's
// rows, not a walk of every asset it sees.
func TestBoundComplianceOfOneAssetProbes(t *testing.T) {
	ctx := t.Context()
	cfg := store.Config{URL: testkit.PostgresURL(t), Schema: testkit.NewDatabaseSchema(t), MaxConns: 4, StartupWait: time.Second}
	pool, err := store.OpenAndMigrateSets(ctx, cfg, nil, store.Migrations(Spec().Migrations)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, q := range strings.Split(planSeed, ";") {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var org string
	if err := pool.QueryRow(ctx, `SELECT md5('org0')::uuid::text`).Scan(&org); err != nil {
		t.Fatal(err)
	}
	for asset, want := range map[string]int{
		"00000000-0000-7000-8000-0000000000c8": 4, // 200: organization 0's
		"00000000-0000-7000-8000-0000000000c3": 4, // 195: granted to it
		"00000000-0000-7000-8000-0000000003e9": 4, // 1001: no owner
		"00000000-0000-7000-8000-0000000000c9": 0, // 201: another's
	} {
		id := uuid.MustParse(asset)
		sql, args := compliance.PageSQL(compliance.Filter{AssetID: &id}, org, model.Today(), nil, model.Page{Limit: model.DefaultLimit})
		plan := testkit.Explain(t, pool, sql, args...)
		if !regexp.MustCompile(`Index Cond: \(\(organization_id = [^)]*\) AND \(asset_id = `).MatchString(plan) {
			t.Errorf("asset %s: the bound rows of one asset do not probe the organization's rows by asset:\n%s", asset, plan)
		}
		if got := pageRows(t, pool, sql, args); len(got) != want {
			t.Errorf("asset %s: %d rows %v, want %d", asset, len(got), got, want)
		}
	}
}

// pageRows runs a page query and returns its rows as asset/type, in
// the page's order.
func pageRows(t *testing.T, db *store.Pool, sql string, args []any) []string {
	t.Helper()
	rows, err := db.Query(t.Context(), `SELECT p.asset_id::text || '/' || p.action_type FROM (`+sql+`) p
		ORDER BY p.asset_id, p.action_type COLLATE "C"`, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
