package actions

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// A filled actions table becomes a partitioned one without losing a row:
// the old table becomes the first partition, its indexes are adopted
// (valid, used by the lists and the compliance recompute), the sync keys
// move to action_source_keys (one per held pair, a duplicate kept as it
// was), the action documents' foreign key follows the partitioned table
// (the source keys' is dropped by migration 015, a trigger deletes them
// with their action), and the task makes the partitions ahead.
func TestMigrationPartitionsFilledActions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const n = 3000
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = store.NewID()
	}
	var pairs int
	pool := migrateAcross(t, "005", func(old *store.Pool) {
		// Every third action has a source pair of its own; one legacy pair is
		// held twice (the second marked a duplicate by migration 003).
		if _, err := old.Exec(ctx, `INSERT INTO actions (id, asset_id, action_type, performed_at, status_finalized, source_system, source_reference,
			source_duplicate, created_by, updated_by)
		SELECT id, ('00000000-0000-7000-8000-' || lpad(to_hex(k % 300), 12, '0'))::uuid, 'repair', date '2024-01-01' + (k % 400)::int, k % 2 = 0,
			CASE WHEN k % 3 = 0 OR k <= 2 THEN 'erp' END, CASE WHEN k <= 2 THEN 'legacy' WHEN k % 3 = 0 THEN 'ref-' || k END,
			k = 2, 'x', 'x'
		FROM unnest($1::uuid[]) WITH ORDINALITY AS t(id, k)`, ids); err != nil {
			t.Fatal(err)
		}
		if _, err := old.Exec(ctx, `INSERT INTO action_documents (id, action_id, document_id, source_system, source_reference, created_by, updated_by)
		SELECT gen_random_uuid(), id, gen_random_uuid(), 'dms', 'doc', 'x', 'x' FROM unnest($1::uuid[]) AS t(id) LIMIT 500`, ids); err != nil {
			t.Fatal(err)
		}
		if err := old.QueryRow(ctx, `SELECT count(*) FROM actions WHERE source_system IS NOT NULL AND source_reference IS NOT NULL AND NOT source_duplicate`).
			Scan(&pairs); err != nil {
			t.Fatal(err)
		}
	})
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for table, want := range map[string]int{"actions": n, "actions_0": n, "action_documents": 500, "action_source_keys": pairs} {
		var rows int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&rows); err != nil || rows != want {
			t.Errorf("%s: %d rows after the migration (%v), want %d", table, rows, err, want)
		}
	}
	list, err := actionPartitions.List(ctx, conn.Conn())
	if err != nil || len(list) < 2 || list[0].Name != "actions_0" {
		t.Fatalf("actions' partitions: %v (%v), want actions_0 (the old table) first and one more", list, err)
	}
	if made, ahead, err := actionPartitions.MakeAhead(ctx, conn.Conn()); err != nil || ahead != 3 || made < 1 {
		t.Errorf("MakeAhead made %d, %d ahead (%v); want some made and 3 ahead", made, ahead, err)
	}
	var invalid int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid`).Scan(&invalid); err != nil || invalid != 0 {
		t.Errorf("%d invalid indexes after the migration (%v)", invalid, err)
	}
	rows, err := conn.Query(ctx, `SELECT conname, confrelid::regclass::text, convalidated FROM pg_constraint
		WHERE contype = 'f' AND conparentid = 0 AND conrelid IN ('action_documents'::regclass, 'action_source_keys'::regclass)`)
	if err != nil {
		t.Fatal(err)
	}
	var name, target string
	var valid bool
	fks := 0
	if _, err := pgx.ForEachRow(rows, []any{&name, &target, &valid}, func() error {
		fks++
		if target != "actions" || !valid {
			t.Errorf("foreign key %s references %s (validated %v), want the partitioned actions, validated", name, target, valid)
		}
		return nil
	}); err != nil || fks != 1 {
		t.Errorf("%d foreign keys to actions (%v), want 1: action documents'", fks, err)
	}
	var claimed uuid.UUID
	if err := conn.QueryRow(ctx, `SELECT action_id FROM action_source_keys WHERE source_reference = 'ref-3'`).Scan(&claimed); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := conn.QueryRow(ctx, `WITH gone AS (DELETE FROM actions WHERE id = $1 RETURNING id)
		SELECT (SELECT count(*) FROM gone)`, claimed).Scan(&left); err != nil || left != 1 {
		t.Fatalf("deleting the action holding ref-3: %d deleted (%v)", left, err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM action_source_keys WHERE action_id = $1`, claimed).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d claims of a deleted action left (%v), want none", left, err)
	}
	// The hot reads still use indexes: a page of the list, one asset's
	// actions, the compliance recompute of a pair, a find by source.
	for _, q := range []string{
		`SELECT id FROM actions WHERE id > '0190b2a4-7c3e-7000-8000-000000000001' ORDER BY id LIMIT 100`,
		`SELECT id FROM actions WHERE asset_id = '00000000-0000-7000-8000-000000000007' ORDER BY id LIMIT 100`,
		strings.ReplaceAll(strings.ReplaceAll(compliance.LatestOfPairSQL, "$1", "'00000000-0000-7000-8000-000000000007'"), "$2", "'repair'"),
		`SELECT action_id FROM action_source_keys WHERE source_system = 'erp' AND source_reference = 'ref-3'`,
	} {
		if plan := testkit.Explain(t, conn, q); strings.Contains(plan, "Seq Scan") {
			t.Errorf("the plan of %s reads a table whole:\n%s", q, plan)
		}
	}
	// A document of an action in a partition made later is linked (the
	// key follows the partitioned table, not the first partition).
	later := store.NewID()
	if _, err := conn.Exec(ctx, `INSERT INTO actions (id, asset_id, action_type, performed_at, created_by, updated_by)
		VALUES ($1, gen_random_uuid(), 'repair', '2024-01-01', 'x', 'x')`, leader.UUIDv7Bound(list[1].From)[:24]+later.String()[24:]); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO action_documents (id, action_id, document_id, source_system, source_reference, created_by, updated_by)
		VALUES (gen_random_uuid(), $1, gen_random_uuid(), 'dms', 'doc', 'x', 'x')`, leader.UUIDv7Bound(list[1].From)[:24]+later.String()[24:]); err != nil {
		t.Errorf("a document of an action in the second partition: %v", err)
	}
	// A write past the last partition is refused, not stored elsewhere.
	const msPerDay = 24 * 60 * 60 * 1000 // partition bounds are in milliseconds
	last := list[len(list)-1]
	_, err = conn.Exec(ctx, `INSERT INTO actions (id, asset_id, action_type, performed_at, created_by, updated_by)
		VALUES ($1, gen_random_uuid(), 'repair', '2024-01-01', 'x', 'x')`, leader.UUIDv7Bound(last.To+400*msPerDay))
	if !leader.IsPastLastPartition(err) {
		t.Errorf("an action past the last partition: %v, want it refused", err)
	}
}

// migrateAcross is servicetest.MigrateAcross with the kit's migrations
// (the outbox, which migration 006 names) beside the service's: it
// migrates a fresh schema up to the migration before version, lets fill
// write what an earlier release left there, then migrates the rest of the
// way and returns the pool, which closes when the test ends.
func migrateAcross(t *testing.T, version string, fill func(old *store.Pool)) *store.Pool {
	t.Helper()
	cfg := store.Config{URL: testkit.PostgresURL(t), Schema: testkit.NewDatabaseSchema(t), MaxConns: 4, StartupWait: time.Second}
	old, err := store.OpenAndMigrateSets(t.Context(), cfg, nil, store.Migrations(servicetest.MigrationsBefore(t, Spec(), version))...)
	if err != nil {
		t.Fatal(err)
	}
	fill(old)
	old.Close()
	pool, err := store.OpenAndMigrateSets(t.Context(), cfg, nil, store.Migrations(Spec().Migrations)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
