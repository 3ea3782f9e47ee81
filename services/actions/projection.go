package actions

// The projection of the assets service's assets into known_assets, the
// compliance read model's list of assets: kept from the assets' change
// events (asset.created, asset.updated, asset.deleted) and rebuilt from the
// assets service's internal listing when it must be (docs/operations.md).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/due"
)

// assetsProjection names the projection's row in projection_floor.
const assetsProjection = "assets"

// assetEvent is what the projection needs of an asset's change event.
type assetEvent struct {
	ID          uuid.UUID // the event's id (UUIDv7): later events have greater ids
	AssetID     uuid.UUID
	AssetTypeID uuid.UUID // the asset's type after the change (created, updated)
	Op          string    // outbox.OpCreated, OpUpdated or OpDeleted
	// Owner is the asset's owner organization after the change ("" none);
	// OwnerChanged says an update changed it.
	Owner        string
	OwnerChanged bool
	// Parent is the asset's parent_asset_id after the change (nil: none,
	// or deleted).
	Parent *uuid.UUID
}

// assetEventOf reads an asset event off the wire; ok is false for events of
// other kinds.
func assetEventOf(e outbox.Event) (ev assetEvent, ok bool, err error) {
	kind, op, found := cutType(e.Type)
	if !found || kind != outbox.KindAsset {
		return ev, false, nil
	}
	if ev.ID, err = uuid.Parse(e.ID); err != nil {
		return ev, false, fmt.Errorf("asset event id %q: %w", e.ID, err)
	}
	if ev.AssetID, err = uuid.Parse(e.Subject.ID); err != nil {
		return ev, false, fmt.Errorf("asset event %s: subject id %q: %w", e.ID, e.Subject.ID, err)
	}
	ev.Op = op
	if op == outbox.OpDeleted {
		return ev, true, nil
	}
	var data struct {
		AssetTypeID uuid.UUID  `json:"asset_type_id"`
		Owner       *string    `json:"owner_organization_id"`
		Parent      *uuid.UUID `json:"parent_asset_id"`
	}
	if err := json.Unmarshal(e.Data, &data); err != nil || data.AssetTypeID == uuid.Nil {
		return ev, false, fmt.Errorf("asset event %s: data has no asset_type_id", e.ID)
	}
	ev.AssetTypeID, ev.Parent = data.AssetTypeID, data.Parent
	if data.Owner != nil {
		ev.Owner = *data.Owner
	}
	_, ev.OwnerChanged = e.Changes["owner_organization_id"]
	return ev, true, nil
}

// cutType splits "<kind>.<op>".
func cutType(t string) (kind, op string, ok bool) {
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] == '.' {
			return t[:i], t[i+1:], true
		}
	}
	return "", "", false
}

// Projection keeps known_assets, and tells the copy of who sees which
// asset (pkg/access) each asset's owner as its events say.
type Projection struct {
	store  *Store
	access *access.Store
	due    *due.Store // parent links, meter readings
}

// NewProjection returns the projection over the actions store.
func NewProjection(s *Store) *Projection {
	return &Projection{store: s, access: access.New(s.Store, nil).Store(), due: due.NewStore(s.Store)}
}

