package model_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
)

func TestCursorRoundTrip(t *testing.T) {
	id := uuid.Must(uuid.NewV7())
	c := model.EncodeCursor(id, "country=no")
	got, sub, err := model.DecodeCursor(c, "country=no")
	if err != nil || got != id || sub != 0 {
		t.Fatalf("got %v, %d, %v", got, sub, err)
	}
	at := model.EncodeCursorAt(id, 3, "country=no")
	if got, sub, err := model.DecodeCursor(at, "country=no"); err != nil || got != id || sub != 3 {
		t.Fatalf("with a second part: got %v, %d, %v", got, sub, err)
	}
	if model.EncodeCursorAt(id, 0, "country=no") != c {
		t.Error("a second part of 0 must give the plain cursor")
	}
	for _, bad := range []string{"", "abc", c + "x", c[:len(c)-2], at[:len(at)-2]} {
		if _, _, err := model.DecodeCursor(bad, "country=no"); err == nil {
			t.Errorf("DecodeCursor(%q) accepted", bad)
		}
	}
	if _, _, err := model.DecodeCursor(c, "country=se"); err == nil {
		t.Error("a cursor must not be valid for other filters")
	}
}

func TestTrim(t *testing.T) {
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	id := func(u uuid.UUID) uuid.UUID { return u }
	r := model.TrimPage(ids, model.Page{Limit: 2}, id)
	if len(r.Items) != 2 || r.Next != ids[1] {
		t.Errorf("more rows: %+v", r)
	}
	r = model.TrimPage(ids, model.Page{Limit: 3}, id)
	if len(r.Items) != 3 || r.Next != uuid.Nil {
		t.Errorf("last page: %+v", r)
	}
}
