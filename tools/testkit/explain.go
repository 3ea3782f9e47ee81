package testkit

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Querier is what Explain asks: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Explain returns PostgreSQL's plan of sql (EXPLAIN, not run), one line
// of it a line: for a test that a query is answered by an index.
func Explain(t testing.TB, q Querier, sql string, args ...any) string {
	t.Helper()
	rows, err := q.Query(t.Context(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
