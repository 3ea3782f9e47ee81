package documents

import (
	"testing"
)

func TestParseRangeAndResolve(t *testing.T) {
	t.Parallel()
	const size = 1000
	tests := []struct {
		header      string
		parsed      bool
		first, last int64
		satisfiable bool
	}{
		{"bytes=0-99", true, 0, 99, true},
		{"bytes=900-", true, 900, 999, true},
		{"bytes=-100", true, 900, 999, true},
		{"bytes=-5000", true, 0, 999, true},
		{"bytes=990-5000", true, 990, 999, true},
		{"bytes=0-0", true, 0, 0, true},
		{"bytes=1000-", true, 0, 0, false},
		{"bytes=-0", true, 0, 0, false},
		{"", false, 0, 0, false},
		{"bytes=0-1,5-6", false, 0, 0, false}, // several ranges: the whole file
		{"items=0-1", false, 0, 0, false},
		{"bytes=5-1", false, 0, 0, false},
		{"bytes=a-b", false, 0, 0, false},
		{"bytes=+1-2", false, 0, 0, false},
		{"bytes=-", false, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			spec := ParseRange(tt.header)
			if (spec != nil) != tt.parsed {
				t.Fatalf("parsed = %v, want %v", spec != nil, tt.parsed)
			}
			if spec == nil {
				return
			}
			r, ok := spec.Resolve(size)
			if ok != tt.satisfiable || (ok && (r.First != tt.first || r.Last != tt.last)) {
				t.Errorf("resolve = %+v, %v; want %d-%d, %v", r, ok, tt.first, tt.last, tt.satisfiable)
			}
		})
	}
	if _, ok := (RangeSpec{Suffix: 10, First: -1, Last: -1}).Resolve(0); ok {
		t.Error("an empty file satisfies no range")
	}
}

func TestContentDisposition(t *testing.T) {
	t.Parallel()
	name := func(s string) *string { return &s }
	tests := []struct {
		filename *string
		want     string
	}{
		{name("report.pdf"), `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`},
		{name("Kontroll rapport Ø.pdf"), `attachment; filename="Kontroll rapport _.pdf"; filename*=UTF-8''Kontroll%20rapport%20%C3%98.pdf`},
		{name(`a"b\c` + "\n.txt"), `attachment; filename="a_b_c_.txt"; filename*=UTF-8''a%22b%5Cc%0A.txt`},
		{nil, `attachment; filename="0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f"; filename*=UTF-8''0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f`},
	}
	for _, tt := range tests {
		d := Document{Filename: tt.filename}
		_ = d.ID.UnmarshalText([]byte("0190b0a4-2a2c-7c4e-8a42-1a2b3c4d5e6f"))
		if got := contentDisposition(d); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

func TestPartContentType(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]string{
		"":                          "",
		"application/PDF":           "application/pdf",
		"text/plain; charset=UTF-8": "text/plain; charset=UTF-8",
		"image/png":                 "image/png",
	} {
		if got, ok := partContentType(header); !ok || got != want {
			t.Errorf("%q: %q, %v; want %q", header, got, ok, want)
		}
	}
	if _, ok := partContentType("not a type"); ok {
		t.Error("a malformed Content-Type was accepted")
	}
}
