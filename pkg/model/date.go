// Date is the civil date the interface uses for birth dates,
// performed_at and status_valid_through: a day without a time or zone.

package model

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

const dateLayout = "2006-01-02"

// Date is a calendar day. Its zero value is "no date" and is never valid.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// ErrDateFormat is what clients see for a malformed or impossible date.
var ErrDateFormat = errors.New("must be a real calendar date in YYYY-MM-DD format, in the years 0001 to 9999")

// ParseDate reads a YYYY-MM-DD date and rejects days that do not exist
// (2023-02-29, 2024-13-01) and the year 0000, which Go reads as 1 BC and
// PostgreSQL does not store (the format itself ends at 9999).
func ParseDate(s string) (Date, error) {
	if len(s) != len(dateLayout) {
		return Date{}, ErrDateFormat
	}
	t, err := time.Parse(dateLayout, s)
	if err != nil || t.Year() < 1 {
		return Date{}, ErrDateFormat
	}
	return DateOf(t), nil
}

// DateOf returns the date of t in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{Year: y, Month: m, Day: d}
}

// Today returns the current UTC date.
func Today() Date { return DateOf(time.Now().UTC()) }

// Time returns midnight UTC of the date.
func (d Date) Time() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

// IsZero reports whether d is the zero Date.
func (d Date) IsZero() bool { return d == Date{} }

func (d Date) String() string { return string(d.appendTo(make([]byte, 0, len(dateLayout)))) }

// appendTo appends d as YYYY-MM-DD. A list of compliance rows writes a
// few dates a row: through fmt and a second json.Marshal each, they were
// a seventh of the actions service's CPU on such a page.
func (d Date) appendTo(b []byte) []byte {
	if d.Year < 0 || d.Year > 9999 || d.Month < 0 || d.Month > 99 || d.Day < 0 || d.Day > 99 {
		return fmt.Appendf(b, "%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
	}
	digit := func(n int) byte { return byte('0' + n%10) }
	m := int(d.Month)
	return append(b, digit(d.Year/1000), digit(d.Year/100), digit(d.Year/10), digit(d.Year), '-',
		digit(m/10), digit(m), '-', digit(d.Day/10), digit(d.Day))
}

// Before reports whether d is strictly before other.
func (d Date) Before(other Date) bool { return d.Time().Before(other.Time()) }

// After reports whether d is strictly after other.
func (d Date) After(other Date) bool { return d.Time().After(other.Time()) }

// MarshalJSON writes "YYYY-MM-DD".
func (d Date) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, len(dateLayout)+2), '"')
	return append(d.appendTo(b), '"'), nil
}

// UnmarshalJSON reads "YYYY-MM-DD"; null leaves d unchanged, like
// encoding/json does for other value types.
func (d *Date) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return ErrDateFormat
	}
	parsed, err := ParseDate(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// Value stores the date in a PostgreSQL date column.
func (d Date) Value() (driver.Value, error) { return d.String(), nil }

// Scan reads a PostgreSQL date column.
func (d *Date) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*d = DateOf(v)
		return nil
	case string:
		parsed, err := ParseDate(v)
		if err != nil {
			return err
		}
		*d = parsed
		return nil
	default:
		return fmt.Errorf("calendar.Date: cannot scan %T", src)
	}
}
