package main

import (
	"bytes"
	"encoding/csv"
	"iter"
	"maps"
	"slices"
	"strings"
	"testing"
)

// A CSV export never holds a cell a spreadsheet would run as a formula,
// and importing it reads back exactly the values exported.
func TestExportedCellsAreNotFormulas(t *testing.T) {
	tests := []struct {
		value, cell string
	}{
		{"=HYPERLINK(\"https://evil.example\",\"open\")", "'=HYPERLINK(\"https://evil.example\",\"open\")"},
		{"+1+1", "'+1+1"},
		{"-2+3", "'-2+3"},
		{"@SUM(A1:A9)", "'@SUM(A1:A9)"},
		{"\t=1+1", "'\t=1+1"},
		{"\r=1+1", "'\r=1+1"},
		{"'=1+1", "''=1+1"},       // a value that looks marked keeps its own '
		{"''", "'''"},             // and so does one of apostrophes alone
		{"'t Hooft", "''t Hooft"}, // a leading ' is marked whatever follows
		{"'", "''"},
		{"Kone MonoSpace", "Kone MonoSpace"},
		{"a=b", "a=b"},
		{"2025-03-14", "2025-03-14"},
		{`{"k":-1}`, `{"k":-1}`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			if got := spreadsheetText(tt.value); got != tt.cell {
				t.Errorf("exported as %q, want %q", got, tt.cell)
			}
			exported := map[string]string{"reference": tt.value, "status": tt.value, "asset_serial_number": "S1"}
			var out bytes.Buffer
			if err := writeRows(&out, "csv", seqOf(exported)); err != nil {
				t.Fatal(err)
			}
			rec := readBack(t, out.String())
			if rec[slices.Index(rowColumns, "reference")] != tt.cell {
				t.Errorf("the CSV cell is %q, want %q", rec[slices.Index(rowColumns, "reference")], tt.cell)
			}
			var imported map[string]string
			err := readCSV(strings.NewReader(out.String()), "export.csv", func(r row) bool {
				if r.err != nil {
					t.Fatal(r.err)
				}
				imported = r.values
				return false
			})
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(imported, exported) {
				t.Errorf("imported %q, exported %q", imported, exported)
			}
		})
	}
	// A ' a person typed before an ordinary value is the value's own.
	if got := plainText("'t Hooft"); got != "'t Hooft" {
		t.Errorf("a hand-written 't Hooft imports as %q", got)
	}
}

// The collections' CSV (export organizations, ...) marks its cells too.
func TestExportedCollectionCellsAreNotFormulas(t *testing.T) {
	type organization struct {
		Name               string `json:"name"`
		RegistrationNumber string `json:"registration_number"`
	}
	var out bytes.Buffer
	if err := write(&out, "csv", seqOf(organization{Name: "=cmd|' /C calc'!A0", RegistrationNumber: "-5"})); err != nil {
		t.Fatal(err)
	}
	rec := readBack(t, out.String())
	if want := []string{"'=cmd|' /C calc'!A0", "'-5"}; !slices.Equal(rec, want) {
		t.Errorf("cells %q, want %q", rec, want)
	}
}

// seqOf is items as a list iterator without errors.
func seqOf[T any](items ...T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, item := range items {
			if !yield(item, nil) {
				return
			}
		}
	}
}

// readBack is the first record after the header of a CSV.
func readBack(t *testing.T, s string) []string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v:\n%s", len(recs), err, s)
	}
	return recs[1]
}
