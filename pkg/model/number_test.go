package model_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/model"
)

// The stored lengths are what PostgreSQL 15 prints for '[<lit>]'::jsonb
// (pkg/store's TestNumbersAsPostgresStoresThem holds the rule to the
// server itself).
var numberCases = []struct {
	name, lit string
	stored    int // 0: refused
}{
	{"an integer", "42", 2},
	{"a negative decimal", "-12.50", 6},
	{"zero", "0", 1},
	{"negative zero loses its sign", "-0", 1},
	{"a long integer within float64's range", "123456789012345678901234567890", 30},
	{"an exponent within the growth", "1e6", 7},
	{"an exponent at the growth", "1e19", 20},
	{"an upper-case exponent with a sign", "1E+2", 3},
	{"a small negative exponent", "1.5e-3", 6},
	{"scale kept from the fraction", "120e-1", 4},
	{"a decimal with its zeros", "0.10000", 7},
	{"Avogadro's number", "6.02214076e23", 24},
	{"zero with an exponent", "0e5", 1},
	{"zero with a scale", "0.00e1", 3},
	{"float64's largest, written out", "17976931348623157" + strings.Repeat("0", 292), 309},

	{"an exponent past the growth", "1e20", 0},
	{"the 13 MB action's number", "1e131071", 0},
	{"past numeric's integer digits", "1e131072", 0},
	{"past numeric's scale", "1e-16384", 0},
	{"zero past numeric's scale", "0e-16384", 0},
	{"zero with a scale past the growth", "0e-100", 0},
	{"past float64's range", "1e400", 0},
	{"past float64's range, written out", "1" + strings.Repeat("0", 400), 0},
	{"below float64's smallest", "1e-400", 0},
	{"below float64's smallest, negative", "-2e-324", 0},
	{"an exponent numeric cannot read", "0e1073741823", 0},
	{"an exponent of many digits", "1e99999999999999999999", 0},
	{"more digits after the point than numeric keeps", "0." + strings.Repeat("0", 16383) + "1", 0},
	{"as many digits after the point as numeric keeps", "0.1" + strings.Repeat("0", 16382), 16385},
}

func TestNumberStored(t *testing.T) {
	for _, c := range numberCases {
		t.Run(c.name, func(t *testing.T) {
			stored, problem := model.NumberStored([]byte(c.lit))
			switch {
			case c.stored == 0 && problem == "":
				t.Errorf("%.40s accepted (stored as %d characters), want a problem", c.lit, stored)
			case c.stored != 0 && problem != "":
				t.Errorf("%.40s refused: %s", c.lit, problem)
			case c.stored != 0 && stored != c.stored:
				t.Errorf("%.40s stored as %d characters, want %d", c.lit, stored, c.stored)
			}
		})
	}
}

func TestStoredJSONSize(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int
	}{
		{`{}`, 2},
		{`{"a":1e6,"b":"1e6","c":[1e3,-1.5e-3]}`, len(`{"a":1000000,"b":"1e6","c":[1000,-0.0015]}`)},
		{`{"e\"1e9":"x\\","n":1e9}`, len(`{"e\"1e9":"x\\","n":1000000000}`)},
		{`[true,false,null,0]`, len(`[true,false,null,0]`)},
	} {
		if got := model.StoredJSONSize([]byte(c.raw)); got != c.want {
			t.Errorf("StoredJSONSize(%s) = %d, want %d", c.raw, got, c.want)
		}
	}
}

// FuzzNumberStored holds the rule to what it promises for any number: an
// accepted one is a finite float64 (not rounded to zero), printed at most
// MaxNumberGrowth characters longer, with no more digits after the point
// than PostgreSQL keeps. Its seeds are the table's cases.
func FuzzNumberStored(f *testing.F) {
	for _, c := range numberCases {
		f.Add(c.lit)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		if !json.Valid([]byte(lit)) || lit == "" || strings.TrimSpace(lit) != lit || (lit[0] != '-' && (lit[0] < '0' || lit[0] > '9')) {
			return // not a JSON number
		}
		stored, problem := model.NumberStored([]byte(lit))
		if problem != "" {
			return
		}
		v, err := strconv.ParseFloat(lit, 64)
		if err != nil || math.IsInf(v, 0) {
			t.Fatalf("%s accepted but is not a finite float64: %v", lit, err)
		}
		if v == 0 && strings.ContainsAny(strings.Split(strings.ToLower(lit), "e")[0], "123456789") {
			t.Fatalf("%s accepted but rounds to zero", lit)
		}
		if stored > len(lit)+model.MaxNumberGrowth {
			t.Fatalf("%s accepted but stored as %d characters", lit, stored)
		}
		if stored < 1 {
			t.Fatalf("%s stored as %d characters", lit, stored)
		}
	})
}
