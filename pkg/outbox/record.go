package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
)

// Change is one change of one resource, as a write records it.
type Change struct {
	Kind string // KindOrganization, ...
	ID   string // the resource's id (a link's "<person_id>:<organization_id>:<relation_type>")
	Op   string // OpCreated, OpUpdated or OpDeleted
	// Data is the resource as GET answers it after the change (before it,
	// for a delete): a value model.Marshal renders as the GET does, or the
	// rendered json.RawMessage.
	Data any
	// Old is, for an update, the resource as GET answered it before the
	// change; changes are computed from the two.
	Old any
}

// Created, Updated and Deleted are the changes of one resource.
func Created(kind, id string, data any) Change {
	return Change{Kind: kind, ID: id, Op: OpCreated, Data: data}
}

// Updated is an update from old to data (both as GET answers them).
func Updated(kind, id string, old, data any) Change {
	return Change{Kind: kind, ID: id, Op: OpUpdated, Data: data, Old: old}
}

// Deleted is a delete of what GET answered as data.
func Deleted(kind, id string, data any) Change {
	return Change{Kind: kind, ID: id, Op: OpDeleted, Data: data}
}

// Recorder records change events in the outbox table of one schema, inside
// the transaction of the write that makes them, and wakes this process's
// relay once such a write has committed (Wake).
type Recorder struct {
	off  bool
	wake chan struct{}
}

// NewRecorder returns the recorder of a service. With cfg.Record false it
// records nothing (for measuring what events cost).
func NewRecorder(cfg Config) *Recorder {
	return &Recorder{off: !cfg.Record, wake: make(chan struct{}, 1)}
}

// Wake tells this process's relay that a write with events committed. It
// never blocks; wake-ups that come while one is pending are one. The store
// calls it after the commit (a relay woken before the commit would not see
// the events yet).
//
// Not pg_notify: PostgreSQL serializes the commits of every transaction
// that notifies, in the whole database, to order the notifications, so
// writes that notify would no longer commit together (group commit) and a
// busy registry would write at the pace of one WAL flush at a time. The
// relay of another replica finds the events within its poll interval.
func (r *Recorder) Wake() {
	if r == nil {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// woken is what the relay of this process waits on besides its poll.
func (r *Recorder) woken() <-chan struct{} {
	if r == nil {
		return nil
	}
	return r.wake
}

// Record stores the events of changes in tx, the write's own transaction:
// they commit with the write or not at all. The actor is by's subject and
// the request id by's. An update that changed no top-level field records
// nothing. A nil Recorder records nothing either (a store without events).
func (r *Recorder) Record(ctx context.Context, tx pgx.Tx, by model.Caller, changes ...Change) error {
	if r == nil || r.off || len(changes) == 0 {
		return nil
	}
	actor, requestID := by.Subject, by.RequestID
	var ids []uuid.UUID
	var kinds, subjects, ops, datas []string
	var changeTexts []*string
	for _, c := range changes {
		data, diff, err := c.render()
		if err != nil {
			return err
		}
		if c.Op == OpUpdated && len(diff) == 0 {
			continue
		}
		var changesJSON []byte
		if diff != nil {
			if changesJSON, err = model.Marshal(diff); err != nil {
				return fmt.Errorf("outbox: render changes of %s %s: %w", c.Kind, c.ID, err)
			}
		}
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("outbox: event id: %w", err)
		}
		// data and changes go in as text: the json columns keep them as
		// they are (pgx would send []byte to json as bytea otherwise).
		var changesText *string
		if changesJSON != nil {
			s := string(changesJSON)
			changesText = &s
		}
		ids, kinds, subjects, ops = append(ids, id), append(kinds, c.Kind), append(subjects, c.ID), append(ops, c.Op)
		datas, changeTexts = append(datas, string(data)), append(changeTexts, changesText)
	}
	var sql string
	var args []any
	switch len(ids) {
	case 0:
		return nil
	case 1:
		sql, args = `INSERT INTO outbox (event_id, kind, subject_id, op, actor, request_id, data, changes)
			VALUES ($1, $2, $3, $4, $5, $6, $7::json, $8::json)`,
			[]any{ids[0], kinds[0], subjects[0], ops[0], actor, requestID, datas[0], changeTexts[0]}
	default:
		// Several events (a batch's) are one statement, whatever their
		// number, in order: the outbox's ids (the relay's order) follow
		// the rows as the statement produces them.
		sql, args = `INSERT INTO outbox (event_id, kind, subject_id, op, actor, request_id, data, changes)
			SELECT e.event_id, e.kind, e.subject_id, e.op, $5, $6, e.data::json, e.changes::json
			FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $7::text[], $8::text[])
				WITH ORDINALITY AS e(event_id, kind, subject_id, op, data, changes, n)
			ORDER BY e.n`,
			[]any{ids, kinds, subjects, ops, actor, requestID, datas, changeTexts}
	}
	if d, ok := tx.(deferrer); ok {
		d.Defer(sql, args...)
		return nil
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("outbox: record %d events (%s.%s %s first): %w", len(ids), changes[0].Kind, changes[0].Op, changes[0].ID, err)
	}
	return nil
}

// deferrer is a transaction that sends a statement whose result nobody
// reads with its next round trip, at the latest with its COMMIT (the
// store's write transactions): an event then costs the write no round trip
// of its own. If the insert fails, the statement it travels with (or the
// commit) fails, and the write with it.
type deferrer interface {
	Defer(sql string, args ...any)
}

// render returns the change's data as JSON and, for an update, its
// changes.
func (c Change) render() (json.RawMessage, map[string][2]json.RawMessage, error) {
	if !slices.Contains(Kinds, c.Kind) || (c.Op != OpCreated && c.Op != OpUpdated && c.Op != OpDeleted) || c.ID == "" {
		return nil, nil, fmt.Errorf("outbox: %q.%q of %q is no event", c.Kind, c.Op, c.ID)
	}
	data, err := asJSON(c.Data)
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: render %s %s: %w", c.Kind, c.ID, err)
	}
	if c.Op != OpUpdated {
		return data, nil, nil
	}
	old, err := asJSON(c.Old)
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: render %s %s as it was: %w", c.Kind, c.ID, err)
	}
	diff, err := Diff(old, data)
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: changes of %s %s: %w", c.Kind, c.ID, err)
	}
	return data, diff, nil
}

// asJSON renders a change's resource as its GET answer does
// (model.Marshal: no HTML escaping, which would make an event up to six
// times the size of what was sent).
func asJSON(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case json.RawMessage:
		return v, nil
	case []byte:
		return v, nil
	}
	return model.Marshal(v)
}

// Diff is {field: [old, new]} for each top-level field of two JSON objects
// that differs; a field only one of them has is null in the other.
// Values are compared as compacted JSON text.
func Diff(old, new json.RawMessage) (map[string][2]json.RawMessage, error) {
	var before, after map[string]json.RawMessage
	if err := json.Unmarshal(old, &before); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(new, &after); err != nil {
		return nil, err
	}
	diff := map[string][2]json.RawMessage{}
	fields := slices.Sorted(maps.Keys(before))
	for k := range after {
		if _, ok := before[k]; !ok {
			fields = append(fields, k)
		}
	}
	null := json.RawMessage("null")
	for _, k := range fields {
		b, a := before[k], after[k]
		if b == nil {
			b = null
		}
		if a == nil {
			a = null
		}
		if !sameJSON(b, a) {
			diff[k] = [2]json.RawMessage{b, a}
		}
	}
	return diff, nil
}

func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
