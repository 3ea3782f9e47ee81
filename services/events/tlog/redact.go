package tlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/transparency-dev/merkle/compact"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/outbox"
)

// Erasure requests: an operator redacts a person's personal fields from
// every event that holds them (the person's own events, and the
// organizations' events that list the person among associated_people).
// The event stays, its content is marked redacted, and the log stays
// whole: the event's leaf keeps the hash that was signed, and the
// redaction itself is the log's next entry, which names the event, that
// hash and the hash of the redacted bytes, so the audit (and anyone)
// can tell a redaction from a change made behind the log's back.

// PersonalFields are a person's fields that an erasure request removes.
var PersonalFields = []string{"first_name", "last_name", "date_of_birth"}

// RedactionEntry is the log entry recording one redaction.
type RedactionEntry struct {
	Type      string    `json:"type"` // RedactionEntryType
	EventID   string    `json:"event_id"`
	EventLeaf uint64    `json:"event_leaf"`
	LeafHash  []byte    `json:"leaf_hash"`     // the event's leaf hash, as signed
	Redacted  []byte    `json:"redacted_hash"` // SHA-256 leaf hash of the event's bytes after the redaction
	Person    string    `json:"person_id"`
	Reason    string    `json:"reason"`
	Time      time.Time `json:"time"`
	// Fields are the pointers of the fields whose values and salts an
	// erasure of an event of leaf format 2 deleted (its leaf is unchanged:
	// Redacted is LeafHash); absent for an event of format 1.
	Fields []string `json:"fields,omitempty"`
}

// redactEvent is an event's bytes without person's personal fields: for
// an event of leaf format 2 their values and salts erased, their
// commitments kept (fields: the pointers erased); for one of format 1,
// the fields nulled in place.
func redactEvent(body []byte, person string, marker redactedMarker) (out []byte, fields []string, changed bool, err error) {
	if committed(body) {
		out, fields, err = eraseCommitted(body, person, marker)
		return out, fields, len(fields) > 0, err
	}
	out, changed, err = redactPerson(body, person, marker)
	return out, nil, changed, err
}

// redactedMarker is the member a redacted event gains.
type redactedMarker struct {
	Fields []string  `json:"fields"`
	At     time.Time `json:"at"`
	Entry  uint64    `json:"entry"` // the leaf of the redaction's entry
}

// redactPerson returns body without person's personal fields (null in
// their place), marked redacted, and whether anything was removed.
func redactPerson(body []byte, person string, marker redactedMarker) ([]byte, bool, error) {
	var event map[string]json.RawMessage
	if err := json.Unmarshal(body, &event); err != nil {
		return nil, false, fmt.Errorf("redact: %w", err)
	}
	var subject outbox.EventSubject
	if err := json.Unmarshal(event["subject"], &subject); err != nil {
		return nil, false, fmt.Errorf("redact: subject: %w", err)
	}
	changed := false
	switch subject.Kind {
	case outbox.KindPerson:
		if subject.ID != person {
			return body, false, nil
		}
		data, did, err := nullFields(event["data"])
		if err != nil {
			return nil, false, err
		}
		event["data"], changed = data, did
		if raw, ok := event["changes"]; ok {
			var changes map[string]json.RawMessage
			if err := json.Unmarshal(raw, &changes); err != nil {
				return nil, false, fmt.Errorf("redact: changes: %w", err)
			}
			for _, f := range PersonalFields {
				if v, ok := changes[f]; ok && !bytes.Equal(v, []byte(`[null,null]`)) {
					changes[f], changed = json.RawMessage(`[null,null]`), true
				}
			}
			if event["changes"], err = json.Marshal(changes); err != nil {
				return nil, false, err
			}
		}
	case outbox.KindOrganization:
		data, did, err := redactAssociated(event["data"], person)
		if err != nil {
			return nil, false, err
		}
		event["data"], changed = data, did
		if raw, ok := event["changes"]; ok {
			var changes map[string][2]json.RawMessage
			if err := json.Unmarshal(raw, &changes); err != nil {
				return nil, false, fmt.Errorf("redact: changes: %w", err)
			}
			if pair, ok := changes["associated_people"]; ok {
				for i := range pair {
					wrapped, _ := json.Marshal(map[string]json.RawMessage{"associated_people": pair[i]})
					out, did, err := redactAssociated(wrapped, person)
					if err != nil {
						return nil, false, err
					}
					var back map[string]json.RawMessage
					_ = json.Unmarshal(out, &back)
					pair[i], changed = back["associated_people"], changed || did
				}
				changes["associated_people"] = pair
			}
			if event["changes"], err = json.Marshal(changes); err != nil {
				return nil, false, err
			}
		}
	}
	if !changed {
		return body, false, nil
	}
	marker.Fields = slices.Clone(PersonalFields)
	m, err := json.Marshal(marker)
	if err != nil {
		return nil, false, err
	}
	event["redacted"] = m
	out, err := json.Marshal(event)
	return out, true, err
}

