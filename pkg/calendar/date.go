// Package calendar has the civil Date the interface uses for birth dates,
// performed_at and status_valid_through: a day without a time or zone.
package calendar

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

const layout = "2006-01-02"

// Date is a calendar day. Its zero value is "no date" and is never valid.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// ErrFormat is what clients see for a malformed or impossible date.
var ErrFormat = errors.New("must be a real calendar date in YYYY-MM-DD format")

// Parse reads a YYYY-MM-DD date and rejects days that do not exist
// (2023-02-29, 2024-13-01).
func Parse(s string) (Date, error) {
	if len(s) != len(layout) {
		return Date{}, ErrFormat
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return Date{}, ErrFormat
	}
	return Of(t), nil
}

// Of returns the date of t in t's location.
func Of(t time.Time) Date {
	y, m, d := t.Date()
	return Date{Year: y, Month: m, Day: d}
}

// Today returns the current UTC date.
func Today() Date { return Of(time.Now().UTC()) }

// Time returns midnight UTC of the date.
func (d Date) Time() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

// IsZero reports whether d is the zero Date.
func (d Date) IsZero() bool { return d == Date{} }

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day) }

// Before reports whether d is strictly before other.
func (d Date) Before(other Date) bool { return d.Time().Before(other.Time()) }

// After reports whether d is strictly after other.
func (d Date) After(other Date) bool { return d.Time().After(other.Time()) }

// MarshalJSON writes "YYYY-MM-DD".
func (d Date) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads "YYYY-MM-DD"; null leaves d unchanged, like
// encoding/json does for other value types.
func (d *Date) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return ErrFormat
	}
	parsed, err := Parse(s)
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
		*d = Of(v)
		return nil
	case string:
		parsed, err := Parse(v)
		if err != nil {
			return err
		}
		*d = parsed
		return nil
	default:
		return fmt.Errorf("calendar.Date: cannot scan %T", src)
	}
}
