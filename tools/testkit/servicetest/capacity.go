package servicetest

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/testkit"
)

// The helpers of the capacity model's tests (`make capacity`,
// docs/capacity.md), shared by every service that seeds its tables there:
// figures, not assertions, so a step fails the test only when it errs.

// CapacityRows is CAPACITY_ROWS (default 1,000,000): how many rows a
// capacity test seeds.
func CapacityRows(t *testing.T) int {
	n := 1_000_000
	if v := os.Getenv("CAPACITY_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			t.Fatalf("CAPACITY_ROWS=%q: a number of rows, at least 1000", v)
		}
	}
	return n
}

// StartCapacity starts spec's service for a capacity test and returns it,
// a connection for the seeding (SeedConn) and how many rows to seed
// (CapacityRows).
func StartCapacity(t *testing.T, spec servicekit.Spec) (s *Service, conn *pgxpool.Conn, rows int) {
	t.Helper()
	rows = CapacityRows(t)
	s = Start(t, spec)
	return s, s.SeedConn(t), rows
}

// SeedConn is a connection of s's pool whose statements have no timeout,
// for the seeding and the timed steps that outlast a request's; when the
// test ends it gets the pool's own setting back and is released.
func (s *Service) SeedConn(t *testing.T) *pgxpool.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := s.Built.Store.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(ctx, `SET statement_timeout = 0`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(ctx, `RESET statement_timeout`) }) //nolint:errcheck // the pool's own setting
	return conn
}

// Timed runs fn once, fails the test if it errs, logs and returns how
// long it took.
func Timed(t *testing.T, what string, fn func() error) time.Duration {
	t.Helper()
	start := time.Now()
	if err := fn(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	took := time.Since(start)
	t.Logf("%-60s %10s", what, took.Round(time.Millisecond))
	return took
}

// Median runs fn n times and logs the middle and the slowest run.
func Median(t *testing.T, what string, n int, fn func()) {
	t.Helper()
	took := make([]time.Duration, n)
	for i := range took {
		start := time.Now()
		fn()
		took[i] = time.Since(start)
	}
	slices.Sort(took)
	t.Logf("%-60s %10s (median of %d, slowest %s)", what, took[n/2].Round(100*time.Microsecond), n, took[n-1].Round(100*time.Microsecond))
}

// MedianRead checks the answer of GET path against the document once, then
// times it n times (Median) with a client that does not check: the check
// is the test's, not a client's, and on a page of 100 actions it cost the
// test ten times what the service spent answering (a CPU profile of
// TestCapacityActions: 9.5 ms a first page, about 1 ms of it the
// service's).
func (s *Service) MedianRead(what string, n int, path string) {
	s.t.Helper()
	s.Call(http.StatusOK, "GET", path, s.RO, nil)
	unchecked := testkit.Client{BaseURL: s.Client.BaseURL, HTTP: &http.Client{}}
	Median(s.t, what, n, func() { testkit.Expect(s.t, unchecked.Do(s.t, "GET", path, s.RO, nil), http.StatusOK) })
}

// LogSizes logs the rows of each table and what they take on disk per
// million rows: the heap, and the indexes and TOAST besides. A
// partitioned table counts with all its partitions.
func LogSizes(t *testing.T, conn *pgxpool.Conn, tables ...string) {
	t.Helper()
	for _, table := range tables {
		var rows, heap, total int64
		// pg_partition_tree has no rows for a table that is not
		// partitioned: the table itself is added (UNION: once).
		if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM `+table+`),
			sum(pg_relation_size(relid)), sum(pg_total_relation_size(relid))
			FROM (SELECT relid FROM pg_partition_tree($1) UNION SELECT $1::regclass) tables`, table).
			Scan(&rows, &heap, &total); err != nil {
			t.Fatalf("size of %s: %v", table, err)
		}
		// Bytes per row are megabytes per million rows.
		t.Logf("%-60s %10d rows, %6.0f MB per million rows (heap %4.0f MB, indexes and TOAST %4.0f MB)", "size of "+table, rows,
			float64(total)/float64(rows), float64(heap)/float64(rows), float64(total-heap)/float64(rows))
	}
}
