package store

import (
	"reflect"
	"testing"
	"time"
)

type scannedAudit struct {
	At time.Time
	By string
}

type scannedRow struct {
	ID   int
	Name *string
	scannedAudit
}

// The targets of pgx's scan of a first row are found among the row's
// fields (embedded ones and a time.Time's own fields, which share its
// address, included), so that the rows after it skip pgx's per-row
// lookup; a target outside the row sends every row back to pgx.
func TestFieldPathsFindEachTarget(t *testing.T) {
	t.Parallel()
	var r scannedRow
	var elsewhere string
	for _, c := range []struct {
		name  string
		dest  []any
		paths [][]int
	}{
		{"in pgx's column order", []any{&r.By, &r.ID, &r.At, &r.Name}, [][]int{{2, 1}, {0}, {2, 0}, {1}}},
		{"a target outside the row", []any{&r.ID, &elsewhere}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			paths, ok := fieldPaths(reflect.ValueOf(&r).Elem(), c.dest)
			if !reflect.DeepEqual(paths, c.paths) || ok != (c.paths != nil) {
				t.Errorf("paths = %v, %v; want %v", paths, ok, c.paths)
			}
		})
	}
}
