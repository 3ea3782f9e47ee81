//go:build capacity

package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/webhooks"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// The events side of the capacity model (`make capacity`, docs/capacity.md):
// CAPACITY_ROWS events (10 per subject, stored over the last 60 days) and
// a tenth as many deliveries, seeded in PostgreSQL, then the bytes per
// million rows of each table, the maintenance tasks at that size (the
// feed's prune, the histories' prune, the deliveries' purge) and the
// reads (a feed page at the horizon, a history), each timed. Figures, not
// assertions: the test fails only when a step fails.

func TestCapacityEvents(t *testing.T) {
	s, conn, n := servicetest.StartCapacity(t, Spec())
	ctx := context.Background()
	t.Logf("seeding %d events, %d deliveries", n, n/10)
	// The feed's partitions: six over the 60 days (the service's are 10
	// million seqs; at the default size that would be one), made after
	// those the migration made, as the maintenance task makes them.
	list, err := feed.Partitions().List(ctx, conn.Conn())
	if err != nil {
		t.Fatal(err)
	}
	start := list[len(list)-1].To
	if _, err := conn.Exec(ctx, `SELECT setval('events_seq', $1)`, start-1); err != nil {
		t.Fatal(err)
	}
	seeded := leader.Partitions{Table: "events", Key: leader.SeqKey{Sequence: "events_seq", Width: int64(n) / 6}, Ahead: 7}
	if _, _, err := seeded.MakeAhead(ctx, conn.Conn()); err != nil {
		t.Fatal(err)
	}
	// The deliveries' weeks over the 60 days, in place of the first
	// partition the migration made of the (empty) table.
	week := webhooks.Partitions().Key.(leader.TimeKey).Span.Milliseconds()
	if list, err = webhooks.Partitions().List(ctx, conn.Conn()); err != nil {
		t.Fatal(err)
	}
	if err := webhooks.Partitions().Drop(ctx, conn.Conn(), list[0]); err != nil {
		t.Fatal(err)
	}
	for w := time.Now().Add(-61*24*time.Hour).UnixMilli() / week * week; w < list[0].To; w += week {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE deliveries_seeded_%d PARTITION OF deliveries FOR VALUES FROM ('%s') TO ('%s')`,
			w, leader.UUIDv7Bound(w), leader.UUIDv7Bound(w+week))); err != nil {
			t.Fatal(err)
		}
	}
	servicetest.Timed(t, fmt.Sprintf("seed %d events (10 per subject, over 60 days)", n), func() error {
		_, err := conn.Exec(ctx, `INSERT INTO events (seq, id, type, kind, subject_id, stored_at, body, leaf)
			SELECT $2::bigint - 1 + g, gen_random_uuid(), CASE WHEN g % 10 = 1 THEN 'asset.created' ELSE 'asset.updated' END, 'asset', s.subject,
				now() - interval '60 days' + (g * (interval '60 days' / $1)),
				json_build_object('id', gen_random_uuid(), 'type', CASE WHEN g % 10 = 1 THEN 'asset.created' ELSE 'asset.updated' END,
					'time', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'actor', 'capacity-client', 'request_id', 'req-' || g,
					'subject', json_build_object('kind', 'asset', 'id', s.subject),
					'data', json_build_object('id', s.subject, 'name', 'Asset ' || g, 'asset_type_id', '0190b2a4-7c3e-7000-8000-000000000001',
						'serial_number', 'SN-' || g, 'location', 'Site ' || (g % 97)),
					'changes', json_build_object('name', json_build_array('Asset ' || (g - 1), 'Asset ' || g))),
				g - 1
			FROM generate_series(1, $1) g, LATERAL (SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g % ($1 / 10)), 12, '0')) AS subject) s`, n, start)
		if err == nil {
			_, err = conn.Exec(ctx, `SELECT setval('events_seq', $1)`, start-1+int64(n))
		}
		if err == nil {
			_, err = conn.Exec(ctx, `ANALYZE events`)
		}
		return err
	})
	servicetest.Timed(t, fmt.Sprintf("seed %d deliveries (settled, over 60 days)", n/10), func() error {
		if _, err := conn.Exec(ctx, `INSERT INTO webhooks (id, url, types, secret, created_at, created_by, updated_at, updated_by)
				VALUES ('0190b2a4-7c3e-7000-8000-00000000aaaa', 'https://example.com/hook', '{}', 'whsec_x', now(), 'capacity', now(), 'capacity')`); err != nil {
			return err
		}
		// Ids are UUIDv7 of the time each was queued (an hour before its
		// attempt), as the dispatcher makes them.
		_, err := conn.Exec(ctx, `INSERT INTO deliveries (id, webhook_id, event_seq, event_id, subject, status, attempts, last_status_code, updated_at, created_at, queued_at)
			SELECT (lpad(to_hex((extract(epoch FROM d.at - interval '1 hour') * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid,
				'0190b2a4-7c3e-7000-8000-00000000aaaa', g * 10, gen_random_uuid(), 'asset:' || g,
				'succeeded', 1, 200, d.at, d.at - interval '1 hour', d.at - interval '1 hour'
			FROM generate_series(1, $1 / 10) g, LATERAL (SELECT now() - interval '60 days' + (g * (interval '60 days' / ($1 / 10))) AS at) d`, n)
		if err == nil {
			_, err = conn.Exec(ctx, `ANALYZE deliveries`)
		}
		return err
	})
	servicetest.LogSizes(t, conn, "events", "deliveries")

	s.RO = s.Issuer.ReadOnly(t) // the seed outlasts the token of the start (5 min)
	st := newTestStore(s)
	hooks := webhooks.NewStore(s.Built.Store)
	subject := "00000000-0000-7000-8000-" + fmt.Sprintf("%012x", n/20)
	s.MedianRead("GET /assets/{id}/history (10 events)", 21, "/assets/"+subject+"/history")
	s.MedianRead("GET /events?limit=100 (the oldest page, before the prune)", 21, "/events?limit=100")
	servicetest.Timed(t, "prune the feed (30 days of 60 leave it)", func() error { _, err := st.Prune(ctx, 30*24*time.Hour, 0); return err })
	s.MedianRead("GET /events?limit=100 (the page at the horizon, half the table deep)", 21, "/events?limit=100")
	s.MedianRead("GET /events?after=now (the feed's end)", 21, "/events?after=now")
	servicetest.Timed(t, "purge deliveries (30 days of 60 leave: whole weeks dropped, the rest a thousand a step)", func() error { _, err := hooks.PurgeDeliveries(ctx, 30*24*time.Hour); return err })
	servicetest.Timed(t, "prune the histories (45 days: a quarter, but each subject's latest; partitions that keep none dropped whole)", func() error {
		_, err := st.Prune(ctx, 30*24*time.Hour, 45*24*time.Hour)
		return err
	})
	// PostgreSQL builds no index CONCURRENTLY on a partitioned table:
	// BuildIndex builds each partition's so and attaches it.
	servicetest.Timed(t, "an index built CONCURRENTLY on events (type, stored_at), partition by partition", func() error {
		return feed.Partitions().BuildIndex(ctx, conn.Conn(), "capacity_probe", "(type, stored_at)")
	})
}