// ApplyAsset applies one asset event. It is idempotent and indifferent to
// order: an event older than the one a row holds changes nothing, a
// delete is final (the row stays as a tombstone, so a create replayed
// after it does not bring the asset back), and an event older than the
// floor of the last rebuild is already in the rows. A tombstone keeps its
// asset's type and, in event_id, when the delete was recorded (UUIDv7):
// GET /compliance?as_of of a day before shows the asset as it was.
func (p *Projection) ApplyAsset(ctx context.Context, ev assetEvent) error {
	const notBelowFloor = `NOT EXISTS (SELECT FROM projection_floor WHERE projection = 'assets' AND floor > $3)`
	var sql string
	switch ev.Op {
	case outbox.OpCreated, outbox.OpUpdated:
		sql = `INSERT INTO known_assets (asset_id, asset_type_id, event_id) SELECT $1, $2, $3 WHERE ` + notBelowFloor + `
			ON CONFLICT (asset_id) DO UPDATE SET asset_type_id = excluded.asset_type_id, event_id = excluded.event_id
			WHERE NOT known_assets.deleted AND known_assets.event_id < excluded.event_id`
	case outbox.OpDeleted:
		sql = `INSERT INTO known_assets (asset_id, asset_type_id, deleted, event_id) SELECT $1, $2, true, $3 WHERE ` + notBelowFloor + `
			ON CONFLICT (asset_id) DO UPDATE SET deleted = true,
				event_id = GREATEST(known_assets.event_id, excluded.event_id)`
	default:
		return nil // an operation this projection does not know changes nothing it keeps
	}
	var typeID *uuid.UUID
	if ev.Op != outbox.OpDeleted {
		typeID = &ev.AssetTypeID
	}
	if _, err := p.store.Pool.Exec(ctx, sql, ev.AssetID, typeID, ev.ID); err != nil {
		return store.Classify(err, "apply asset event")
	}
	if err := p.due.ApplyParent(ctx, ev.ID, ev.AssetID, ev.Parent); err != nil {
		return err
	}
	// An asset no action names yet is filtered right from its creation
	// on: the copy learns its owner at version 0, which never overwrites
	// a change the copy has from the assets service's log (version 1 on).
	if ev.Op == outbox.OpCreated || (ev.Op == outbox.OpUpdated && ev.OwnerChanged) {
		return p.access.Learn(ctx, []model.Access{{AssetID: ev.AssetID.String(), OwnerOrganizationID: ev.Owner}})
	}
	return nil
}

// ListedAsset is an asset as the assets service lists it.
type ListedAsset struct {
	ID          uuid.UUID
	AssetTypeID uuid.UUID
	Parent      *uuid.UUID // its parent_asset_id (nil: none)
}

// AssetLister pages through every asset of the assets service in id
// order: after uuid.Nil is the first page, an empty page the end.
type AssetLister func(ctx context.Context, after uuid.UUID) ([]ListedAsset, error)

// RebuildMargin is how long before a rebuild's start its floor lies: longer
// than any write of an asset can take between making its event's id and
// committing, so every event older than the floor was committed before the
// listing began and is in it.
const RebuildMargin = time.Minute

// RebuildReport says what a rebuild did: the assets listed, the rows of
// assets not listed (nor written by a newer event) removed, the latest
// actions written.
type RebuildReport struct {
	Assets, Removed, Latest int64
	Readings                int64 // meter readings listed, and kept where the model lacked them (spec.go's rebuild)
}

// Rebuild makes the read model again from its sources: known_assets and
// the parent links (known_parents, what include=components rolls up) from
// the assets service's listing, latest_actions from the actions table.
// The consumer may keep running: the floor, set first, makes it skip the
// events the listing already holds, and an event newer than the floor
// wins over the listing's row. Readers see the old rows until each is
// replaced; rows of assets the listing does not have (and no newer event
// wrote) are removed at the end.
func (p *Projection) Rebuild(ctx context.Context, list AssetLister) (RebuildReport, error) {
	var report RebuildReport
	floor := uuidAt(time.Now().Add(-RebuildMargin))
	if _, err := p.store.Pool.Exec(ctx, `INSERT INTO projection_floor (projection, floor) VALUES ($1, $2)
		ON CONFLICT (projection) DO UPDATE SET floor = excluded.floor`, assetsProjection, floor); err != nil {
		return report, store.Classify(err, "set projection floor")
	}
	after := uuid.Nil
	for {
		page, err := list(ctx, after)
		if err != nil {
			return report, fmt.Errorf("list assets after %s: %w", after, err)
		}
		if len(page) == 0 {
			break
		}
		ids, types, parents := make([]uuid.UUID, len(page)), make([]uuid.UUID, len(page)), make([]*uuid.UUID, len(page))
		for i, a := range page {
			ids[i], types[i], parents[i] = a.ID, a.AssetTypeID, a.Parent
		}
		_, err = p.store.Pool.Exec(ctx, `INSERT INTO known_assets (asset_id, asset_type_id, event_id)
			SELECT id, type, $3 FROM unnest($1::uuid[], $2::uuid[]) AS listed(id, type)
			ON CONFLICT (asset_id) DO UPDATE SET asset_type_id = excluded.asset_type_id, deleted = false, event_id = excluded.event_id
			WHERE known_assets.event_id < excluded.event_id`, ids, types, floor)
		if err != nil {
			return report, store.Classify(err, "rebuild known assets")
		}
		if err := p.due.RelearnParents(ctx, floor, ids, parents); err != nil {
			return report, err
		}
		report.Assets += int64(len(page))
		after = page[len(page)-1].ID
	}
	tag, err := p.store.Pool.Exec(ctx, `DELETE FROM known_assets WHERE event_id < $1`, floor)
	if err != nil {
		return report, store.Classify(err, "remove unlisted assets")
	}
	report.Removed = tag.RowsAffected()
	if err := p.due.EndUnlistedParents(ctx, floor); err != nil {
		return report, err
	}
	report.Latest, err = p.store.RebuildLatest(ctx)
	return report, err
}

