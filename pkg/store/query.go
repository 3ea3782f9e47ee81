package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Records is rows as one JSON array, the argument of a statement that
// reads its keys with jsonb_to_recordset($n::jsonb) rather than unnest of
// arrays. For unnest PostgreSQL counts the elements of each call's own
// arrays, so a custom plan for a write's one key always looked cheaper
// than the cached generic plan (which guesses a hundred) and the statement
// was planned again on every call; jsonb_to_recordset's guess is the same
// in both plans, so a connection keeps the generic plan after its first
// few calls. The rows' fields must be of types that always encode (UUIDs,
// strings, numbers).
func Records[T any](rows []T) []byte {
	raw, _ := json.Marshal(rows) // their fields always encode
	return raw
}

// Querier is a pool or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Filter builds a WHERE clause from optional conditions, numbering the
// placeholders, so list queries stay plain SQL without string juggling in
// every store.
type Filter struct {
	conds []string
	args  []any
}

// Where adds a condition; each "?" in cond is one of args, in order.
func (f *Filter) Where(cond string, args ...any) {
	for _, a := range args {
		f.args = append(f.args, a)
		cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(f.args)), 1)
	}
	f.conds = append(f.conds, cond)
}

// Arg adds a value that no condition of the filter names, and returns its
// placeholder: for a query built around the filter that names the value
// in places of its own (several, as a union's parts may).
func (f *Filter) Arg(value any) string {
	f.args = append(f.args, value)
	return fmt.Sprintf("$%d", len(f.args))
}

// Equal adds "column = value" when value is not nil.
func Equal[T any](f *Filter, column string, value *T) {
	if value != nil {
		f.Where(column+" = ?", *value)
	}
}

// SQL returns " WHERE ..." or "".
func (f *Filter) SQL() string {
	if len(f.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.conds, " AND ")
}

// Args returns the placeholder values.
func (f *Filter) Args() []any { return f.args }

// List runs "selectSQL + filter" as one keyset page in id order: one row
// more than asked tells whether a next page exists. The page also stops
// early, before the row that would take what it holds past
// model.MaxPageBytes (the rows' size as PostgreSQL sends them), but never
// before its first row; its Next then continues right after its last row.
// Rows are decoded as they arrive, so a list of large rows never holds
// more than that.
func List[T any](ctx context.Context, q Querier, op, selectSQL string, f Filter, page model.Page, id func(T) uuid.UUID) (model.Paged[T], error) {
	if page.After != uuid.Nil {
		f.Where("id > ?", page.After)
	}
	sql := fmt.Sprintf("%s%s ORDER BY id LIMIT %d", selectSQL, f.SQL(), page.Limit+1)
	rows, err := q.Query(ctx, sql, f.Args()...)
	if err != nil {
		return model.Paged[T]{}, Classify(err, op)
	}
	defer rows.Close()
	// Each row is scanned into its place in items, made once for the page.
	items := make([]T, 0, max(page.Limit, 0)+1)
	var scan structRows[T]
	size, full := 0, false
	for rows.Next() {
		n := rowBytes(rows.RawValues())
		if len(items) > 0 && size+n > model.MaxPageBytes {
			full = true
			break
		}
		items = append(items, *new(T))
		if err := scan.scanInto(rows, &items[len(items)-1]); err != nil {
			return model.Paged[T]{}, Classify(err, op)
		}
		size += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return model.Paged[T]{}, Classify(err, op)
	}
	if full {
		return model.Paged[T]{Items: items, Next: id(items[len(items)-1])}, nil
	}
	return model.TrimPage(items, page, id), nil
}

// rowBytes is the size of a row as PostgreSQL sent it.
func rowBytes(values [][]byte) int {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	return n
}

// One reads exactly one row into T; no row is apperr "not found" for
// resource id.
func One[T any](ctx context.Context, q Querier, op, resource string, id uuid.UUID, sql string, args ...any) (T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		var zero T
		return zero, Classify(err, op)
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	if errors.Is(err, pgx.ErrNoRows) {
		return v, apperr.NotFound(resource, id.String())
	}
	return v, Classify(err, op)
}

// Many reads every row into T.
func Many[T any](ctx context.Context, q Querier, op, sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, Classify(err, op)
	}
	defer rows.Close()
	var scan structRows[T]
	v := []T{}
	for rows.Next() {
		v = append(v, *new(T))
		if err := scan.scanInto(rows, &v[len(v)-1]); err != nil {
			return nil, Classify(err, op)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, Classify(err, op)
	}
	return v, nil
}

var (
	_ Querier = (*pgxpool.Pool)(nil)
	_ Querier = pgx.Tx(nil)
)
