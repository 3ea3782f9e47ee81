package model_test

import (
	"testing"

	"github.com/assetregistry/registry/pkg/model"
)

func TestParsePeriod(t *testing.T) {
	tests := []struct {
		in             string
		months, days   int
		ok             bool
		printedAgainAs string
	}{
		{"P12M", 12, 0, true, "P12M"},
		{"P1Y", 12, 0, true, "P1Y"},
		{"P6M", 6, 0, true, "P6M"},
		{"P30D", 0, 30, true, "P30D"},
		{"P2W", 0, 14, true, "P2W"},
		{"P1Y6M", 18, 0, true, "P1Y6M"},
		{"P1Y2M3W4D", 14, 25, true, "P1Y2M3W4D"},
		{"P0D", 0, 0, true, "P0D"},
		{"P100Y", 1200, 0, true, "P100Y"},
		{"P36600D", 0, 36600, true, "P36600D"},
		{"P", 0, 0, false, ""},
		{"", 0, 0, false, ""},
		{"12M", 0, 0, false, ""},
		{"p12m", 0, 0, false, ""},           // upper case only
		{"P12m", 0, 0, false, ""},           // upper case only
		{"P6M1Y", 0, 0, false, ""},          // designators in order
		{"P1M1M", 0, 0, false, ""},          // each once
		{"P1.5Y", 0, 0, false, ""},          // no fractions
		{"P-1M", 0, 0, false, ""},           // no sign
		{"-P1M", 0, 0, false, ""},           // no sign
		{"PT24H", 0, 0, false, ""},          // no time part: due dates are days
		{"P1DT12H", 0, 0, false, ""},        // no time part
		{"P101Y", 0, 0, false, ""},          // at most a century
		{"P1201M", 0, 0, false, ""},         // at most a century
		{"P99999D", 0, 0, false, ""},        // at most a century
		{" P1Y", 0, 0, false, ""},           // no spaces
		{"P1Y ", 0, 0, false, ""},           // no spaces
		{"P12345Y", 0, 0, false, ""},        // too many digits
		{"P1Y\n", 0, 0, false, ""},          // nothing after
		{"P０D", 0, 0, false, ""},            // ASCII digits only
		{"R5/P1Y", 0, 0, false, ""},         // not a recurrence
		{"2025-01-01/P1Y", 0, 0, false, ""}, // not an interval
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := model.ParsePeriod(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParsePeriod(%q) err = %v, want ok %v", tt.in, err, tt.ok)
			}
			if !tt.ok {
				return
			}
			if p.Months != tt.months || p.Days != tt.days || p.String() != tt.printedAgainAs {
				t.Errorf("ParsePeriod(%q) = %d months %d days %q", tt.in, p.Months, p.Days, p)
			}
		})
	}
}

// Months land on the same day of the month, or the month's last day when
// it is shorter; then the days are added.
func TestPeriodAddTo(t *testing.T) {
	tests := []struct{ date, period, want string }{
		{"2025-03-14", "P12M", "2026-03-14"},
		{"2025-03-14", "P1Y", "2026-03-14"},
		{"2025-03-14", "P6M", "2025-09-14"},
		{"2025-03-14", "P30D", "2025-04-13"},
		{"2025-03-14", "P0D", "2025-03-14"},
		{"2025-01-31", "P1M", "2025-02-28"},
		{"2024-01-31", "P1M", "2024-02-29"}, // a leap year
		{"2025-01-30", "P1M", "2025-02-28"},
		{"2025-03-31", "P1M", "2025-04-30"},
		{"2025-08-31", "P6M", "2026-02-28"},
		{"2024-02-29", "P1Y", "2025-02-28"},
		{"2024-02-29", "P4Y", "2028-02-29"},
		{"2025-01-31", "P1M1D", "2025-03-01"}, // months first, then days
		{"2025-12-15", "P1M", "2026-01-15"},
		{"2025-11-30", "P3M", "2026-02-28"},
		{"2025-12-31", "P2W", "2026-01-14"},
		{"2025-02-28", "P1M", "2025-03-28"}, // not the month's end again
	}
	for _, tt := range tests {
		t.Run(tt.date+"+"+tt.period, func(t *testing.T) {
			d, err := model.ParseDate(tt.date)
			if err != nil {
				t.Fatal(err)
			}
			p, err := model.ParsePeriod(tt.period)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.AddTo(d).String(); got != tt.want {
				t.Errorf("%s + %s = %s, want %s", tt.date, tt.period, got, tt.want)
			}
		})
	}
}
