package model_test

import (
	"testing"
	"time"

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

func TestSequenceCursorRoundTrip(t *testing.T) {
	for _, seq := range []int64{0, 1, 42, 1 << 40} {
		c := model.EncodeSequenceCursor(seq, "feed")
		got, err := model.DecodeSequenceCursor(c, "feed")
		if err != nil || got != seq {
			t.Fatalf("seq %d: got %v, %v", seq, got, err)
		}
		if _, err := model.DecodeSequenceCursor(c, "history"); err == nil {
			t.Errorf("seq %d: a cursor must not be valid for another binding", seq)
		}
	}
	idCursor := model.EncodeCursor(uuid.Must(uuid.NewV7()), "feed")
	c := model.EncodeSequenceCursor(7, "feed")
	for _, bad := range []string{"", "now", "abc", c + "x", c[:len(c)-2], idCursor} {
		if _, err := model.DecodeSequenceCursor(bad, "feed"); err == nil {
			t.Errorf("DecodeSequenceCursor(%q) accepted", bad)
		}
	}
}

func TestLinkCursorRoundTrip(t *testing.T) {
	k := model.LinkKey{At: time.Date(2026, 3, 14, 9, 26, 53, 123456000, time.UTC), ID: uuid.Must(uuid.NewV7()), Name: "employee"}
	c := model.EncodeLinkCursor(k, "organization=1")
	got, err := model.DecodeLinkCursor(c, "organization=1")
	if err != nil || got != k {
		t.Fatalf("got %+v, %v; want %+v", got, err, k)
	}
	plain := model.LinkKey{At: k.At, ID: k.ID}
	if got, err := model.DecodeLinkCursor(model.EncodeLinkCursor(plain, ""), ""); err != nil || got != plain {
		t.Fatalf("without a name: got %+v, %v", got, err)
	}
	idCursor := model.EncodeCursor(k.ID, "organization=1")
	for _, bad := range []string{"", "abc", c + "x", c[:len(c)-2], idCursor} {
		if _, err := model.DecodeLinkCursor(bad, "organization=1"); err == nil {
			t.Errorf("DecodeLinkCursor(%q) accepted", bad)
		}
	}
	if _, _, err := model.DecodeCursor(c, "organization=1"); err == nil {
		t.Error("a link cursor passed for an id cursor")
	}
	if _, err := model.DecodeLinkCursor(c, "organization=2"); err == nil {
		t.Error("a cursor must not be valid for another binding")
	}
}

func TestTrimLinks(t *testing.T) {
	at := time.Now()
	rows := []model.LinkKey{{At: at, Name: "a"}, {At: at, Name: "b"}, {At: at, Name: "c"}}
	key := func(k model.LinkKey) model.LinkKey { return k }
	if p := model.TrimLinks(rows, model.LinkPage{Limit: 2}, key); len(p.Items) != 2 || p.Next == nil || p.Next.Name != "b" {
		t.Errorf("more rows: %+v", p)
	}
	if p := model.TrimLinks(rows, model.LinkPage{Limit: 3}, key); len(p.Items) != 3 || p.Next != nil {
		t.Errorf("last page: %+v", p)
	}
	if p := model.TrimLinks[model.LinkKey](nil, model.LinkPage{Limit: 3}, key); p.Items == nil {
		t.Error("an empty page must be an empty array, not null")
	}
}
