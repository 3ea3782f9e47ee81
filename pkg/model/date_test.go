package model_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/assetregistry/registry/pkg/model"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"2024-02-29", true},
		{"2023-02-29", false},
		{"2023-13-01", false},
		{"2023-04-31", false},
		{"2023-4-1", false},
		{"2023-04-01T00:00:00Z", false},
		{"", false},
		{"0001-01-01", true},
	}
	for _, tt := range tests {
		d, err := model.ParseDate(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("Parse(%q) err = %v, want ok=%v", tt.in, err, tt.ok)
		}
		if tt.ok && d.String() != tt.in {
			t.Errorf("Parse(%q).String() = %q", tt.in, d)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var v struct{ D *model.Date }
	if err := json.Unmarshal([]byte(`{"D":"1999-12-31"}`), &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	if string(out) != `{"D":"1999-12-31"}` {
		t.Errorf("round trip = %s", out)
	}
	if err := json.Unmarshal([]byte(`{"D":19991231}`), &v); err == nil {
		t.Error("a number must not parse as a date")
	}
}

// A date writes as fmt's %04d-%02d-%02d would, in and out of the years
// a date may hold, and as JSON as its string.
func TestDateText(t *testing.T) {
	for _, d := range []model.Date{
		{Year: 2024, Month: 2, Day: 29}, {Year: 1, Month: 1, Day: 1}, {Year: 9999, Month: 12, Day: 31},
		{Year: 999, Month: 10, Day: 9}, {}, {Year: 10000, Month: 1, Day: 1}, {Year: -1, Month: 1, Day: 1}, {Year: 2024, Month: 100, Day: 1},
	} {
		want := fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
		if got := d.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", d, got, want)
		}
		if got, err := json.Marshal(d); err != nil || string(got) != `"`+want+`"` {
			t.Errorf("json.Marshal(%#v) = %s, %v; want %q", d, got, err, want)
		}
	}
}

// dateCases are the dates every parser of a date (bodies, queries) must
// take or refuse, the fuzz target's seeds among them.
var dateCases = []struct {
	in string
	ok bool
}{
	{"2024-02-29", true},
	{"0001-01-01", true},
	{"9999-12-31", true},
	{"0000-01-01", false}, // Go reads it as 1 BC; PostgreSQL stores no year 0
	{"0000-12-31", false},
	{"10000-01-01", false},
	{"-001-01-01", false},
	{"+001-01-01", false},
	{"2023-02-29", false},
	{"2024-00-10", false},
	{"2024-01-00", false},
	{" 2024-01-01", false},
	{"2024-01-01 ", false},
	{"２０２４-01-01", false},
}

func TestDatesAreInTheYears1To9999(t *testing.T) {
	for _, c := range dateCases {
		d, err := model.ParseDate(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseDate(%q) err = %v, want ok=%v", c.in, err, c.ok)
			continue
		}
		var body struct{ D model.Date }
		err = json.Unmarshal([]byte(`{"D":"`+c.in+`"}`), &body)
		if (err == nil) != c.ok {
			t.Errorf("a body's %q: err = %v, want ok=%v", c.in, err, c.ok)
		}
		if c.ok && (d.String() != c.in || body.D != d) {
			t.Errorf("%q parsed as %s and, in a body, %s", c.in, d, body.D)
		}
	}
}

// FuzzParseDate: whatever the text, a date is refused or is a real day of
// the years 0001 to 9999 written exactly as given, and a body reads it the
// same way.
func FuzzParseDate(f *testing.F) {
	for _, c := range dateCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := model.ParseDate(s)
		quoted, _ := json.Marshal(s)
		var body model.Date
		bodyErr := body.UnmarshalJSON(quoted)
		if (err == nil) != (bodyErr == nil) || body != d {
			t.Fatalf("%q: ParseDate %v (%v), a body %v (%v)", s, d, err, body, bodyErr)
		}
		if err != nil {
			return
		}
		if d.Year < 1 || d.Year > 9999 {
			t.Fatalf("%q accepted as year %d", s, d.Year)
		}
		if d.String() != s {
			t.Fatalf("%q accepted as %s", s, d)
		}
		if d.Time().Day() != d.Day || d.Time().Month() != d.Month {
			t.Fatalf("%q is no real day", s)
		}
	})
}
