package roller

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
)

// Actor is the actor of the transitions no client's write made: a
// date passing, a plan, an asset's projection, a rebuild. An action
// write's transition carries the write's own actor and request id.
const Actor = "registry:compliance"

// writer is who made a queued asset's last action write, from its event.
type writer struct {
	Actor     *string `db:"actor"`
	RequestID *string `db:"request_id"`
}

// caller is the actor and request id the transitions of w's writes
// carry: Actor's when no write names one.
func (w writer) caller() model.Caller {
	if w.Actor == nil {
		return model.Caller{Subject: Actor}
	}
	by := model.Caller{Subject: *w.Actor}
	if w.RequestID != nil {
		by.RequestID = *w.RequestID
	}
	return by
}

// queued is an entry of the queue: an asset a write queued, and the
// writer when its event named one.
type queued struct {
	ID      int64     `db:"id"`
	AssetID uuid.UUID `db:"asset_id"`
	writer
}

// lastWriters is each asset of taken once, in the queue's order, with
// its writer: the last entry that names one.
func lastWriters(taken []queued) ([]uuid.UUID, map[uuid.UUID]writer) {
	slices.SortFunc(taken, func(a, b queued) int { return cmp.Compare(a.ID, b.ID) })
	var ids []uuid.UUID
	writers := make(map[uuid.UUID]writer, len(taken))
	for _, q := range taken {
		w, seen := writers[q.AssetID]
		if !seen {
			ids = append(ids, q.AssetID)
		}
		if q.Actor != nil || !seen {
			w = q.writer
		}
		writers[q.AssetID] = w
	}
	return ids, writers
}

// announcedRow is a row as an event shows it, with its state before.
type announcedRow struct {
	AssetID    uuid.UUID       `db:"asset_id"`
	ActionType string          `db:"action_type"`
	Row        json.RawMessage `db:"row"`
	Before     json.RawMessage `db:"before"`
}

// run is a run of transitions one writer made.
type run struct {
	by      model.Caller
	changes []outbox.Change
}

// transitions are the events of changed, in its order, in runs of one
// writer: compliance.updated, subject the asset's compliance (kind
// compliance, the asset's id), data the row after, changes the fields
// that changed.
func transitions(changed []announcedRow, writers map[uuid.UUID]writer) []run {
	var runs []run
	for _, c := range changed {
		by := writers[c.AssetID].caller()
		if len(runs) == 0 || runs[len(runs)-1].by != by {
			runs = append(runs, run{by: by})
		}
		last := &runs[len(runs)-1]
		last.changes = append(last.changes, outbox.Updated(outbox.KindCompliance, c.AssetID.String(), c.Before, c.Row))
	}
	return runs
}