// nullFields sets the personal fields of an object to null.
func nullFields(raw json.RawMessage) (json.RawMessage, bool, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, false, fmt.Errorf("redact: data: %w", err)
	}
	changed := false
	for _, f := range PersonalFields {
		if v, ok := obj[f]; ok && !bytes.Equal(v, []byte("null")) {
			obj[f], changed = json.RawMessage("null"), true
		}
	}
	out, err := json.Marshal(obj)
	return out, changed, err
}

// redactAssociated nulls the personal fields of person's entry in an
// object's associated_people.
func redactAssociated(raw json.RawMessage, person string) (json.RawMessage, bool, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, false, fmt.Errorf("redact: data: %w", err)
	}
	var people []json.RawMessage
	if v, ok := obj["associated_people"]; !ok || json.Unmarshal(v, &people) != nil {
		return raw, false, nil
	}
	changed := false
	for i, p := range people {
		var who struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(p, &who) != nil || who.ID != person {
			continue
		}
		out, did, err := nullFields(p)
		if err != nil {
			return nil, false, err
		}
		people[i], changed = out, changed || did
	}
	if !changed {
		return raw, false, nil
	}
	var err error
	if obj["associated_people"], err = json.Marshal(people); err != nil {
		return nil, false, err
	}
	out, err := json.Marshal(obj)
	return out, true, err
}

// redactionCandidate is an event that may hold the person's fields: its
// place, its bytes as stored, and the entry of its last redaction, if any.
type redactionCandidate struct {
	seq       int64
	leaf      uint64
	id, body  string
	lastEntry *string
}

// redactionRows are what a redaction writes: each changed event's new
// bytes, and its redaction's entry, appended to the log from leaf next on.
type redactionRows struct {
	hashes                              [][]byte // the entries' leaf hashes
	entryLeaves, eventLeaves, eventSeqs []int64
	signed                              [][]byte // the leaf hash each event was signed with
	entries, bodies                     []string
}

// redactions redacts the person's fields from the candidates, each
// checked first against the hash the log holds for it (tiles: the tiles
// of their leaves), the entries numbered from next.
func redactions(found []redactionCandidate, tiles tileSet, person, reason string, next uint64, now time.Time) (redactionRows, error) {
	var r redactionRows
	for _, f := range found {
		signed, err := tiles.node(compact.NewNodeID(0, f.leaf))
		if err != nil {
			return r, err
		}
		current := signed
		if f.lastEntry != nil {
			var last RedactionEntry
			if err := json.Unmarshal([]byte(*f.lastEntry), &last); err != nil {
				return r, fmt.Errorf("redaction of leaf %d: %w", f.leaf, err)
			}
			current = last.Redacted
		}
		if h, err := EventLeaf([]byte(f.body)); err != nil || !bytes.Equal(h, current) {
			return r, apperr.New(apperr.KindConflict, fmt.Sprintf("event %s (leaf %d) is not what the log holds: run events audit before redacting", f.id, f.leaf))
		}
		body, fields, changed, err := redactEvent([]byte(f.body), person, redactedMarker{At: now, Entry: next})
		if err != nil {
			return r, err
		}
		if !changed {
			continue
		}
		redacted, err := EventLeaf(body)
		if err != nil {
			return r, err
		}
		if fields != nil && !bytes.Equal(redacted, signed) {
			return r, fmt.Errorf("redaction of leaf %d: erasing its commitments' openings changed its leaf", f.leaf)
		}
		entry, err := json.Marshal(RedactionEntry{Type: RedactionEntryType, EventID: f.id, EventLeaf: f.leaf, LeafHash: signed,
			Redacted: redacted, Person: person, Reason: reason, Time: now, Fields: fields})
		if err != nil {
			return r, err
		}
		r.hashes = append(r.hashes, LeafHash(entry))
		r.entryLeaves, r.eventLeaves, r.eventSeqs = append(r.entryLeaves, int64(next)), append(r.eventLeaves, int64(f.leaf)), append(r.eventSeqs, f.seq)
		r.signed, r.entries, r.bodies = append(r.signed, signed), append(r.entries, string(entry)), append(r.bodies, string(body))
		next++
	}
	return r, nil
}
