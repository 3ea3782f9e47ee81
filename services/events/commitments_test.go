package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/transparency-dev/merkle/proof"

	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// personEvents are a person's creation and renaming, and an organization's
// event that lists them beside a bystander.
func personEvents(person, org, other string) []outbox.Event {
	created := event("person", "created", person)
	created.Data = json.RawMessage(`{"id":"` + person + `","first_name":"Kari","last_name":"Nordmann","date_of_birth":"1980-02-03"}`)
	renamed := event("person", "updated", person)
	renamed.Data = json.RawMessage(`{"id":"` + person + `","first_name":"Kari","last_name":"Hansen","date_of_birth":"1980-02-03"}`)
	renamed.Changes = map[string][2]json.RawMessage{"last_name": {json.RawMessage(`"Nordmann"`), json.RawMessage(`"Hansen"`)}}
	orgEvent := event("organization", "updated", org)
	orgEvent.Data = json.RawMessage(`{"id":"` + org + `","name":"Lift AS","associated_people":[{"id":"` + person +
		`","first_name":"Kari","last_name":"Hansen","date_of_birth":"1980-02-03","relation_type":"employee"},{"id":"` + other +
		`","first_name":"Ola","last_name":"Olsen","date_of_birth":null,"relation_type":"employee"}]}`)
	return []outbox.Event{created, renamed, orgEvent}
}

// people are the ids personEvents name, and the events.
type people struct {
	person, org, other string
	events             []outbox.Event
}

// personLog runs the service with a signing key and publishes
// personEvents, at leaves 0, 1 and 2.
func personLog(t *testing.T) (*servicetest.Service, tlog.LogKeys, testStore, people) {
	t.Helper()
	s, keys := startSigning(t)
	p := people{person: uuid.NewString(), org: uuid.NewString(), other: uuid.NewString()}
	p.events = personEvents(p.person, p.org, p.other)
	publish(t, s, p.events...)
	return s, keys, newTestStore(s), p
}

// storedBody is the event's bytes as the feed stores and serves them.
func storedBody(t *testing.T, s *servicetest.Service, leaf uint64) []byte {
	t.Helper()
	var body string
	if err := s.Built.Store.Pool.QueryRow(t.Context(), `SELECT body::text FROM events WHERE leaf = $1`, int64(leaf)).Scan(&body); err != nil {
		t.Fatal(err)
	}
	return []byte(body)
}