// uuidAt is the smallest UUIDv7 of t's millisecond: every id made at or
// after t sorts after it.
func uuidAt(t time.Time) uuid.UUID {
	var u uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(u[:6], ms[2:])
	u[6] = 0x70 // version 7
	u[8] = 0x80 // RFC 4122 variant
	return u
}

// consumerName is the projection's durable JetStream consumer: every
// replica of the actions service shares it, so each event is applied by
// one of them (the order does not matter, see ApplyAsset). It acknowledges
// a batch by its last event (AckAll); consumerNameBefore is the consumer of
// earlier releases, which acknowledged each event and which it replaces
// from where that one's acknowledgements end (outbox.Follower.Replaces).
const (
	consumerName       = "actions-compliance-assets-batches"
	consumerNameBefore = "actions-compliance-assets"
)

// projectionLag is how long after its write an asset event was applied:
// the read model's delay behind the assets service.
var projectionLag = promauto.NewHistogram(prometheus.HistogramOpts{
	Name:    "compliance_projection_lag_seconds",
	Help:    "Time from an asset event's commit to its application to the compliance read model.",
	Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2, 5, 10, 30, 60},
})

// Job is the durable consumer of the asset events (outbox.Follower) as
// the process's job. A batch is applied in order and acknowledged by its
// last event, one acknowledgement instead of one per event; an event that
// fails to apply (the database is down) is tried again every second, the
// batch unacknowledged, until it is applied (acknowledging a later one
// would acknowledge it too), and one that cannot be read is logged and
// passed over.
func (p *Projection) Job(nc *nats.Conn, cfg outbox.Config, logger log.Logger) job.Job {
	return outbox.Follower{Name: consumerName, Kinds: []string{outbox.KindAsset, outbox.KindMeterReading}, AckAll: true,
		Replaces: consumerNameBefore,
		Handle: func(ctx context.Context, msgs []jetstream.Msg) {
			for _, msg := range msgs {
				if !p.handle(ctx, msg, logger) {
					return
				}
			}
			_ = msgs[len(msgs)-1].Ack()
		}}.Job(nc, cfg, logger)
}

// handle applies one message, trying again every second while it fails;
// false when ctx ended first.
func (p *Projection) handle(ctx context.Context, msg jetstream.Msg, logger log.Logger) bool {
	var e outbox.Event
	err := json.Unmarshal(msg.Data(), &e)
	ev, ok, err2 := assetEventOf(e)
	reading, isReading, err3 := due.ReadingOf(e) // a meter reading: the usage of a plan's row
	if err != nil || err2 != nil || err3 != nil {
		level.Error(logger).Log("msg", "compliance projection: dropping an event it cannot read", "subject", msg.Subject(),
			"err", errors.Join(err, err2, err3))
		return true
	}
	if !ok && !isReading {
		return true
	}
	for {
		apply, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		if ok {
			err = p.ApplyAsset(apply, ev)
		} else {
			err = p.due.ApplyReading(apply, reading)
		}
		cancel()
		if err == nil {
			break
		}
		level.Warn(logger).Log("msg", "compliance projection: applying an asset event failed; trying again", "event", e.ID, "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
	if !e.Time.IsZero() {
		projectionLag.Observe(time.Since(e.Time).Seconds())
	}
	return true
}
