package meters

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
)

const readingColumns = `r.id, r.asset_id, r.meter, r.value, r.read_at, r.reset, r.created_at, r.created_by`

// Store is the PostgreSQL persistence of meter readings, in the assets
// schema beside the assets they belong to.
type Store struct{ *store.Store }

// NewStore returns the meter readings' store over the kit's store.
func NewStore(s *store.Store) *Store { return &Store{s} }

// CreateReading records a reading of asset's meter by by. Readings of one
// (asset, meter) take turns on an advisory lock, so each is checked
// against neighbours no concurrent reading changes before it commits; the
// asset is held (FOR KEY SHARE) so that it is not deleted meanwhile. An
// asset that does not exist is a 404.
func (s *Store) CreateReading(ctx context.Context, by model.Caller, assetID uuid.UUID, in reading) (Reading, error) {
	var out Reading
	err := s.Write(ctx, "create meter reading", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if _, err := store.One[assetRow](ctx, tx, "lock asset", "asset", assetID, `SELECT id FROM assets WHERE id = $1 FOR KEY SHARE`, assetID); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
			"meter:"+assetID.String()+":"+in.Meter); err != nil {
			return nil, store.Classify(err, "lock meter")
		}
		// The new reading comes after every reading of the same instant
		// (its id is the newest): those are before it, none is after.
		before, err := readNeighbour(ctx, tx, `SELECT id, value, read_at, reset FROM meter_readings
			WHERE asset_id = $1 AND meter = $2 AND read_at <= $3 ORDER BY read_at DESC, id DESC LIMIT 1`, assetID, in)
		if err != nil {
			return nil, err
		}
		after, err := readNeighbour(ctx, tx, `SELECT id, value, read_at, reset FROM meter_readings
			WHERE asset_id = $1 AND meter = $2 AND read_at > $3 ORDER BY read_at, id LIMIT 1`, assetID, in)
		if err != nil {
			return nil, err
		}
		if err := in.fits(before, after); err != nil {
			return nil, err
		}
		out, err = store.One[Reading](ctx, tx, "insert meter reading", "meter reading", uuid.Nil,
			`INSERT INTO meter_readings AS r (id, asset_id, meter, value, read_at, reset, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+readingColumns,
			store.NewID(), assetID, in.Meter, in.Value, in.ReadAt, in.Reset, by.Subject)
		if err != nil {
			return nil, err
		}
		return nil, s.Record(ctx, tx, by, outbox.Created(outbox.KindMeterReading, assetID.String(), out))
	})
	return out, err
}

// CreateReadings records a batch of readings of one asset (out[i] holds
// the error of an item refused before) in one transaction, as the single
// create would record them one after the other in the body's order: each
// is checked against the readings before it, the batch's own included,
// and a refused one leaves the others. The asset and every meter of the
// batch are locked first, the meters in name order, so two batches never
// wait for each other in a circle. The batch costs a few statements
// whatever its size (insertReadings); should they fail, the items are
// written one by one, each in a savepoint of its own.
func (s *Store) CreateReadings(ctx context.Context, by model.Caller, assetID uuid.UUID, in []reading, out []model.ItemOutcome) error {
	return s.WriteBatch(ctx, out, store.BatchWrite{
		Prepare: func(ctx context.Context, tx pgx.Tx, out []model.ItemOutcome) error {
			var meters []string
			for i := range in {
				if out[i].Err == nil {
					meters = append(meters, "meter:"+assetID.String()+":"+in[i].Meter)
				}
			}
			if _, err := store.One[assetRow](ctx, tx, "lock asset", "asset", assetID, `SELECT id FROM assets WHERE id = $1 FOR KEY SHARE`, assetID); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(m, 0)) FROM (SELECT DISTINCT unnest($1::text[]) AS m ORDER BY 1) k`, meters)
			return store.Classify(err, "lock meters")
		},
		All: func(ctx context.Context, pending []int) error {
			return s.Write(ctx, "create meter readings", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
				return nil, s.insertReadings(ctx, tx, by, assetID, in, pending, out)
			})
		},
		Item: func(ctx context.Context, i int) (model.ItemOutcome, error) {
			r, err := s.CreateReading(ctx, by, assetID, in[i])
			return model.ItemOutcome{ID: r.ID, Created: true}, err
		},
	})
}

