package store_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assetregistry/registry/tools/testkit"
)

// poolMetric reads one pgxpool_* series of schema from the default registry,
// the one the metrics port serves.
func poolMetric(t *testing.T, name, schema string) float64 {
	t.Helper()
	v, ok := testkit.Metric(t, name, map[string]string{"schema": schema})
	if !ok {
		t.Fatalf("%s{schema=%q} is not exported", name, schema)
	}
	return v
}

func TestPoolStatsAreExported(t *testing.T) {
	t.Parallel()
	cfg := open(t)
	cfg.MaxConns = 2
	pool := migrated(t, cfg, migrations)
	acquiresBefore := poolMetric(t, "pgxpool_acquire_count_total", cfg.Schema)

	var held []*pgxpool.Conn
	for range 2 {
		c, err := pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	saturated := map[string]float64{
		"pgxpool_acquired_conns": 2,
		"pgxpool_max_conns":      2,
		"pgxpool_total_conns":    2,
		"pgxpool_idle_conns":     0,
	}
	for name, want := range saturated {
		if got := poolMetric(t, name, cfg.Schema); got != want {
			t.Errorf("with every connection held, %s = %v, want %v", name, got, want)
		}
	}
	if got := poolMetric(t, "pgxpool_acquire_count_total", cfg.Schema); got < acquiresBefore+2 {
		t.Errorf("acquire count went from %v to %v after two acquires", acquiresBefore, got)
	}

	for _, c := range held {
		c.Release()
	}
	if got := poolMetric(t, "pgxpool_acquired_conns", cfg.Schema); got != 0 {
		t.Errorf("after release, acquired = %v", got)
	}
	if got := poolMetric(t, "pgxpool_idle_conns", cfg.Schema); got != 2 {
		t.Errorf("after release, idle = %v", got)
	}
}
