package events

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/assetregistry/registry/pkg/outbox"
)

// An asset's passport: everything the registry recorded about an asset,
// its type, its actions, their action documents and documents, as the
// events that recorded it, each with its inclusion proof against one
// signed checkpoint. A holder checks it offline with the log's public key
// alone (the SDK's VerifyPassport): the records are derived from the
// events, the events from the proofs, the proofs from the checkpoint.

// PassportFormat names the bundle's shape.
const PassportFormat = "asset-registry-passport/1"

// Passport is the bundle.
type Passport struct {
	Format  string `json:"format"`
	AssetID string `json:"asset_id"`
	// Checkpoint is the signed note every proof is against.
	Checkpoint      string           `json:"checkpoint"`
	Asset           PassportRecord   `json:"asset"`
	AssetType       *PassportRecord  `json:"asset_type"`
	Actions         []PassportRecord `json:"actions"`
	ActionDocuments []PassportRecord `json:"action_documents"`
	Documents       []PassportRecord `json:"documents"`
	// Events are every event of these records, in the log's order.
	Events []PassportEvent `json:"events"`
}

// PassportRecord is one resource as its events leave it: its latest
// state, deleted or not (and by whom), and the leaves of its events.
type PassportRecord struct {
	ID        string          `json:"id"`
	Deleted   bool            `json:"deleted"`
	DeletedAt *time.Time      `json:"deleted_at,omitempty"`
	DeletedBy *string         `json:"deleted_by,omitempty"`
	SHA256    string          `json:"sha256,omitempty"` // a document's file
	Resource  json.RawMessage `json:"resource"`
	Events    []uint64        `json:"events"`
}

// PassportEvent is one event: its bytes exactly as the log holds them
// (base64) and its inclusion proof.
type PassportEvent struct {
	LeafIndex uint64   `json:"leaf_index"`
	Event     []byte   `json:"event"`
	Proof     [][]byte `json:"proof"`
}

// loggedEvent is an event with its leaf.
type loggedEvent struct {
	Leaf  uint64
	Raw   []byte
	Event outbox.Event
}

// passportRecords derives the records from events (in leaf order): per
// subject, its latest data and whether the last event deleted it.
func passportRecords(events []loggedEvent) (map[string]*PassportRecord, []string, error) {
	records := map[string]*PassportRecord{}
	var order []string
	for _, e := range events {
		key := e.Event.Subject.Kind + ":" + e.Event.Subject.ID
		r := records[key]
		if r == nil {
			r = &PassportRecord{ID: e.Event.Subject.ID}
			records[key] = r
			order = append(order, key)
		}
		r.Events = append(r.Events, e.Leaf)
		r.Resource = e.Event.Data
		r.Deleted, r.DeletedAt, r.DeletedBy = false, nil, nil
		if strings.HasSuffix(e.Event.Type, "."+outbox.OpDeleted) {
			at, by := e.Event.Time, e.Event.Actor
			r.Deleted, r.DeletedAt, r.DeletedBy = true, &at, &by
		}
		if e.Event.Subject.Kind == outbox.KindDocument {
			var d struct {
				SHA256 string `json:"sha256"`
			}
			if err := json.Unmarshal(e.Event.Data, &d); err != nil {
				return nil, nil, fmt.Errorf("passport: document %s: %w", e.Event.Subject.ID, err)
			}
			r.SHA256 = d.SHA256
		}
	}
	return records, order, nil
}

// assemble puts the records of events into the passport of asset.
func assemble(asset string, checkpoint string, events []loggedEvent) (Passport, error) {
	p := Passport{Format: PassportFormat, AssetID: asset, Checkpoint: checkpoint,
		Actions: []PassportRecord{}, ActionDocuments: []PassportRecord{}, Documents: []PassportRecord{}}
	records, order, err := passportRecords(events)
	if err != nil {
		return p, err
	}
	for _, key := range order {
		kind, _, _ := strings.Cut(key, ":")
		r := *records[key]
		switch kind {
		case outbox.KindAsset:
			p.Asset = r
		case outbox.KindAssetType:
			p.AssetType = &r
		case outbox.KindAction:
			p.Actions = append(p.Actions, r)
		case outbox.KindActionDocument:
			p.ActionDocuments = append(p.ActionDocuments, r)
		case outbox.KindDocument:
			p.Documents = append(p.Documents, r)
		}
	}
	p.Events = make([]PassportEvent, len(events))
	for i, e := range events {
		p.Events[i] = PassportEvent{LeafIndex: e.Leaf, Event: e.Raw}
	}
	return p, nil
}

// dataField reads a string member of an event's data ("" when absent).
func dataField(e outbox.Event, field string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(e.Data, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[field], &s) != nil {
		return ""
	}
	return s
}

// subjectsOf lists the distinct subject ids of events of kind, in order.
func subjectsOf(events []loggedEvent, kind string, field string) []string {
	var out []string
	for _, e := range events {
		if e.Event.Subject.Kind != kind {
			continue
		}
		id := e.Event.Subject.ID
		if field != "" {
			id = dataField(e.Event, field)
		}
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
