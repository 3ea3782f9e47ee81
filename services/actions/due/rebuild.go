package due

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/refs"
)

// ReadingLister pages through every meter reading of the assets service
// in id order: after uuid.Nil is the first page, an empty page the end.
type ReadingLister func(ctx context.Context, after uuid.UUID) ([]Reading, error)

// readingsPage is how many readings one call of the listing asks for.
const readingsPage = 5000

// ListReadingsOf is the ReadingLister over the assets service's side of
// the reference protocol (its internal listing of kind meter_reading).
func ListReadingsOf(registry *refs.Registry) ReadingLister {
	return func(ctx context.Context, after uuid.UUID) ([]Reading, error) {
		found, err := registry.ListOwned(ctx, "meter_reading", after, readingsPage)
		if err != nil {
			return nil, err
		}
		out := make([]Reading, len(found))
		for i, f := range found {
			if out[i], err = readingOf(f); err != nil {
				return nil, fmt.Errorf("meter reading %s: %w", f.ID, err)
			}
		}
		return out, nil
	}
}

// readingOf reads a listed reading's attributes (meters.ListAll).
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

// RelearnReadings keeps every reading list lists that the read model
// lacks (one whose event it missed, or every one of a read model made
// anew); it returns how many it added.
func (s *Store) RelearnReadings(ctx context.Context, list ReadingLister) (int64, error) {
	var added int64
	after := uuid.Nil
	for {
		page, err := list(ctx, after)
		if err != nil {
			return added, fmt.Errorf("list meter readings after %s: %w", after, err)
		}
		if len(page) == 0 {
			return added, nil
		}
		n, err := s.ApplyReadings(ctx, page)
		if err != nil {
			return added, err
		}
		added += n
		after = page[len(page)-1].ID
	}
}