// insertReadings writes the pending items of a batch whose meters the
// caller holds locked, in a few statements whatever the batch's size: one
// reads each meter's last reading; one, only for items placed before
// their meter's last reading (a reading recorded after the fact), reads
// their neighbours; the items are then checked in order (batchLine); one
// statement inserts those that fit and one records their events, one
// event per reading, as the single create records it. It sets the items'
// outcomes.
func (s *Store) insertReadings(ctx context.Context, tx pgx.Tx, by model.Caller, assetID uuid.UUID, in []reading, pending []int, out []model.ItemOutcome) error {
	var meters []string
	for _, i := range pending {
		if !slices.Contains(meters, in[i].Meter) {
			meters = append(meters, in[i].Meter)
		}
	}
	lasts, err := store.Many[meterLast](ctx, tx, "read meters' last readings", `SELECT m.meter, l.id, l.value, l.read_at, l.reset
		FROM unnest($2::text[]) AS m(meter) CROSS JOIN LATERAL (SELECT r.id, r.value, r.read_at, r.reset FROM meter_readings r
			WHERE r.asset_id = $1 AND r.meter = m.meter ORDER BY r.read_at DESC, r.id DESC LIMIT 1) l`, assetID, meters)
	if err != nil {
		return err
	}
	around, early := placeBatch(in, pending, lasts)
	if len(early.items) > 0 {
		found, err := store.Many[neighbours](ctx, tx, "read neighbouring readings", `SELECT e.item,
				b.id AS before_id, b.value AS before_value, b.read_at AS before_read_at, b.reset AS before_reset,
				a.id AS after_id, a.value AS after_value, a.read_at AS after_read_at, a.reset AS after_reset
			FROM unnest($2::int[], $3::text[], $4::timestamptz[]) AS e(item, meter, read_at)
			LEFT JOIN LATERAL (SELECT r.id, r.value, r.read_at, r.reset FROM meter_readings r
				WHERE r.asset_id = $1 AND r.meter = e.meter AND r.read_at <= e.read_at ORDER BY r.read_at DESC, r.id DESC LIMIT 1) b ON true
			LEFT JOIN LATERAL (SELECT r.id, r.value, r.read_at, r.reset FROM meter_readings r
				WHERE r.asset_id = $1 AND r.meter = e.meter AND r.read_at > e.read_at ORDER BY r.read_at, r.id LIMIT 1) a ON true`,
			assetID, early.items, early.meters, early.times)
		if err != nil {
			return err
		}
		for _, n := range found {
			around[int(n.Item)] = n.committed()
		}
	}

	var line batchLine
	for _, i := range pending {
		id := store.NewID()
		if out[i].Err = line.accept(id, in[i], around[i]); out[i].Err == nil {
			out[i] = model.ItemOutcome{ID: id, Created: true}
		}
	}
	ids := line.ids
	if len(ids) == 0 {
		return nil
	}
	inserted, err := store.Many[Reading](ctx, tx, "insert meter readings", `INSERT INTO meter_readings AS r (id, asset_id, meter, value, read_at, reset, created_by)
		SELECT i.id, $1, i.meter, i.value, i.read_at, i.reset, $2
		FROM unnest($3::uuid[], $4::text[], $5::float8[], $6::timestamptz[], $7::bool[]) WITH ORDINALITY AS i(id, meter, value, read_at, reset, n)
		ORDER BY i.n RETURNING `+readingColumns, assetID, by.Subject, ids, line.meters, line.values, line.times, line.resets)
	if err != nil {
		return err
	}
	byID := make(map[uuid.UUID]Reading, len(inserted))
	for _, r := range inserted {
		byID[r.ID] = r
	}
	events := make([]outbox.Change, len(ids))
	for k, id := range ids {
		r, ok := byID[id]
		if !ok {
			return fmt.Errorf("meter readings: reading %s was not inserted", id)
		}
		events[k] = outbox.Created(outbox.KindMeterReading, assetID.String(), r)
	}
	return s.Record(ctx, tx, by, events...)
}

// readNeighbour reads the reading sql finds next to in (nil: none).
func readNeighbour(ctx context.Context, tx pgx.Tx, sql string, assetID uuid.UUID, in reading) (*neighbour, error) {
	found, err := store.Many[neighbour](ctx, tx, "read neighbouring reading", sql, assetID, in.Meter, in.ReadAt)
	if err != nil || len(found) == 0 {
		return nil, err
	}
	return &found[0], nil
}

// assetRow is an asset as far as its readings need it: that it exists.
type assetRow struct {
	ID uuid.UUID `db:"id"`
}

// GetReading reads one reading of an asset.
func (s *Store) GetReading(ctx context.Context, assetID, id uuid.UUID) (Reading, error) {
	return store.One[Reading](ctx, s.DB(ctx), "get meter reading", "meter reading", id,
		`SELECT `+readingColumns+` FROM meter_readings r WHERE r.asset_id = $1 AND r.id = $2`, assetID, id)
}

// ListReadings reads one page of an asset's readings, oldest first
// (read_at, then creation). The cursor is the last reading's id; a
// reading never changes, so its read_at places the next page. An asset
// that does not exist is a 404.
func (s *Store) ListReadings(ctx context.Context, f ReadingFilter, page model.Page) (model.Paged[Reading], error) {
	q := s.Reads(ctx)
	if _, err := store.One[assetRow](ctx, q, "look up asset", "asset", f.AssetID, `SELECT id FROM assets WHERE id = $1`, f.AssetID); err != nil {
		return model.Paged[Reading]{}, err
	}
	var where store.Filter
	where.Where("r.asset_id = ?", f.AssetID)
	store.Equal(&where, "r.meter", f.Meter)
	if page.After != uuid.Nil {
		where.Where("(r.read_at, r.id) > (SELECT c.read_at, c.id FROM meter_readings c WHERE c.id = ?)", page.After)
	}
	items, err := store.Many[Reading](ctx, q, "list meter readings", `SELECT `+readingColumns+` FROM meter_readings r`+where.SQL()+
		fmt.Sprintf(` ORDER BY r.read_at, r.id LIMIT %d`, page.Limit+1), where.Args()...)
	if err != nil {
		return model.Paged[Reading]{}, err
	}
	return model.TrimPage(items, page, func(r Reading) uuid.UUID { return r.ID }), nil
}
