package actions

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// A batch of actions costs a few statements whatever its size: a batch of
// 200 is not 200 inserts and 200 recomputes of compliance rows. Each item
// is finalized on an asset of its own, so every item has a compliance row
// to recompute, and each names a source pair to claim. The service's
// connections go through a proxy that counts the statements they send.
func TestBatchStatementsDoNotGrowWithItems(t *testing.T) {
	t.Parallel()
	var statements atomic.Int64
	w := worldOn(servicetest.Start(t, Spec(), func(c *servicekit.Config) {
		c.Database.URL = testkit.CountingStatements(t, c.Database.URL, &statements)
	}))
	made := 0
	batch := func(n int) int64 {
		items, assets := make([]any, n), make([]uuid.UUID, n)
		for i := range items {
			assets[i] = uuid.New()
			w.StandIn("assets").Add("asset", assets[i], nil)
			items[i] = w.action(map[string]any{"asset_id": assets[i].String(), "source_reference": fmt.Sprint("count-", made)})
			made++
		}
		before := statements.Load()
		results := w.Call(200, "POST", "/actions/batch", w.RW, map[string]any{"items": items}).List()
		sent := statements.Load() - before
		ids := make([]uuid.UUID, len(results))
		for i, r := range results {
			if r["status"] != float64(201) {
				t.Fatalf("item %d answered %v", i, r)
			}
			ids[i] = uuid.MustParse(r["id"].(string))
		}
		// Each item's pair has its row, naming the item: the recompute ran for all.
		var rows int
		if err := w.Built.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM latest_actions WHERE action_id = ANY($1)`,
			ids).Scan(&rows); err != nil || rows != n {
			t.Errorf("a batch of %d: %d compliance rows name its actions (%v)", n, rows, err)
		}
		return sent
	}
	batch(10) // the statements are prepared on the connection
	small, large := batch(10), batch(200)
	testkit.StatementsDoNotGrow(t, "actions", 10, 200, small, large, 10)
}
