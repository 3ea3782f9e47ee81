//go:build capacity

package actions

import (
	"context"
	"fmt"
	"testing"

	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// The actions side of the capacity model (`make capacity`,
// docs/capacity.md): CAPACITY_ROWS actions over a tenth as many assets
// (known to the compliance model), seeded in SQL, then the bytes per
// million rows of each table, the compliance rebuild, an index built
// CONCURRENTLY, and the reads (the first and a deep page of actions, a
// page of /compliance), each timed. Figures, not assertions.

func TestCapacityActions(t *testing.T) {
	s, conn, n := servicetest.StartCapacity(t, Spec())
	ctx := context.Background()
	assets := n / 10
	const assetType = "0190b2a4-7c3e-7000-8000-000000000001"
	asset := func(expr string) string {
		return `('00000000-0000-7000-8000-' || lpad(to_hex(` + expr + `), 12, '0'))::uuid`
	}
	servicetest.Timed(t, fmt.Sprintf("seed %d assets in the compliance model", assets), func() error {
		_, err := conn.Exec(ctx, `INSERT INTO known_assets (asset_id, asset_type_id, event_id)
			SELECT `+asset("g")+`, $2, '00000000-0000-7000-8000-000000000000' FROM generate_series(1, $1) g`, assets, assetType)
		return err
	})
	servicetest.Timed(t, fmt.Sprintf("seed %d actions (10 per asset, 3 types)", n), func() error {
		_, err := conn.Exec(ctx, `INSERT INTO actions (id, asset_id, action_type, performed_at, reference, status, status_ok, status_use_ok,
				status_finalized, status_valid_through, source_system, source_reference, data, created_by, updated_by)
			SELECT (lpad(to_hex(1700000000000 + g), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 3)
					|| lpad(to_hex(g), 12, '0'))::uuid, `+asset("1 + g % $1")+`, ($3::text[])[1 + (g % 3)], date '2016-01-01' + (g % 3650),
				'EK-' || g, 'approved', g % 20 <> 7, g % 20 <> 7, g % 10 <> 9, date '2026-01-01' + (g % 1500),
				'capacity-app', 'ref-' || g, json_build_object('brakes', 'ok', 'load', 1.5, 'note', 'capacity seed ' || g)::jsonb, 'capacity', 'capacity'
			FROM generate_series(1, $2) g`, assets, n, ActionTypes[:3])
		if err == nil {
			_, err = conn.Exec(ctx, `ANALYZE actions; ANALYZE known_assets`)
		}
		return err
	})
	st := compliance.NewStore(s.Built.Store)
	servicetest.Timed(t, "the compliance rebuild of latest actions (500 assets a batch)", func() error {
		_, err := st.RebuildLatest(ctx)
		if err == nil {
			_, err = conn.Exec(ctx, `ANALYZE latest_actions`)
		}
		return err
	})
	servicetest.LogSizes(t, conn, "actions", "action_source_keys", "known_assets", "latest_actions")
	s.RO = s.Issuer.ReadOnly(t) // the seed outlasts the token of the start (5 min)
	s.MedianRead("GET /actions?limit=100 (the first page)", 21, "/actions?limit=100")
	s.MedianRead("GET /actions?asset_id=…&limit=100 (one asset's actions)", 21,
		"/actions?limit=100&asset_id=00000000-0000-7000-8000-"+fmt.Sprintf("%012x", assets/2))
	s.MedianRead("GET /compliance?action_type=…&limit=100 (the first page)", 21, "/compliance?limit=100&action_type="+ActionTypes[0])
	s.MedianRead("GET /compliance?asset_id=… (one asset)", 21, "/compliance?asset_id=00000000-0000-7000-8000-"+fmt.Sprintf("%012x", assets/2))
	// The plan of the first page of every action, the slowest read at
	// ten million (docs/capacity.md): the run's own evidence of why.
	plan, err := conn.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) SELECT `+actionColumns+` FROM actions a ORDER BY id LIMIT 101`)
	if err != nil {
		t.Fatal(err)
	}
	for plan.Next() {
		var line string
		if err := plan.Scan(&line); err != nil {
			t.Fatal(err)
		}
		t.Logf("    %s", line)
	}
	plan.Close()
	servicetest.Timed(t, "an index built CONCURRENTLY on actions (performed_at, id), partition by partition", func() error {
		return actionPartitions.BuildIndex(ctx, conn.Conn(), "capacity_probe", "(performed_at, id)")
	})
}
