package store

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// A uuid.UUID parameter is sent as its bytes, and still as its text where
// text is asked for.
func TestUUIDParameters(t *testing.T) {
	m := pgtype.NewMap()
	encodeUUIDsAsBytes(m)
	id := uuid.MustParse("0190c4b2-5d2e-7a1c-9f3e-2b1d4c5e6f70")
	bin, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, id, nil)
	if err != nil || !bytes.Equal(bin, id[:]) {
		t.Fatalf("binary: %x, %v", bin, err)
	}
	text, err := m.Encode(pgtype.UUIDOID, pgtype.TextFormatCode, id, nil)
	if err != nil || string(text) != id.String() {
		t.Fatalf("text: %q, %v", text, err)
	}
	asText, err := m.Encode(pgtype.TextOID, pgtype.TextFormatCode, id, nil)
	if err != nil || string(asText) != id.String() {
		t.Fatalf("as text: %q, %v", asText, err)
	}
	arr, err := m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, []uuid.UUID{id, id}, nil)
	if err != nil || !bytes.Contains(arr, id[:]) {
		t.Fatalf("array: %x, %v", arr, err)
	}
}

// A uuid column is copied into a uuid.UUID, NULL leaving it as it was
// (as uuid.UUID's own Scan does).
func TestUUIDColumns(t *testing.T) {
	t.Parallel()
	m := pgtype.NewMap()
	scanUUIDsAsBytes(m)
	id := uuid.MustParse("0190c4b2-5d2e-7a1c-9f3e-2b1d4c5e6f70")
	for _, format := range []int16{pgtype.BinaryFormatCode, pgtype.TextFormatCode} {
		src := id[:]
		if format == pgtype.TextFormatCode {
			src = []byte(id.String())
		}
		var got uuid.UUID
		if err := m.Scan(pgtype.UUIDOID, format, src, &got); err != nil || got != id {
			t.Fatalf("format %d: %v, %v", format, got, err)
		}
		if err := m.Scan(pgtype.UUIDOID, format, nil, &got); err != nil || got != id {
			t.Fatalf("format %d, NULL: %v, %v", format, got, err)
		}
		var ptr *uuid.UUID
		if err := m.Scan(pgtype.UUIDOID, format, src, &ptr); err != nil || ptr == nil || *ptr != id {
			t.Fatalf("format %d, pointer: %v, %v", format, ptr, err)
		}
		if err := m.Scan(pgtype.UUIDOID, format, nil, &ptr); err != nil || ptr != nil {
			t.Fatalf("format %d, NULL pointer: %v, %v", format, ptr, err)
		}
		var s string
		if err := m.Scan(pgtype.UUIDOID, format, src, &s); err != nil || s != id.String() {
			t.Fatalf("format %d, string: %q, %v", format, s, err)
		}
	}
}

func BenchmarkUUIDColumn(b *testing.B) {
	id := uuid.New()
	againstBytes(b, "Scanner", scanUUIDsAsBytes, func(b *testing.B, m *pgtype.Map) {
		plan := m.PlanScan(pgtype.UUIDOID, pgtype.BinaryFormatCode, new(uuid.UUID))
		b.ReportAllocs()
		var got uuid.UUID
		for b.Loop() {
			if err := plan.Scan(id[:], &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkUUIDParameter(b *testing.B) {
	id := uuid.New()
	againstBytes(b, "Valuer", encodeUUIDsAsBytes, func(b *testing.B, m *pgtype.Map) {
		b.ReportAllocs()
		buf := make([]byte, 0, 64)
		for b.Loop() {
			if _, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, id, buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// againstBytes runs op twice, each its own run: on a type map as pgx makes
// it (the run named plain, after uuid.UUID's own method) and on one with
// the byte codec register adds ("bytes").
func againstBytes(b *testing.B, plain string, register func(*pgtype.Map), op func(*testing.B, *pgtype.Map)) {
	for _, wrap := range []bool{false, true} {
		name := plain
		if wrap {
			name = "bytes"
		}
		b.Run(name, func(b *testing.B) {
			m := pgtype.NewMap()
			if wrap {
				register(m)
			}
			op(b, m)
		})
	}
}
