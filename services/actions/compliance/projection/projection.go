// Package projection is the compliance component's projection of the
// assets service's assets into known_assets, the read model's list of
// assets that GET /compliance pages through: kept from the assets' change
// events (asset.created, asset.updated, asset.deleted) and rebuilt from
// the assets service's internal listing when it must be
// (docs/operations.md). Meter readings go to the due component's rows
// from the same stream.
package projection

import (
	"context"
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
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/due"
)

// assetsProjection names the projection's row in projection_floor.
const assetsProjection = "assets"

// Projection keeps known_assets, and tells the copy of who sees which
// asset (pkg/access) each asset's owner as its events say.
type Projection struct {
	store  *Store
	latest *compliance.Store // latest_actions, which a rebuild recomputes
	access *access.Store
	due    *due.Store // parent links, meter readings
}

// New returns the projection over its store.
func New(s *Store) *Projection {
	return &Projection{store: s, latest: compliance.NewStore(s.Store), access: access.New(s.Store, nil).Store(),
		due: due.NewStore(s.Store)}
}

// ApplyAsset applies one asset event. It is idempotent and indifferent to
// order: an event older than the one a row holds changes nothing, a
// delete is final (the row stays as a tombstone, so a create replayed
// after it does not bring the asset back), and an event older than the
// floor of the last rebuild is already in the rows. A tombstone keeps its
// asset's type and, in event_id, when the delete was recorded (UUIDv7):
// GET /compliance?as_of of a day before shows the asset as it was.
func (p *Projection) ApplyAsset(ctx context.Context, ev AssetEvent) error {
	if err := p.store.applyAsset(ctx, ev); err != nil {
		return err
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
	floor := compliance.UUIDAt(time.Now().Add(-RebuildMargin))
	if err := p.store.setFloor(ctx, assetsProjection, floor); err != nil {
		return report, err
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
		if err := p.store.putListed(ctx, page, floor); err != nil {
			return report, err
		}
		ids, parents := make([]uuid.UUID, len(page)), make([]*uuid.UUID, len(page))
		for i, a := range page {
			ids[i], parents[i] = a.ID, a.Parent
		}
		if err := p.due.RelearnParents(ctx, floor, ids, parents); err != nil {
			return report, err
		}
		report.Assets += int64(len(page))
		after = page[len(page)-1].ID
	}
	var err error
	if report.Removed, err = p.store.removeUnlisted(ctx, floor); err != nil {
		return report, err
	}
	if err := p.due.EndUnlistedParents(ctx, floor); err != nil {
		return report, err
	}
	report.Latest, err = p.latest.RebuildLatest(ctx)
	return report, err
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
// last event, one acknowledgement instead of one per event; its meter
// readings are kept together, in one statement (a batch of readings is
// a thousand events), after its asset events (the two touch different
// tables, and each is applied once whatever the order). What fails to
// apply (the database is down) is tried again every second, the batch
// unacknowledged, until it is applied (acknowledging a later event
// would acknowledge it too), and an event that cannot be read is logged
// and passed over.
func (p *Projection) Job(nc *nats.Conn, cfg outbox.Config, logger log.Logger) job.Job {
	return outbox.Follower{Name: consumerName, Kinds: []string{outbox.KindAsset, outbox.KindMeterReading}, AckAll: true,
		Replaces: consumerNameBefore,
		Handle: func(ctx context.Context, msgs []jetstream.Msg) {
			var readings []due.Reading
			var readAt []time.Time // the readings' events' commit times
			for _, msg := range msgs {
				ev, reading, t, kind := p.read(msg, logger)
				switch kind {
				case assetEvent:
					if !untilApplied(ctx, logger, "an asset event", func(ctx context.Context) error { return p.ApplyAsset(ctx, ev) }) {
						return
					}
					observeLag(t)
				case readingEvent:
					readings, readAt = append(readings, reading), append(readAt, t)
				}
			}
			if !untilApplied(ctx, logger, "meter readings", func(ctx context.Context) error { return p.due.ApplyReadings(ctx, readings) }) {
				return
			}
			for _, t := range readAt {
				observeLag(t)
			}
			_ = msgs[len(msgs)-1].Ack()
		}}.Job(nc, cfg, logger)
}

// What an event of the projection's stream is to it.
const (
	otherEvent = iota
	assetEvent
	readingEvent
)

// read reads one message: an asset event, a meter reading, or another
// (an event of another kind or operation, or one that cannot be read,
// which is logged), with its commit time.
func (p *Projection) read(msg jetstream.Msg, logger log.Logger) (AssetEvent, due.Reading, time.Time, int) {
	var e outbox.Event
	err := json.Unmarshal(msg.Data(), &e)
	ev, ok, err2 := AssetEventOf(e)
	reading, isReading, err3 := due.ReadingOf(e) // a meter reading: the usage of a plan's row
	switch {
	case err != nil || err2 != nil || err3 != nil:
		level.Error(logger).Log("msg", "compliance projection: dropping an event it cannot read", "subject", msg.Subject(),
			"err", errors.Join(err, err2, err3))
	case ok:
		return ev, reading, e.Time, assetEvent
	case isReading:
		return ev, reading, e.Time, readingEvent
	}
	return ev, reading, e.Time, otherEvent
}

// untilApplied runs apply, trying again every second while it fails;
// false when ctx ended first.
func untilApplied(ctx context.Context, logger log.Logger, what string, apply func(context.Context) error) bool {
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := apply(actx)
		cancel()
		if err == nil {
			return true
		}
		level.Warn(logger).Log("msg", "compliance projection: applying "+what+" failed; trying again", "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
}

// observeLag records how long after its commit at t an event was applied.
func observeLag(t time.Time) {
	if !t.IsZero() {
		projectionLag.Observe(time.Since(t).Seconds())
	}
}
