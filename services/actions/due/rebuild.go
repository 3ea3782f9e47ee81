package due

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/refs"
)

// readingsPage is how many readings one call of the listing asks for.
const readingsPage = 5000

// RelearnReadings keeps every meter reading the assets service lists (its
// side of the reference protocol, kind meter_reading, in id order) that
// the read model lacks: one whose event it missed, or every one of a read
// model made anew. It returns how many readings were listed.
func (s *Store) RelearnReadings(ctx context.Context, registry *refs.Registry) (listed int64, err error) {
	for after := uuid.Nil; ; {
		found, err := registry.ListOwned(ctx, "meter_reading", after, readingsPage)
		if err != nil || len(found) == 0 {
			return listed, err
		}
		readings := make([]Reading, len(found))
		for i, f := range found {
			if readings[i], err = readingOf(f); err != nil {
				return listed, fmt.Errorf("meter reading %s: %w", f.ID, err)
			}
		}
		if err := s.ApplyReadings(ctx, readings); err != nil {
			return listed, err
		}
		listed += int64(len(found))
		after = found[len(found)-1].ID
	}
}

// readingOf reads a listed reading's attributes (the assets service's
// listing writes them as the reading's event does).
func readingOf(f refs.Found) (Reading, error) {
	r := Reading{ID: f.ID, Meter: f.Attrs["meter"]}
	var errs [5]error
	r.AssetID, errs[0] = uuid.Parse(f.Attrs["asset_id"])
	r.Value, errs[1] = strconv.ParseFloat(f.Attrs["value"], 64)
	r.ReadAt, errs[2] = time.Parse(time.RFC3339Nano, f.Attrs["read_at"])
	r.Reset, errs[3] = strconv.ParseBool(f.Attrs["reset"])
	r.RecordedAt, errs[4] = time.Parse(time.RFC3339Nano, f.Attrs["created_at"])
	for _, err := range errs {
		if err != nil {
			return r, err
		}
	}
	if r.Meter == "" {
		return r, fmt.Errorf("no meter")
	}
	return r, nil
}
