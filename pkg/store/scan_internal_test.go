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
// address, included), so that the rows after it are scanned through
// them; a target outside the row sends every row back to pgx.
func TestFieldsOfFindsEachTarget(t *testing.T) {
	t.Parallel()
	var r scannedRow
	var elsewhere string
	for _, c := range []struct {
		name string
		dest []any
		want bool
	}{
		{"in pgx's column order", []any{&r.By, &r.ID, &r.At, &r.Name}, true},
		{"a target outside the row", []any{&r.ID, &elsewhere}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fieldsOf(reflect.ValueOf(&r).Elem(), c.dest); got != c.want {
				t.Errorf("fieldsOf = %v, want %v", got, c.want)
			}
		})
	}
}
