package tlog

import (
	"context"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/assetregistry/registry/pkg/telemetry"
)

// The metrics of the log (the chart's PrometheusRule alerts on them: the
// log not signed, or not matching what was signed).
var (
	logSize = telemetry.NewGauge("registry_log_leaves",
		"Leaves of the transparency log (reported by the leading replica).")
	checkpointSize = telemetry.NewGauge("registry_log_checkpoint_leaves",
		"Leaves of the latest signed checkpoint (reported by the leading replica).")
	auditProblems = telemetry.NewGauge("registry_log_audit_mismatches",
		"What the last self-audit found stored that does not match a signed checkpoint (0: everything matches).")
	auditTime = telemetry.NewGauge("registry_log_audit_timestamp_seconds",
		"When the last self-audit of the log completed (Unix seconds).")
	checkpointTime = telemetry.NewGauge("registry_log_checkpoint_timestamp_seconds",
		"When the leading replica last signed a new checkpoint (Unix seconds).")
)

func observeAudit(r AuditReport) {
	auditProblems.Set(float64(len(r.Problems)))
	auditTime.SetToCurrentTime()
}

// Checkpointer is the leader's job that signs the log as it grew.
func Checkpointer(st *Store, keys LogKeys, logger log.Logger) func(context.Context) {
	return func(ctx context.Context) {
		size, _, err := st.LogState(ctx)
		if err == nil {
			logSize.Set(float64(size))
		}
		if !keys.CanSign() {
			return
		}
		c, fresh, err := st.SignCheckpoint(ctx, keys)
		switch {
		case err != nil && ctx.Err() == nil:
			level.Warn(logger).Log("msg", "signing a checkpoint failed; trying again", "err", err)
		case err == nil:
			checkpointSize.Set(float64(c.Size))
			if fresh {
				checkpointTime.SetToCurrentTime()
			}
		}
	}
}

// Auditor is the leader's job that checks the stored log against its
// checkpoints; what it finds is logged and counted (the alert
// RegistryLogTampered).
func Auditor(st *Store, keys LogKeys, logger log.Logger) func(context.Context) {
	return func(ctx context.Context) {
		r, err := st.Audit(ctx, keys)
		if err != nil {
			if ctx.Err() == nil {
				level.Warn(logger).Log("msg", "auditing the log failed; trying at the next audit", "err", err)
			}
			return
		}
		observeAudit(r)
		for _, p := range r.Problems {
			level.Error(logger).Log("msg", "the stored log does not match what was signed", "problem", p)
		}
		level.Info(logger).Log("msg", "audited the log", "leaves", r.Leaves, "checkpoints", r.Checkpoints, "problems", len(r.Problems))
	}
}
