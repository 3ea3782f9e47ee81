package store_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
)

// stamps is embedded, as model.Audit is in the services' rows.
type stamps struct {
	CreatedAt time.Time `db:"created_at"`
}

// namedItem matches a column by its field's name (no db tag).
type namedItem struct {
	ID   uuid.UUID `db:"id"`
	Kind string
	Name *string `db:"name"`
	stamps
}

// rawItem holds bytes pgx may write into the target's own buffer.
type rawItem struct {
	item
	Raw json.RawMessage `db:"raw"`
}

// extraItem has a field no column fills.
type extraItem struct {
	item
	Missing string `db:"missing"`
}

// List and Many scan every row of a result set by pgx's rules
// (pgx.RowToStructByName), though they match the columns to the fields
// once per result set: the same values, a NULL after a value and a value
// after a NULL included, no row's bytes overwritten by the next's, and
// pgx's refusal of a struct that does not fit.
func TestListAndManyScanAsPGXDoes(t *testing.T) {
	t.Parallel()
	pool := migrated(t, open(t), migrations)
	for i := range 6 {
		var name *string
		if i%2 == 1 {
			name = new("name " + string(rune('a'+i)))
		}
		if _, err := pool.Exec(t.Context(), "INSERT INTO items (id, kind, name) VALUES ($1, $2, $3)",
			uuid.Must(uuid.NewV7()), []string{"a", "b", "c"}[i%3], name); err != nil {
			t.Fatal(err)
		}
	}
	const query = "SELECT id, kind, name, created_at FROM items"
	t.Run("item", func(t *testing.T) { sameAsPGX(t, pool, query, func(i item) uuid.UUID { return i.ID }) })
	t.Run("named and embedded fields", func(t *testing.T) {
		sameAsPGX(t, pool, query, func(i namedItem) uuid.UUID { return i.ID })
	})
	t.Run("bytes", func(t *testing.T) {
		sameAsPGX(t, pool, `SELECT id, kind, name, created_at, json_build_object('kind', kind, 'name', name) AS raw FROM items`,
			func(i rawItem) uuid.UUID { return i.ID })
	})
	t.Run("a field without its column", func(t *testing.T) {
		_, err := store.List(t.Context(), pool, "list", query, store.Filter{}, model.Page{Limit: 10}, func(i extraItem) uuid.UUID { return i.ID })
		if err == nil {
			t.Error("List scanned rows into a struct with a field no column fills")
		}
		if _, err := store.Many[extraItem](t.Context(), pool, "many", query+" ORDER BY id"); err == nil {
			t.Error("Many scanned rows into a struct with a field no column fills")
		}
	})
}

// sameAsPGX holds List's and Many's rows of query equal to pgx's own scan.
func sameAsPGX[T any](t *testing.T, pool *store.Pool, query string, id func(T) uuid.UUID) {
	t.Helper()
	rows, err := pool.Query(t.Context(), query+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	want, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		t.Fatal(err)
	}
	page, err := store.List(t.Context(), pool, "list", query, store.Filter{}, model.Page{Limit: 10}, id)
	if err != nil {
		t.Fatal(err)
	}
	many, err := store.Many[T](t.Context(), pool, "many", query+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]T{"List": page.Items, "Many": many} {
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, pgx %d", name, len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) { // follows the pointers' values
				t.Errorf("%s row %d = %+v, pgx %+v", name, i, got[i], want[i])
			}
		}
	}
}
