// Period is a span of the calendar written as an ISO 8601 duration
// (P12M, P1Y, P6M, P30D, P2W): how often an inspection falls due, how long
// after registration the first one is due, how far ahead "due soon" looks.

package model

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Period is whole months and days; ISO 8601's years are twelve months and
// weeks seven days. Its zero value is "P0D".
type Period struct {
	Months, Days int
	text         string // as parsed, for answers: "P1Y" stays "P1Y"
}

// MaxPeriodYears bounds a period: nothing in the registry is due further
// ahead than a century.
const MaxPeriodYears = 100

// periodRule is the date part of an ISO 8601 duration, each designator at
// most once and in order. A time part (PT8H) is not taken: due dates are
// days.
var periodRule = regexp.MustCompile(`^P(?:(\d{1,4})Y)?(?:(\d{1,4})M)?(?:(\d{1,4})W)?(?:(\d{1,5})D)?$`)

// periodFormat is what clients see for a period that does not parse.
const periodFormat = "must be an ISO 8601 duration of years, months, weeks and days, such as P12M, P1Y, P6M or P30D"

// ParsePeriod reads an ISO 8601 duration of the calendar: P, then any of
// nY, nM, nW, nD in that order (at least one), upper case, no fractions,
// no sign and no time part, at most a century.
func ParsePeriod(s string) (Period, error) {
	m := periodRule.FindStringSubmatch(s)
	if m == nil || s == "P" {
		return Period{}, fmt.Errorf("%s", periodFormat)
	}
	n := make([]int, 4)
	for i, part := range m[1:] {
		if part != "" {
			n[i], _ = strconv.Atoi(part) // the rule allows digits only
		}
	}
	p := Period{Months: n[0]*12 + n[1], Days: n[2]*7 + n[3], text: s}
	if p.Months > MaxPeriodYears*12 || p.Days > MaxPeriodYears*366 {
		return Period{}, fmt.Errorf("must be at most %d years", MaxPeriodYears)
	}
	return p, nil
}

// String is the period as it was written (P0D for the zero period).
func (p Period) String() string {
	if p.text != "" {
		return p.text
	}
	var b strings.Builder
	b.WriteString("P")
	if p.Months > 0 {
		fmt.Fprintf(&b, "%dM", p.Months)
	}
	if p.Days > 0 || p.Months == 0 {
		fmt.Fprintf(&b, "%dD", p.Days)
	}
	return b.String()
}

// IsZero reports whether p spans no day.
func (p Period) IsZero() bool { return p.Months == 0 && p.Days == 0 }

// AddTo is the date p after d: the months first, landing on the same day
// of the month or, when that month is shorter, on its last day (January 31
// plus P1M is February 28, or 29 in a leap year; February 29 plus P1Y is
// February 28), then the days: what people mean by "every month", where
// an inspection on the 31st is not due in the first days of the month
// after next.
func (p Period) AddTo(d Date) Date {
	months := int(d.Month) - 1 + p.Months
	year, month := d.Year+months/12, time.Month(months%12+1)
	day := min(d.Day, daysIn(year, month))
	return DateOf(time.Date(year, month, day, 0, 0, 0, 0, time.UTC).AddDate(0, 0, p.Days))
}

// daysIn is the number of days of a month.
func daysIn(year int, month time.Month) int {
	return time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
