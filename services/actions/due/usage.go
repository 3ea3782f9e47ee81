package due

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
)

// Usage is a plan's usage interval: the action falls due once the asset's
// meter has counted Every since the last action of the type, or the
// calendar says so, whichever comes first.
type Usage struct {
	Meter string  `json:"meter"`
	Every float64 `json:"every"`
}

// Check adds u's problems to v, under field (usage).
func (u *Usage) Check(v *apperr.Validation, field string) {
	if u == nil {
		return
	}
	model.Token(v, field+".meter", u.Meter, "operating_hours")
	if !(u.Every > 0) || math.IsInf(u.Every, 0) {
		v.Add(field+".every", "is required: how much the meter counts between two actions, a number above 0")
	}
}

// MeterOf and EveryOf are u's columns (NULL without a usage interval).
func MeterOf(u *Usage) *string {
	if u == nil {
		return nil
	}
	return &u.Meter
}

func EveryOf(u *Usage) *float64 {
	if u == nil {
		return nil
	}
	return &u.Every
}

// Reading is what the compliance read model keeps of a meter reading.
type Reading struct {
	ID         uuid.UUID `json:"id"`
	AssetID    uuid.UUID `json:"asset_id"`
	Meter      string    `json:"meter"`
	Value      float64   `json:"value"`
	ReadAt     time.Time `json:"read_at"`
	Reset      bool      `json:"reset"`
	RecordedAt time.Time `json:"created_at"`
}

// ReadingOf reads a meter_reading.created event; ok is false for events
// of other kinds and operations.
func ReadingOf(e outbox.Event) (r Reading, ok bool, err error) {
	if e.Type != outbox.KindMeterReading+"."+outbox.OpCreated {
		return r, false, nil
	}
	if err := json.Unmarshal(e.Data, &r); err != nil || r.ID == uuid.Nil || r.AssetID == uuid.Nil || r.Meter == "" {
		return r, false, fmt.Errorf("meter reading event %s: data is no reading (%v)", e.ID, err)
	}
	if r.RecordedAt.IsZero() {
		r.RecordedAt = e.Time
	}
	return r, true, nil
}

// columnsOf are readings as the columns of known_readings, one array a
// column, in the table's order.
func columnsOf(rs []Reading) []any {
	ids, assets, meters := make([]uuid.UUID, len(rs)), make([]uuid.UUID, len(rs)), make([]string, len(rs))
	values, readAt, resets, recordedAt := make([]float64, len(rs)), make([]time.Time, len(rs)), make([]bool, len(rs)), make([]time.Time, len(rs))
	for i, r := range rs {
		ids[i], assets[i], meters[i], values[i], readAt[i], resets[i], recordedAt[i] = r.ID, r.AssetID, r.Meter, r.Value, r.ReadAt, r.Reset, r.RecordedAt
	}
	return []any{ids, assets, meters, values, readAt, resets, recordedAt}
}
