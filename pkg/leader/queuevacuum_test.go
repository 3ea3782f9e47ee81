package leader_test

import (
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/tools/testkit"
)

// A queue is vacuumed once its reader has taken After rows out, and not
// again within Every; PostgreSQL counts the vacuums of the table.
func TestQueueVacuumRunsAfterEnoughRowsAndNotTooOften(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := replica(t, testkit.NewDatabaseSchema(t), "queue", "")
	if _, err := pool.Exec(ctx, `CREATE TABLE queue (id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	q := &leader.QueueVacuum{Table: "queue", After: 100, Every: time.Hour}
	vacuumed := func() int {
		t.Helper()
		// A vacuum reports its count at once, from whichever session ran it.
		var n int
		if err := pool.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'queue'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, step := range []struct {
		name  string
		taken int
		want  int
	}{
		{"fewer than After taken", 60, 0},
		{"After reached", 40, 1},
		{"After again, within Every", 150, 1},
	} {
		if err := q.Took(ctx, pool, step.taken); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := vacuumed(); got != step.want {
			t.Errorf("%s: %d vacuums, want %d", step.name, got, step.want)
		}
	}
}
