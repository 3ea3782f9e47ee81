package meters

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Reading is one reading of one of an asset's meters (operating hours,
// kilometres, cycles): what a meter showed at read_at. Readings are never
// changed; they go with their asset.
type Reading struct {
	ID        uuid.UUID `json:"id" db:"id"`
	AssetID   uuid.UUID `json:"asset_id" db:"asset_id"`
	Meter     string    `json:"meter" db:"meter"`
	Value     float64   `json:"value" db:"value"`
	ReadAt    time.Time `json:"read_at" db:"read_at"`
	Reset     bool      `json:"reset" db:"reset"`
	CreatedAt time.Time `json:"created_at" db:"created_at"`
	CreatedBy string    `json:"created_by" db:"created_by"`
}

// ReadingInput is the body of POST /assets/{id}/meter_readings. Reset
// says the meter was reset (or replaced) before this reading, so it may
// be below the one before it.
type ReadingInput struct {
	Meter  string   `json:"meter"`
	Value  *float64 `json:"value"`
	ReadAt string   `json:"read_at"`
	Reset  bool     `json:"reset"`
}

// ReadOnlyFields are the fields the service sets (httpx: sending one is a
// 422 naming it).
func (ReadingInput) ReadOnlyFields() []string {
	return []string{"id", "asset_id", "created_at", "created_by"}
}

// reading is a checked input: what the store writes.
type reading struct {
	Meter  string
	Value  float64
	ReadAt time.Time
	Reset  bool
}

// check reads and checks every field: meter a lowercase token, value a
// number of at least 0, read_at an RFC 3339 timestamp.
func (in ReadingInput) check() (reading, error) {
	var v apperr.Validation
	model.Token(&v, "meter", in.Meter, "operating_hours")
	out := reading{Meter: in.Meter, Reset: in.Reset}
	switch {
	case in.Value == nil:
		v.Add("value", "is required, a number of at least 0")
	case *in.Value < 0:
		v.Add("value", "must be at least 0")
	default:
		out.Value = *in.Value
	}
	if in.ReadAt == "" {
		v.Add("read_at", "is required, an RFC 3339 timestamp such as 2025-03-14T09:26:53Z")
	} else if t, err := ParseTime(in.ReadAt); err != nil {
		v.Add("read_at", "%s", err.Error())
	} else {
		out.ReadAt = t
	}
	return out, v.Err()
}

// ParseTime reads an RFC 3339 timestamp of the years 0001 to 9999, in UTC.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err != nil || strings.HasPrefix(s, "0000") {
		return time.Time{}, errNotTime
	}
	return t.UTC(), nil
}

var errNotTime = errors.New("is not an RFC 3339 timestamp of a real instant (years 0001 to 9999), such as 2025-03-14T09:26:53Z")

// ReadingFilter narrows an asset's readings to one meter.
type ReadingFilter struct {
	AssetID uuid.UUID
	Meter   *string
}

// neighbour is the reading just before or just after a new one, in
// read_at order, of the same meter.
type neighbour struct {
	Value  float64   `db:"value"`
	ReadAt time.Time `db:"read_at"`
	Reset  bool      `db:"reset"`
}

// fits checks r against its neighbours (nil: none): a meter counts up, so
// a reading is not below the one before it unless it says the meter was
// reset, and not above the one after it unless that one was a reset.
func (r reading) fits(before, after *neighbour) error {
	if before != nil && !r.Reset && r.Value < before.Value {
		return valueProblem(fmt.Sprintf(`must not be below the reading before it (%v at %s); send "reset": true if the meter was reset`,
			before.Value, before.ReadAt.Format(time.RFC3339Nano)))
	}
	if after != nil && !after.Reset && r.Value > after.Value {
		return valueProblem(fmt.Sprintf("must not be above the reading after it (%v at %s)", after.Value, after.ReadAt.Format(time.RFC3339Nano)))
	}
	return nil
}

func valueProblem(message string) error {
	return apperr.Invalid(apperr.FieldError{Field: "value", Message: message})
}
