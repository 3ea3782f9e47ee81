// Package roller is the compliance component's job that announces
// compliance.updated events: whenever a compliance row's state changes,
// by a write (an action, an asset's projection row) or by the calendar (a
// date passing at midnight in the roller's zone, a plan changed), one
// event carries the row before and after. The roller compares the rows as
// they are now with compliance_announced, the rows as the last events
// said them, and in one transaction records the events of the
// differences (through the outbox) and the rows announced: exactly once
// across replicas and restarts, whatever moment a roller is killed at.
package roller

import (
	"context"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/model"
)

// rollBatch is how many assets one roller transaction announces.
const rollBatch = 2000

// Roller announces compliance transitions.
type Roller struct {
	store *Store
	zone  *time.Location
	now   func() time.Time
}

// New returns the roller over s; days begin at midnight in zone.
func New(s *Store, zone *time.Location) *Roller {
	return &Roller{store: s, zone: zone, now: time.Now}
}

// At is the roller with the clock now (tests move it days ahead).
func (r *Roller) At(now func() time.Time) *Roller {
	r.now = now
	return r
}

// today is the date in the roller's zone: what overdue is measured
// against in the events.
func (r *Roller) today() model.Date {
	t := r.now().In(r.zone)
	return model.DateOf(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC))
}

var (
	transitionsAnnounced = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "compliance_transitions_total",
		Help: "compliance.updated events written, by cause (write: a queued asset; pass: the calendar or a plan).",
	}, []string{"cause"})
	rollerBehind = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "compliance_roller_behind_seconds",
		Help: "How long the oldest unfinished work of the compliance roller has waited: since midnight of a day not yet rolled, or 0.",
	})
)

// Job runs the roller every interval: the queued assets first, then a
// pass over every asset when a day has begun or a plan changed since the
// last one.
func (r *Roller) Job(interval time.Duration, logger log.Logger) job.Job {
	return job.Every("compliance roller", interval, func(ctx context.Context) {
		if err := r.Tick(ctx); err != nil && ctx.Err() == nil {
			level.Warn(logger).Log("msg", "compliance roller: a batch failed; the next tick goes on from where it stopped", "err", err)
		}
	})
}

// Tick announces the queued assets, then goes on with (or begins) a pass
// when one is due, until there is nothing left or ctx ends.
func (r *Roller) Tick(ctx context.Context) error {
	for {
		n, written, err := r.store.announceQueued(ctx, r.today(), rollBatch)
		if err != nil {
			return err
		}
		transitionsAnnounced.WithLabelValues("write").Add(float64(written))
		if err := r.store.tookQueued(ctx, n); err != nil {
			return err
		}
		if n < rollBatch {
			break
		}
	}
	for {
		done, written, err := r.store.rollPass(ctx, r.today(), rollBatch, r.behind)
		if err != nil {
			return err
		}
		transitionsAnnounced.WithLabelValues("pass").Add(float64(written))
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// behind sets rollerBehind from the day of the pass in hand (nil: none
// is due).
func (r *Roller) behind(passFor *model.Date) {
	if passFor == nil {
		rollerBehind.Set(0)
		return
	}
	midnight := time.Date(passFor.Year, passFor.Month, passFor.Day, 0, 0, 0, 0, r.zone)
	rollerBehind.Set(max(0, r.now().Sub(midnight).Seconds()))
}
