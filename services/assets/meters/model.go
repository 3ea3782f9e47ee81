package meters

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
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
// read_at order, of the same meter; of one instant, the one recorded
// later (its id, a UUIDv7, is greater) comes after.
type neighbour struct {
	ID     uuid.UUID `db:"id"`
	Value  float64   `db:"value"`
	ReadAt time.Time `db:"read_at"`
	Reset  bool      `db:"reset"`
}

// precedes reports whether n comes before m in a meter's order.
func (n neighbour) precedes(m neighbour) bool {
	if !n.ReadAt.Equal(m.ReadAt) {
		return n.ReadAt.Before(m.ReadAt)
	}
	return bytes.Compare(n.ID[:], m.ID[:]) < 0
}

// earlier is the one of a and b that comes first (nil: neither).
func earlier(a, b *neighbour) *neighbour {
	if a == nil || b != nil && b.precedes(*a) {
		return b
	}
	return a
}

// later is the one of a and b that comes last (nil: neither).
func later(a, b *neighbour) *neighbour {
	if a == nil || b != nil && a.precedes(*b) {
		return b
	}
	return a
}

// committed is what the store read of a batch item's meter before the
// batch: the readings just before and just after the item's place.
type committed struct{ before, after *neighbour }

// batchLine checks the readings of a batch, in the body's order, as the
// single create would one after the other: each against the readings of
// its meter committed before the batch (what the store read, once for the
// whole batch) and the batch's own readings accepted before it. A refused
// reading is not there for the ones after it. It reads nothing itself.
type batchLine struct {
	accepted map[string][]neighbour // per meter, in the meter's order
	// The accepted readings, in the body's order, column by column.
	ids    []uuid.UUID
	meters []string
	values []float64
	times  []time.Time
	resets []bool
}

// accept checks r, to be recorded with id id, against what was committed
// around its place and the batch's accepted readings; when it fits, it is
// accepted and counts for the readings after it.
func (l *batchLine) accept(id uuid.UUID, r reading, around committed) error {
	if l.accepted == nil {
		l.accepted = map[string][]neighbour{}
	}
	self := neighbour{ID: id, Value: r.Value, ReadAt: r.ReadAt, Reset: r.Reset}
	line := l.accepted[r.Meter]
	// The batch's readings before self's place and after it.
	at := sort.Search(len(line), func(k int) bool { return self.precedes(line[k]) })
	var batchBefore, batchAfter *neighbour
	if at > 0 {
		batchBefore = &line[at-1]
	}
	if at < len(line) {
		batchAfter = &line[at]
	}
	if err := r.fits(later(around.before, batchBefore), earlier(around.after, batchAfter)); err != nil {
		return err
	}
	l.accepted[r.Meter] = slices.Insert(line, at, self)
	l.ids, l.meters, l.values = append(l.ids, id), append(l.meters, r.Meter), append(l.values, r.Value)
	l.times, l.resets = append(l.times, r.ReadAt), append(l.resets, r.Reset)
	return nil
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

// meterLast is a meter's last reading in read_at order.
type meterLast struct {
	Meter string `db:"meter"`
	neighbour
}

// neighbours are a batch item's committed neighbours (NULL: none).
type neighbours struct {
	Item         int32      `db:"item"`
	BeforeID     *uuid.UUID `db:"before_id"`
	BeforeValue  *float64   `db:"before_value"`
	BeforeReadAt *time.Time `db:"before_read_at"`
	BeforeReset  *bool      `db:"before_reset"`
	AfterID      *uuid.UUID `db:"after_id"`
	AfterValue   *float64   `db:"after_value"`
	AfterReadAt  *time.Time `db:"after_read_at"`
	AfterReset   *bool      `db:"after_reset"`
}

func (n neighbours) committed() committed {
	var c committed
	if n.BeforeID != nil {
		c.before = &neighbour{ID: *n.BeforeID, Value: *n.BeforeValue, ReadAt: *n.BeforeReadAt, Reset: *n.BeforeReset}
	}
	if n.AfterID != nil {
		c.after = &neighbour{ID: *n.AfterID, Value: *n.AfterValue, ReadAt: *n.AfterReadAt, Reset: *n.AfterReset}
	}
	return c
}

// earlyItems are the items of a batch placed before their meter's last
// reading (recorded after the fact): the store reads their neighbours.
type earlyItems struct {
	items  []int32
	meters []string
	times  []time.Time
}

// placeBatch places the pending items of a batch against their meters'
// last readings: an item not before its meter's last reading comes right
// after it (after every committed reading of the same instant, since its
// id is newer), and an item of a meter without readings has no
// neighbours; the others are early.
func placeBatch(in []reading, pending []int, lasts []meterLast) (map[int]committed, earlyItems) {
	last := make(map[string]neighbour, len(lasts))
	for _, l := range lasts {
		last[l.Meter] = l.neighbour
	}
	around := make(map[int]committed, len(pending))
	var e earlyItems
	for _, i := range pending {
		l, ok := last[in[i].Meter]
		switch {
		case !ok:
		case !in[i].ReadAt.Before(l.ReadAt):
			around[i] = committed{before: &l}
		default:
			e.items, e.meters, e.times = append(e.items, int32(i)), append(e.meters, in[i].Meter), append(e.times, in[i].ReadAt)
		}
	}
	return around, e
}
