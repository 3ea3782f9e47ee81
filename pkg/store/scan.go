package store

import (
	"reflect"

	"github.com/jackc/pgx/v5"
)

// structRows scans the rows of one result set into T by column name, by
// pgx.RowToStructByName's rules (db tags, embedded structs, every column a
// field and every field a column), but matches the columns to T's fields
// once per result set instead of once per row. For every row pgx joins the
// column names into a key, looks the key up in a shared map and allocates
// the row's scan targets and its value: on a page of 100 rows that was a
// good part of the store's own CPU. Taking each field's address again by
// reflection for every row cost nearly as much (reflect looks the pointer
// type of a pointer field up in a shared map). Here the first row is
// pgx's own scan, into a value of its own that its targets point into;
// every row after it is scanned into that value through the same targets,
// copied out to the caller's element and the value zeroed, so that no row
// keeps what the one before it held.
type structRows[T any] struct {
	scratch *T    // the value the targets point into
	targets []any // one per column
	// byPGX is set when the first row's targets were not T's fields as
	// expected: every row is then pgx's own scan.
	byPGX bool
}

// scanInto scans the current row into *dst.
func (s *structRows[T]) scanInto(row pgx.CollectableRow, dst *T) error {
	if s.byPGX {
		v, err := pgx.RowToStructByName[T](row)
		*dst = v
		return err
	}
	if s.scratch == nil {
		return s.first(row, dst)
	}
	err := row.Scan(s.targets...)
	*dst, *s.scratch = *s.scratch, *new(T)
	return err
}

// first scans the first row with pgx and keeps the value its targets
// point into, when they all are fields of it.
func (s *structRows[T]) first(row pgx.CollectableRow, dst *T) error {
	rec := &recordedScan{CollectableRow: row}
	p, err := pgx.RowToAddrOfStructByName[T](rec)
	if err != nil {
		return err
	}
	*dst, *p = *p, *new(T)
	if !fieldsOf(reflect.ValueOf(p).Elem(), rec.dest) {
		s.byPGX = true
		return nil
	}
	s.scratch, s.targets = p, rec.dest
	return nil
}

// recordedScan keeps the targets pgx scanned a row into.
type recordedScan struct {
	pgx.CollectableRow
	dest []any
}

func (r *recordedScan) Scan(dest ...any) error {
	r.dest = dest
	return r.CollectableRow.Scan(dest...)
}

// fieldsOf reports whether each of dest points to a field of the struct
// v, by address and type: its own, an embedded struct's or a nested
// struct value's, never through a pointer (memory v does not hold, which
// every row would then share).
func fieldsOf(v reflect.Value, dest []any) bool {
	found := make([]bool, len(dest))
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Field(i)
			for j, d := range dest {
				target := reflect.ValueOf(d)
				if target.Kind() == reflect.Pointer && target.Pointer() == f.Addr().Pointer() && target.Type().Elem() == f.Type() {
					found[j] = true
				}
			}
			if f.Kind() == reflect.Struct {
				walk(f)
			}
		}
	}
	walk(v)
	for _, ok := range found {
		if !ok {
			return false
		}
	}
	return true
}