// openings are a served event's commitments' openings.
func openings(t *testing.T, body []byte) map[string]struct{ Salt, C []byte } {
	t.Helper()
	var ev struct {
		Commitments map[string]struct{ Salt, C []byte } `json:"commitments"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Commitments
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// proveLeaf proves a leaf's hash in the tree of a checkpoint.
func proveLeaf(t *testing.T, s *servicetest.Service, cp tlog.Checkpoint, leaf uint64, hash []byte) error {
	t.Helper()
	p := s.Call(200, "GET", fmt.Sprintf("/log/inclusion?leaf_index=%d&tree_size=%d", leaf, cp.Size), s.RO, nil).JSON()
	return proof.VerifyInclusion(hasher, leaf, cp.Size, hash, hashesOf(t, p["hashes"]), cp.Root)
}

// A person's personal fields enter the log only as salted commitments:
// the feed serves the values with a salt of 128 bits for each, from which
// the leaf is recomputed. An erasure deletes values and salts and keeps
// the commitments: the event's bytes still derive the leaf that was
// signed, and a guessed name and date of birth, hashed every way that
// lacks the salt, matches neither the leaf nor any commitment.
func TestErasureLeavesNothingToGuess(t *testing.T) {
	t.Parallel()
	s, keys, st, p := personLog(t)
	person, events := p.person, p.events
	before := sign(t, s, keys)
	signed := make([][]byte, len(events))
	salts := map[string][]byte{}
	for i := range events {
		body := storedBody(t, s, uint64(i))
		o := openings(t, body)
		if len(o) == 0 || !bytes.Contains(body, []byte("Kari")) {
			t.Fatalf("leaf %d: served without its values and their salts: %s", i, body)
		}
		for p, op := range o {
			if len(op.Salt) < 16 {
				t.Errorf("leaf %d: %s has a salt of %d bytes", i, p, len(op.Salt))
			}
			salts[fmt.Sprint(i, p)] = op.Salt
		}
		leaf, err := tlog.EventLeaf(body)
		if err != nil {
			t.Fatal(err)
		}
		if err := proveLeaf(t, s, before, uint64(i), leaf); err != nil {
			t.Fatalf("leaf %d: the served bytes do not derive the logged leaf: %v", i, err)
		}
		signed[i] = leaf
	}
	// With the salt, the value opens its commitment.
	firstName := salts["0/data/first_name"]
	created := storedBody(t, s, 0)
	logged, _, _ := tlog.Logged(created)
	if c := sha256.Sum256(append(append([]byte{4}, firstName...), `"Kari"`...)); !bytes.Contains(logged, []byte(b64(c[:]))) {
		t.Fatalf("the logged form holds no commitment of the first name: %s", logged)
	}

	n, err := st.RedactPerson(t.Context(), uuid.MustParse(person), "erasure request 42")
	if err != nil || n != 3 {
		t.Fatalf("redacted %d events, %v; want 3", n, err)
	}
	after := sign(t, s, keys)
	guesses := []string{"Kari", "Nordmann", "Hansen", "1980-02-03"}
	for i, e := range events {
		body := storedBody(t, s, uint64(i))
		for _, secret := range guesses {
			if bytes.Contains(body, []byte(secret)) {
				t.Errorf("leaf %d still holds %q: %s", i, secret, body)
			}
		}
		for key, salt := range salts {
			if bytes.HasPrefix([]byte(key), fmt.Append(nil, i)) && bytes.Contains(body, []byte(b64(salt))) && !bytes.Contains([]byte(key), []byte("/1/")) {
				t.Errorf("leaf %d still holds the salt of %s", i, key)
			}
		}
		// The erasure verifies: the same leaf, proved in the newer tree.
		leaf, err := tlog.EventLeaf(body)
		if err != nil || !bytes.Equal(leaf, signed[i]) {
			t.Fatalf("leaf %d: the erased bytes derive another leaf (%v): %s", i, err, body)
		}
		if err := proveLeaf(t, s, after, uint64(i), leaf); err != nil {
			t.Errorf("leaf %d after the erasure: %v", i, err)
		}
		// The guesses: the event as published, and each guess hashed
		// without a salt, against the leaf and every commitment kept.
		published, _ := json.Marshal(e)
		if bytes.Equal(tlog.LeafHash(published), signed[i]) {
			t.Errorf("leaf %d: the event as published, names guessed, hashes to its leaf", i)
		}
		for p, op := range openings(t, body) {
			if bytes.HasPrefix([]byte(p), []byte("/data/associated_people/1/")) {
				continue // the bystander's, kept
			}
			if len(op.Salt) != 0 || len(op.C) != sha256.Size {
				t.Errorf("leaf %d: %s is not erased to its commitment: %+v", i, p, op)
			}
			for _, g := range guesses {
				for _, attempt := range [][]byte{[]byte(g), []byte(`"` + g + `"`), append([]byte{4}, `"`+g+`"`...), append(make([]byte, 17), `"`+g+`"`...)} {
					if h := sha256.Sum256(attempt); bytes.Equal(h[:], op.C) || bytes.Equal(tlog.LeafHash(attempt), signed[i]) {
						t.Errorf("leaf %d: the guess %q confirms %s", i, g, p)
					}
				}
			}
		}
		// Its entry is the logged form, which holds no value.
		entry := s.Call(200, "GET", fmt.Sprintf("/log/entry?leaf_index=%d", i), s.RO, nil).JSON()
		if raw := decodeB64(t, entry["entry"]); !bytes.Equal(tlog.LeafHash(raw), signed[i]) || bytes.Contains(raw, []byte("Kari")) {
			t.Errorf("leaf %d's entry: %s", i, raw)
		}
	}
	if org := storedBody(t, s, 2); !bytes.Contains(org, []byte("Olsen")) {
		t.Errorf("the bystander was erased too: %s", org)
	}
	entry, err := st.Entry(t.Context(), after.Size-1)
	var r tlog.RedactionEntry
	if err != nil || json.Unmarshal(entry.Entry, &r) != nil || len(r.Fields) == 0 || !bytes.Equal(r.LeafHash, r.Redacted) {
		t.Errorf("the last redaction's entry: %s, %v", entry.Entry, err)
	}
	if r, err := st.Audit(t.Context(), keys); err != nil || len(r.Problems) != 0 {
		t.Fatalf("audit after an erasure: %v %v", r.Problems, err)
	}
}

// A rewrite that calls itself a redaction (a redaction's entry in the log,
// recording the hash of the new bytes) but changes a field that is not a
// personal one is refused by the audit: as an erasure that keeps the
// commitments, and as a redaction of the kind made before commitments,
// which drops them. An erasure of the openings alone, with no redaction
// entry in the log, is reported too.
func TestAuditRefusesARedactionThatChangesMore(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	st := newTestStore(s)
	a, b, c := uuid.NewString(), uuid.NewString(), uuid.NewString()
	var events []outbox.Event
	for _, person := range []string{a, b, c} {
		e := event("person", "created", person)
		e.Data = json.RawMessage(`{"id":"` + person + `","first_name":"Kari","last_name":"Nordmann","date_of_birth":"1980-02-03"}`)
		events = append(events, e)
	}
	publish(t, s, events...)
	sign(t, s, keys)
	pool := s.Built.Store.Pool
	forge := func(leaf uint64, person string, keepCommitments, logged bool) {
		body := storedBody(t, s, leaf)
		signed, err := tlog.EventLeaf(body)
		if err != nil {
			t.Fatal(err)
		}
		var ev map[string]any
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Fatal(err)
		}
		if logged {
			ev["actor"] = "mallory" // not a personal field
		}
		data := ev["data"].(map[string]any)
		var fields []string
		if keepCommitments {
			o := openings(t, body)
			c := sha256.Sum256(append(append([]byte{4}, o["/data/first_name"].Salt...), `"Kari"`...))
			ev["commitments"].(map[string]any)["/data/first_name"] = map[string]any{"c": c[:]}
			fields = []string{"/data/first_name"}
		} else {
			delete(ev, "commitments")
		}
		data["first_name"] = nil
		tampered, _ := json.Marshal(ev)
		size, _, err := st.LogState(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		entry, _ := json.Marshal(tlog.RedactionEntry{Type: tlog.RedactionEntryType, EventID: events[leaf].ID, EventLeaf: leaf, LeafHash: signed,
			Redacted: tlog.LeafHash(tampered), Person: person, Reason: "forged", Time: events[leaf].Time, Fields: fields})
		queries := []struct {
			sql  string
			args []any
		}{{`UPDATE events SET body = $1::json, size = octet_length($1::text) WHERE leaf = $2`, []any{string(tampered), int64(leaf)}}}
		if logged {
			if err := st.AppendEntries(t.Context(), [][]byte{entry}); err != nil {
				t.Fatal(err)
			}
			queries = append(queries, struct {
				sql  string
				args []any
			}{`INSERT INTO redactions (leaf, event_leaf, leaf_hash, entry) VALUES ($1, $2, $3, $4)`, []any{int64(size), int64(leaf), signed, string(entry)}})
		}
		for _, q := range queries {
			if _, err := pool.Exec(t.Context(), q.sql, q.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	forge(0, a, true, true)
	forge(1, b, false, true)
	forge(2, c, true, false)
	sign(t, s, keys)
	r, err := st.Audit(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Append(nil, r.Problems)
	for i, e := range events {
		if !bytes.Contains(text, fmt.Appendf(nil, "leaf %d (event %s)", i, e.ID)) {
			t.Errorf("the audit accepts the forged redaction of leaf %d: %v", i, r.Problems)
		}
	}
	if !bytes.Contains(text, fmt.Appendf(nil, "leaf 2 (event %s): personal fields erased without a redaction entry", events[2].ID)) {
		t.Errorf("the audit does not see an erasure without its entry: %v", r.Problems)
	}
}

// An event logged before commitments (leaf format 1: its leaf the hash of
// its bytes as served) keeps verifying, and is redacted and audited as
// before: its bytes as logged are gone, its redaction's entry records the
// leaf hash they had and the hash of the bytes served since, and a change
// to those afterwards is a problem.
func TestEventsLoggedBeforeCommitmentsKeepVerifying(t *testing.T) {
	t.Parallel()
	s, keys, st, p := personLog(t)
	person, events := p.person, p.events
	pool := s.Built.Store.Pool
	// The state of a database logged before the upgrade: the events as
	// published, their leaves the hashes of those bytes, commitments from
	// the next leaf on.
	for _, e := range events {
		raw, _ := json.Marshal(e)
		if _, err := pool.Exec(t.Context(), `UPDATE events SET body = $1::json, size = octet_length($1::text), leaf = NULL WHERE id = $2`, string(raw), e.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, sql := range []string{`DELETE FROM log_tiles16`, `UPDATE log_state SET size = 0, root = NULL, commitments_from = 3`} {
		if _, err := pool.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.Backfill(t.Context()); err != nil || n != 3 {
		t.Fatalf("backfilled %d, %v", n, err)
	}
	before := sign(t, s, keys)
	for i, e := range events {
		raw, _ := json.Marshal(e)
		if leaf, err := tlog.EventLeaf(storedBody(t, s, uint64(i))); err != nil || !bytes.Equal(leaf, tlog.LeafHash(raw)) {
			t.Fatalf("leaf %d: an old event's leaf is not the hash of its bytes (%v)", i, err)
		}
		if err := proveLeaf(t, s, before, uint64(i), tlog.LeafHash(raw)); err != nil {
			t.Fatalf("leaf %d: %v", i, err)
		}
	}
	if n, err := st.RedactPerson(t.Context(), uuid.MustParse(person), "erasure request 42"); err != nil || n != 3 {
		t.Fatalf("redacted %d events, %v; want 3", n, err)
	}
	after := sign(t, s, keys)
	for leaf := range uint64(3) {
		gone := s.Call(410, "GET", fmt.Sprintf("/log/entry?leaf_index=%d", leaf), s.RO, nil).JSON()
		at, _ := gone["redaction_entry"].(float64)
		redaction := s.Call(200, "GET", fmt.Sprintf("/log/entry?leaf_index=%d", uint64(at)), s.RO, nil).JSON()
		var r tlog.RedactionEntry
		if err := json.Unmarshal(decodeB64(t, redaction["entry"]), &r); err != nil || r.EventLeaf != leaf || len(r.Fields) != 0 {
			t.Fatalf("leaf %d: its redaction's entry %v (%v)", leaf, redaction, err)
		}
		if err := proveLeaf(t, s, after, leaf, r.LeafHash); err != nil {
			t.Errorf("leaf %d: the hash its redaction records is not the logged one: %v", leaf, err)
		}
		if body := storedBody(t, s, leaf); !bytes.Equal(tlog.LeafHash(body), r.Redacted) || bytes.Contains(body, []byte("Kari")) {
			t.Errorf("leaf %d: served bytes not those its redaction recorded: %s", leaf, body)
		}
	}
	if r, err := st.Audit(t.Context(), keys); err != nil || len(r.Problems) != 0 {
		t.Fatalf("audit after a redaction of old events: %v %v", r.Problems, err)
	}
	if _, err := pool.Exec(t.Context(), `UPDATE events SET body = regexp_replace(body::text, '"first_name":null', '"first_name":"Kari"')::json WHERE id = $1`, events[0].ID); err != nil {
		t.Fatal(err)
	}
	r, err := st.Audit(t.Context(), keys)
	if err != nil || !bytes.Contains(fmt.Append(nil, r.Problems), []byte("leaf 0 (event "+events[0].ID+"): its stored bytes are not what its redaction left")) {
		t.Errorf("audit of a redacted old body changed afterwards: %v %v", r.Problems, err)
	}
}
