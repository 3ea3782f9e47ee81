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
// good part of the store's own CPU. Here the first row is pgx's own scan,
// whose targets tell where each column lands; the rows after it are
// scanned into the caller's element straight from those paths, through
// one slice of targets.
type structRows[T any] struct {
	paths   [][]int // the field each column lands in, by index path
	targets []any
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
	if s.paths == nil {
		return s.first(row, dst)
	}
	v := reflect.ValueOf(dst).Elem()
	for i, path := range s.paths {
		s.targets[i] = v.FieldByIndex(path).Addr().Interface()
	}
	return row.Scan(s.targets...)
}

// first scans the first row with pgx and learns from its targets which
// field each column lands in.
func (s *structRows[T]) first(row pgx.CollectableRow, dst *T) error {
	rec := &recordedScan{CollectableRow: row}
	p, err := pgx.RowToAddrOfStructByName[T](rec)
	if err != nil {
		return err
	}
	*dst = *p
	paths, ok := fieldPaths(reflect.ValueOf(p).Elem(), rec.dest)
	if !ok {
		s.byPGX = true
		return nil
	}
	s.paths, s.targets = paths, make([]any, len(paths))
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

// fieldPaths finds, for each of dest (pointers into the struct v), the
// index path of the field it points to, by address and type; ok is false
// when one points to none.
func fieldPaths(v reflect.Value, dest []any) (paths [][]int, ok bool) {
	paths = make([][]int, len(dest))
	var walk func(v reflect.Value, path []int)
	walk = func(v reflect.Value, path []int) {
		for i := range v.NumField() {
			f := v.Field(i)
			at := append(path[:len(path):len(path)], i)
			for j, d := range dest {
				target := reflect.ValueOf(d)
				if paths[j] == nil && target.Kind() == reflect.Pointer &&
					target.Pointer() == f.Addr().Pointer() && target.Type().Elem() == f.Type() {
					paths[j] = at
				}
			}
			if f.Kind() == reflect.Struct {
				walk(f, at)
			}
		}
	}
	walk(v, nil)
	for _, p := range paths {
		if p == nil || !v.FieldByIndex(p).CanInterface() {
			return nil, false
		}
	}
	return paths, true
}
