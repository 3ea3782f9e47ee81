package feed

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseInstant holds ?as_of's parser to the contract's rule for every
// date the registry reads: whatever the text, it is refused as no
// timestamp (a 400) or no real instant (a 422), or it is an RFC 3339
// timestamp whose date, as written, is a real day of the years 0001 to
// 9999, read as time.Parse reads it. Seeded with TestParseInstant's edges.
func FuzzParseInstant(f *testing.F) {
	for _, seed := range []string{
		"2025-03-14T09:26:53Z", "2025-03-14t09:26:53.123456789z", "2025-03-14T10:26:53 01:00", "2024-02-29T00:00:00Z",
		"2025-02-29T00:00:00Z", "0000-12-31T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
		"10000-03-14T09:26:53Z", "2025-03-14T24:00:00Z", "2025-03-14T09:26:60Z", "+2025-03-14T09:26:53Z",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseInstant(s)
		if err != nil {
			if err != ErrInstantShape && err != ErrInstantValue {
				t.Fatalf("%q: %v, want the shape's or the value's problem", s, err)
			}
			return
		}
		year, yerr := strconv.Atoi(s[:4])
		if yerr != nil || year < 1 || year > 9999 {
			t.Fatalf("%q accepted with the year %q", s, s[:4])
		}
		day, derr := time.Parse("2006-01-02", s[:10])
		if derr != nil || day.Format("2006-01-02") != s[:10] {
			t.Fatalf("%q accepted, but %s is no real day", s, s[:10])
		}
		text := strings.ToUpper(s)
		if len(text) > 6 && text[len(text)-6] == ' ' {
			text = text[:len(text)-6] + "+" + text[len(text)-5:]
		}
		want, perr := time.Parse(time.RFC3339Nano, text)
		if perr != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("%q read as %s, time.Parse reads %s (%v)", s, got, want, perr)
		}
	})
}
