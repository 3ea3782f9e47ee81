package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Fencing: a leader's publishes carry its epoch, and the stream refuses
// those of a leader that an other has replaced.
//
// The epoch is the stream sequence of the leader's fence message, one
// message on the schema's fence subject (<prefix>-leaders.<schema>, outside
// the events' subjects, so no consumer of the events sees it). A replica
// that takes the relay's lock publishes a fence before its first round,
// with JetStream's compare-and-set: expected last sequence of the fence
// subject = the one it read there, so of two replicas that both believe
// they lead only one fence lands. Every event the leader then publishes
// carries its epoch (a Registry-Leader-Epoch header), and the first of
// each wave carries Nats-Expected-Last-Subject-Sequence = its epoch for
// the fence subject and is acknowledged before the rest of the wave is
// sent, so JetStream stores a wave only while that fence is still the
// last one. (Not every event: a replicated stream refuses a check on a
// subject that another in-flight message checks, which would stop the
// pipelining of a wave.) A leader frozen
// between reading the outbox and publishing (SIGSTOP, a debugger, a node
// without CPU) loses its session and the lock; the replica that takes
// over fences; when the frozen one wakes, its first publish is refused
// (wrong last sequence, checked before the duplicate window, so it is
// refused even past that window, when it would otherwise be stored twice
// and out of order), counted in outbox_stale_publishes_refused_total, and
// the relay gives the lead up. Its round marks nothing (its session is
// gone), and the new leader has published those events already.
//
// Two windows are left. A leader frozen in the instant between its wave's
// checked first event being acknowledged and the rest being sent sends
// that rest when it wakes: JetStream drops what it has seen within the
// duplicate window. And a woken leader that publishes after its session
// ended but before the new leader's fence lands: those events were read
// from the outbox as it stood and are published again, by id, right after
// the fence: JetStream's duplicate window drops them, and they precede
// the new leader's events, so the order holds.
//
// A fence the stream dropped (older than nats.stream-max-age) refuses the
// leader's own publishes: the leader refreshes its fence every
// fenceRefresh with the same compare-and-set on its own epoch, and if it
// was dropped nonetheless (the stream purged or recreated), the leader
// stands down once and fences again at its next turn.

// EpochHeader carries the publishing leader's epoch on every event.
const EpochHeader = "Registry-Leader-Epoch"

// fenceRefresh is how often a leader publishes its fence again, on its own
// epoch, so the stream never ages it out under a leader that stays.
const fenceRefresh = time.Hour

// fenced is the stream's refusal of a stale leader's publish: the relay
// gives the lead up.
type fenced struct{ err error }

func (e fenced) Error() string {
	return "another replica took the lead (fenced out of the stream): " + e.err.Error()
}
func (e fenced) Unwrap() error { return e.err }

// wrongEpoch tells the stream's refusal of an expected last sequence that
// differs (not the replicated stream's refusal of a check it could not
// order, JSErrCodeStreamWrongLastSequenceConstant, which passes).
func wrongEpoch(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// fenceSubject is the schema's fence subject.
func (r *Relay) fenceSubject() string { return r.cfg.SubjectPrefix + "-leaders." + r.schema }

// fence publishes the leader's fence and keeps its sequence as the epoch.
// A leader just elected (epoch 0) compares with the last fence it reads;
// a leader refreshing its fence compares with its own epoch, so a stale
// one cannot take the fence back.
func (r *Relay) fence(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	expect := r.epoch
	if expect == 0 {
		s, err := r.js.Stream(ctx, r.cfg.Stream)
		if err != nil {
			return natsError{fmt.Errorf("fence: %w", err)}
		}
		last, err := s.GetLastMsgForSubject(ctx, r.fenceSubject())
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return natsError{fmt.Errorf("fence: %w", err)}
		default:
			expect = last.Sequence
		}
	}
	msg := &nats.Msg{Subject: r.fenceSubject(), Data: []byte(`{"schema":"` + r.schema + `","previous":` + strconv.FormatUint(expect, 10) + `}`)}
	ack, err := r.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(r.cfg.Stream), jetstream.WithExpectLastSequencePerSubject(expect))
	switch {
	case err != nil && wrongEpoch(err):
		staleRefused.WithLabelValues(r.schema).Inc()
		return fenced{err}
	case err != nil:
		return natsError{fmt.Errorf("fence: %w", err)}
	}
	r.epoch, r.fencedAt = ack.Sequence, time.Now()
	leaderEpoch.WithLabelValues(r.schema).Set(float64(ack.Sequence))
	return nil
}

// epochOpts marks msg with this leader's epoch and, checked, returns the
// option that makes the publish hold only under this leader's fence.
func (r *Relay) epochOpts(msg *nats.Msg, checked bool) []jetstream.PublishOpt {
	msg.Header.Set(EpochHeader, strconv.FormatUint(r.epoch, 10))
	if !checked {
		return nil
	}
	return []jetstream.PublishOpt{jetstream.WithExpectLastSequenceForSubject(r.epoch, r.fenceSubject())}
}
