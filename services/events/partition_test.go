package events

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/webhooks"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// partitionNames are the names of the table's partitions, lowest first.
func partitionNames(t *testing.T, conn *pgx.Conn, parts leader.Partitions) []string {
	t.Helper()
	list, err := parts.List(t.Context(), conn)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(list))
	for i, p := range list {
		names[i] = p.Name
	}
	return names
}

func acquire(t *testing.T, s *servicetest.Service) *pgx.Conn {
	t.Helper()
	conn, err := s.Built.Store.Pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	return conn.Conn()
}

// The feed's partitions are made ahead of the newest event; an event past
// the last one is refused (nothing stored, the consumer tries again) until
// the task makes its partition; and the histories' prune drops whole a
// partition past retention that keeps no subject's latest event, keeping
// the one that does.
func TestFeedPartitionsMadeAheadAndDroppedPastRetention(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	st := newTestStore(s)
	conn := acquire(t, s)
	// The service's own maintenance makes the partitions ahead when it
	// first leads, and then not for ten minutes: moving the sequence
	// before that pass would race it (both making the same partition).
	passed := map[string]string{"schema": s.Built.Store.Pool.Config().ConnConfig.RuntimeParams["search_path"],
		"task": feed.Partitions().Task(0).Name}
	testkit.Eventually(t, "the service's first pass over the feed's partitions", 30*time.Second, func() bool {
		_, ok := testkit.Metric(t, "registry_maintenance_last_duration_seconds", passed)
		return ok
	})
	// Partitions of ten seqs, after those the migration made.
	parts := leader.Partitions{Table: "events", Key: leader.SeqKey{Sequence: "events_seq", Width: 10}, Ahead: 2}
	list, err := parts.List(t.Context(), conn)
	if err != nil || len(list) != 3 || list[0].Name != "events_0" {
		t.Fatalf("partitions after the migration: %v (%v), want events_0 and two ahead", list, err)
	}
	start := list[len(list)-1].To
	if _, err := conn.Exec(t.Context(), `SELECT setval('events_seq', $1)`, start-1); err != nil {
		t.Fatal(err)
	}
	made, ahead, err := parts.MakeAhead(t.Context(), conn)
	if err != nil || made != 2 || ahead != 2 {
		t.Fatalf("MakeAhead made %d, %d ahead (%v); want 2 and 2", made, ahead, err)
	}
	if made, ahead, err := parts.MakeAhead(t.Context(), conn); err != nil || made != 0 || ahead != 2 {
		t.Fatalf("MakeAhead again made %d, %d ahead (%v); want none made, 2 ahead", made, ahead, err)
	}

	subjects := make([]string, 10)
	var created, updated []outbox.Event
	for i := range subjects {
		subjects[i] = uuid.NewString()
		created = append(created, event("organization", "created", subjects[i]))
		updated = append(updated, event("organization", "updated", subjects[i]))
	}
	publish(t, s, created...) // seqs start .. start+9: the first new partition
	publish(t, s, updated...) // the second

	// Past the last partition: refused, nothing stored.
	late := event("organization", "updated", subjects[0])
	if _, err := st.StoreEvents(t.Context(), incoming(t, late)); !leader.IsPastLastPartition(err) {
		t.Fatalf("an event past the last partition: %v, want it refused for want of a partition", err)
	}
	var stored int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE seq >= $1`, start).Scan(&stored); err != nil || stored != 20 {
		t.Fatalf("%d events stored from the first new partition (%v), want 20", stored, err)
	}
	// The refused insert took a number (a sequence never gives one back),
	// so the partition it needed is made too, and two beyond it.
	if made, ahead, err := parts.MakeAhead(t.Context(), conn); err != nil || made != 3 || ahead != 2 {
		t.Fatalf("MakeAhead after the table filled made %d, %d ahead (%v); want 3 and 2", made, ahead, err)
	}
	publish(t, s, late)

	// Retention: every event but the latest of each subject (the second
	// partition's, and the late one) is past it.
	if _, err := st.Prune(t.Context(), 0, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	names := partitionNames(t, conn, parts)
	first, second := "events_"+itoa(start), "events_"+itoa(start+10)
	for _, gone := range []string{"events_0", first} {
		if slices.Contains(names, gone) {
			t.Errorf("partition %s kept after the prune: %v", gone, names)
		}
	}
	if len(names) == 0 || names[0] != second {
		t.Errorf("partitions after the prune: %v, want %s (each subject's latest) first", names, second)
	}
	// An index added later is built partition by partition and is whole.
	if err := parts.BuildIndex(t.Context(), conn, "events_by_stored_type", "(stored_at, type)"); err != nil {
		t.Fatal(err)
	}
	if err := parts.BuildIndex(t.Context(), conn, "events_by_stored_type", "(stored_at, type)"); err != nil {
		t.Fatalf("BuildIndex again: %v", err)
	}
	var valid bool
	if err := conn.QueryRow(t.Context(), `SELECT indisvalid FROM pg_index WHERE indexrelid = 'events_by_stored_type'::regclass`).Scan(&valid); err != nil || !valid {
		t.Errorf("the index built partition by partition: valid %v (%v), want valid", valid, err)
	}
	var left int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM events`).Scan(&left); err != nil || left != 10 {
		t.Errorf("%d events left (%v), want 10: each subject's latest (the first subject's is the late one)", left, err)
	}
	for _, id := range subjects[:2] {
		if h := s.Call(200, "GET", "/organizations/"+id+"/history", s.RO, nil).List(); len(h) == 0 || h[len(h)-1]["type"] != "organization.updated" {
			t.Errorf("history of %s after the drop: %v", id, h)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// v7At is a UUIDv7 made at t.
func v7At(t time.Time) uuid.UUID {
	id := store.NewID()
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(id[:6], ms[2:])
	return id
}

// Deliveries are dropped a week's partition at a time once the week is
// past retention and every delivery in it is settled and past retention;
// a partition holding a pending delivery, or one settled within retention
// (a manual retry), is kept.
func TestDeliveryPartitionsDroppedPastRetention(t *testing.T) {
	// The test makes, drops and purges the deliveries' partitions itself,
	// at the times it chooses; the service's own maintenance would make
	// and drop them beside it.
	cfg := DefaultConfig()
	cfg.DeliveryRetention = 0
	s := servicetest.StartParallel(t, leaveOut(cfg, "partitions of deliveries"))
	hooks := webhooks.NewStore(s.Built.Store)
	conn := acquire(t, s)
	ctx := t.Context()
	hook := uuid.New()
	if _, err := conn.Exec(ctx, `INSERT INTO webhooks (id, url, types, secret, created_at, created_by, updated_at, updated_by)
		VALUES ($1, 'https://example.com/hook', '{}', 'whsec_x', now(), 'test', now(), 'test')`, hook); err != nil {
		t.Fatal(err)
	}
	// The weeks before now get partitions of their own, as they would
	// have, had the table been partitioned from the start.
	week := webhooks.Partitions().Key.(leader.TimeKey).Span
	list, err := webhooks.Partitions().List(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if err := webhooks.Partitions().Drop(ctx, conn, list[0]); err != nil { // the converted table, empty here
		t.Fatal(err)
	}
	thisWeek := time.UnixMilli(time.Now().UnixMilli() / week.Milliseconds() * week.Milliseconds())
	for w := 1; w <= 4; w++ {
		from := thisWeek.Add(-time.Duration(w) * week)
		if _, err := conn.Exec(ctx, `CREATE TABLE `+pgx.Identifier{"deliveries_w" + itoa(int64(w))}.Sanitize()+
			` PARTITION OF deliveries FOR VALUES FROM ('`+leader.UUIDv7Bound(from.UnixMilli())+`') TO ('`+
			leader.UUIDv7Bound(from.Add(week).UnixMilli())+`')`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE deliveries_now PARTITION OF deliveries FOR VALUES FROM ('`+
		leader.UUIDv7Bound(thisWeek.UnixMilli())+`') TO ('`+leader.UUIDv7Bound(thisWeek.Add(week).UnixMilli())+`')`); err != nil {
		t.Fatal(err)
	}
	insert := func(weeksAgo int, status string, updated time.Time) {
		t.Helper()
		id := v7At(thisWeek.Add(-time.Duration(weeksAgo)*week + time.Hour))
		if _, err := conn.Exec(ctx, `INSERT INTO deliveries (id, webhook_id, event_seq, event_id, subject, status, updated_at, created_at)
			VALUES ($1, $2, 1, gen_random_uuid(), 'asset:x', $3, $4, $4)`, id, hook, status, updated); err != nil {
			t.Fatal(err)
		}
	}
	old := thisWeek.Add(-3 * week)
	insert(4, webhooks.StatusSucceeded, old) // week 4: all settled long ago: dropped
	insert(4, webhooks.StatusFailed, old)
	insert(3, webhooks.StatusSucceeded, old) // week 3: one pending: kept
	insert(3, webhooks.StatusPending, old)
	insert(2, webhooks.StatusSucceeded, old) // week 2: one retried by hand an hour ago: kept
	insert(2, webhooks.StatusFailed, time.Now().Add(-time.Hour))
	insert(0, webhooks.StatusSucceeded, time.Now()) // this week
	if _, err := hooks.PurgeDeliveries(ctx, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	names := strings.Join(partitionNames(t, conn, webhooks.Partitions()), " ")
	if strings.Contains(names, "deliveries_w4") || strings.Contains(names, "deliveries_w1") {
		t.Errorf("partitions after the purge: %s; want weeks 4 and 1 (empty) dropped", names)
	}
	for _, kept := range []string{"deliveries_w3", "deliveries_w2", "deliveries_now"} {
		if !strings.Contains(names, kept) {
			t.Errorf("partitions after the purge: %s; want %s kept", names, kept)
		}
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM deliveries`).Scan(&left); err != nil || left != 3 {
		t.Errorf("%d deliveries left (%v), want 3: the pending one, the one retried and this week's (the other settled ones of kept weeks deleted a row at a time)", left, err)
	}
}

// An installation's filled feed and deliveries become partitioned tables
// without losing a row: the old tables become their first partitions,
// the indexes are adopted (valid, used), and the next partitions are made.
func TestMigrationPartitionsFilledTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 5000
	hook := store.NewID()
	pool := servicetest.MigrateAcross(t, Spec(), "007", func(pool *store.Pool) {
		if _, err := pool.Exec(ctx, `INSERT INTO events (seq, id, type, kind, subject_id, body, leaf, size)
			SELECT g, gen_random_uuid(), 'asset.updated', 'asset', 'subject-' || (g % 500), '{"data":{"asset_id":"a"}}', g - 1, 24
			FROM generate_series(1, $1) g`, n); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `SELECT setval('events_seq', $1)`, n); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO webhooks (id, url, types, secret, created_at, created_by, updated_at, updated_by)
			VALUES ($1, 'https://example.com/hook', '{}', 'whsec_x', now(), 'test', now(), 'test')`, hook); err != nil {
			t.Fatal(err)
		}
		ids := make([]uuid.UUID, n/10)
		for i := range ids {
			ids[i] = store.NewID()
		}
		if _, err := pool.Exec(ctx, `INSERT INTO deliveries (id, webhook_id, event_seq, event_id, subject)
			SELECT id, $1, n, gen_random_uuid(), 'asset:' || n FROM unnest($2::uuid[]) WITH ORDINALITY AS t(id, n)`, hook, ids); err != nil {
			t.Fatal(err)
		}
	})
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, c := range []struct {
		parts leader.Partitions
		rows  int
	}{{feed.Partitions(), n}, {webhooks.Partitions(), n / 10}} {
		var rows int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+c.parts.Table).Scan(&rows); err != nil || rows != c.rows {
			t.Errorf("%s: %d rows after the migration (%v), want %d", c.parts.Table, rows, err, c.rows)
		}
		names := partitionNames(t, conn.Conn(), c.parts)
		if len(names) < 2 || names[0] != c.parts.Table+"_0" {
			t.Errorf("%s's partitions: %v, want %s_0 (the old table) first and more ahead", c.parts.Table, names, c.parts.Table)
		}
		var first int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+c.parts.Table+`_0`).Scan(&first); err != nil || first != c.rows {
			t.Errorf("%s_0 holds %d rows (%v), want all %d", c.parts.Table, first, err, c.rows)
		}
	}
	var invalid int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid`).Scan(&invalid); err != nil || invalid != 0 {
		t.Errorf("%d invalid indexes after the migration (%v): a partitioned index lacks one of a partition", invalid, err)
	}
	// The next event is numbered after the old ones and lands in the
	// first partition; the sequence belongs to the partitioned table.
	var seq int64
	if err := conn.QueryRow(ctx, `INSERT INTO events (seq, id, type, kind, subject_id, body)
		VALUES (nextval('events_seq'), gen_random_uuid(), 'asset.updated', 'asset', 'subject-1', '{}') RETURNING seq`).Scan(&seq); err != nil || seq != n+1 {
		t.Errorf("the next event got seq %d (%v), want %d", seq, err, n+1)
	}
	var owner string
	if err := conn.QueryRow(ctx, `SELECT d.refobjid::regclass::text FROM pg_depend d
		WHERE d.objid = 'events_seq'::regclass AND d.deptype = 'a'`).Scan(&owner); err != nil || owner != "events" {
		t.Errorf("events_seq is owned by %q (%v), want the partitioned events", owner, err)
	}
	// The hot reads still use indexes: a history (the subject's index in
	// every partition), a page of the feed (the partitions in seq order,
	// no sort), an event by id (the log's lookups and the store's check
	// for an event stored before), a subscription's deliveries.
	for _, q := range []string{
		`SELECT seq FROM events WHERE kind = 'asset' AND subject_id = 'subject-7' ORDER BY seq LIMIT 50`,
		`SELECT seq, body FROM events WHERE seq > 2500 ORDER BY seq LIMIT 100`,
		`SELECT leaf FROM events WHERE id = '0190b2a4-7c3e-7000-8000-000000000001'`,
		`SELECT id FROM deliveries WHERE webhook_id = '` + hook.String() + `' AND id > '0190b2a4-7c3e-7000-8000-000000000001' ORDER BY id LIMIT 100`,
	} {
		if plan := testkit.Explain(t, conn.Conn(), q); strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Sort") {
			t.Errorf("the plan of %s reads a table whole or sorts:\n%s", q, plan)
		}
	}
}

// Two installations in one database (a schema each, as the bench and the
// test kit make them) migrate alike: the first partition's bound is found
// on each schema's own table, never on the other's.
func TestMigrationsBesideAnotherSchemasPartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for range 2 {
		cfg := store.Config{URL: testkit.PostgresURL(t), Schema: testkit.NewDatabaseSchema(t), MaxConns: 4, StartupWait: time.Second}
		pool, err := store.OpenAndMigrate(ctx, cfg, Spec().Migrations, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		for _, table := range []string{"events", "deliveries"} {
			var bounds int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conrelid = ($1 || '_0')::regclass AND conname = $1 || '_0_bound'`,
				table).Scan(&bounds); err != nil || bounds != 1 {
				t.Fatalf("%s: %s_0 has %d bound constraints (%v), want 1", cfg.Schema, table, bounds, err)
			}
		}
	}
}
