package events

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/proof"

	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/internal/eventstest"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

const testOrigin = "registry.test/log"

// startSigning runs the service with a signing key; keys verify what it
// signs.
func startSigning(t *testing.T, opts ...servicetest.Option) (*servicetest.Service, tlog.LogKeys) {
	t.Helper()
	signing, _ := eventstest.NewLogKey(t, testOrigin)
	cfg := DefaultConfig()
	cfg.Log.SigningKey = signing
	keys, err := cfg.Log.Keys()
	if err != nil {
		t.Fatal(err)
	}
	return servicetest.Start(t, SpecWith(cfg), opts...), keys
}

// sign signs a checkpoint of the log as it is now.
func sign(t *testing.T, s *servicetest.Service, keys tlog.LogKeys) tlog.Checkpoint {
	t.Helper()
	c, _, err := newTestStore(s).SignCheckpoint(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// b64 reads the standard base64 of a JSON answer.
func decodeB64(t *testing.T, v any) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(v.(string))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hashesOf(t *testing.T, v any) [][]byte {
	t.Helper()
	var out [][]byte
	for _, h := range v.([]any) {
		out = append(out, decodeB64(t, h))
	}
	return out
}

// Every stored event is the next leaf, in feed order and without a gap
// (also when a batch repeats an event or holds one stored before); the
// checkpoint the service signs opens with its key, and the inclusion proof
// of every event, and the consistency proof from an earlier checkpoint,
// verify against it with the library's verifier.
func TestLogProvesEveryEvent(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	s.Call(404, "GET", "/log/checkpoint", s.RO, nil)
	org := uuid.NewString()
	first := event("organization", "created", org)
	publish(t, s, first)
	early := sign(t, s, keys)
	second := event("organization", "updated", org)
	publish(t, s, first, second, second, event("asset", "created", uuid.NewString()))
	var batch []outbox.Event
	for range 300 { // past a tile of 256 leaves
		batch = append(batch, event("asset", "created", uuid.NewString()))
	}
	publish(t, s, batch...)
	latest := sign(t, s, keys)
	if early.Size != 1 || latest.Size != 303 {
		t.Fatalf("checkpoints of %d and %d leaves, want 1 and 303", early.Size, latest.Size)
	}

	rows, err := s.Built.Store.Pool.Query(t.Context(), `SELECT leaf, body::text FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var leaves []int64
	var bodies []string
	for rows.Next() {
		var leaf int64
		var body string
		if err := rows.Scan(&leaf, &body); err != nil {
			t.Fatal(err)
		}
		leaves, bodies = append(leaves, leaf), append(bodies, body)
	}
	for i, leaf := range leaves {
		if leaf != int64(i) {
			t.Fatalf("leaves in feed order %v..., want 0, 1, 2...", leaves[:min(len(leaves), 10)])
		}
	}

	c := s.Call(200, "GET", "/log/checkpoint", s.RO, nil).JSON()
	opened, err := keys.Open(c["note"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if opened.Size != 303 || c["origin"] != testOrigin || !bytes.Equal(opened.Root, decodeB64(t, c["root_hash"])) {
		t.Errorf("checkpoint answer %v", c)
	}
	public := s.Call(200, "GET", "/log/keys", s.RO, nil).JSON()
	if fmt.Sprint(public["keys"]) != fmt.Sprint(keys.Public()) {
		t.Errorf("keys %v, want %v", public["keys"], keys.Public())
	}

	feed := s.Call(200, "GET", "/events?limit=1000", s.RO, nil).List()
	for i, e := range feed {
		if i%37 != 0 && i != len(feed)-1 {
			continue
		}
		p := s.Call(200, "GET", "/log/inclusion?event_id="+e["id"].(string), s.RO, nil).JSON()
		if p["leaf_index"] != float64(i) || p["tree_size"] != float64(303) {
			t.Fatalf("proof of event %d: %v", i, p)
		}
		if err := proof.VerifyInclusion(hasher, uint64(i), 303, tlog.LeafHash([]byte(bodies[i])), hashesOf(t, p["hashes"]), opened.Root); err != nil {
			t.Errorf("inclusion of leaf %d: %v", i, err)
		}
	}
	// Against the earlier checkpoint, by leaf index.
	p := s.Call(200, "GET", "/log/inclusion?leaf_index=0&tree_size=1", s.RO, nil).JSON()
	if err := proof.VerifyInclusion(hasher, 0, 1, tlog.LeafHash([]byte(bodies[0])), hashesOf(t, p["hashes"]), early.Root); err != nil {
		t.Errorf("inclusion in the first checkpoint: %v", err)
	}
	cp := s.Call(200, "GET", "/log/consistency?from=1", s.RO, nil).JSON()
	if err := proof.VerifyConsistency(hasher, 1, 303, hashesOf(t, cp["hashes"]), early.Root, opened.Root); err != nil {
		t.Errorf("consistency from 1 to 303: %v", err)
	}

	s.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "neither event nor leaf", Method: "GET", Path: "/log/inclusion", ReadOnly: true, Status: 422, Fields: []string{"event_id"}},
		{Name: "both event and leaf", Method: "GET", Path: "/log/inclusion?leaf_index=1&event_id=" + first.ID, ReadOnly: true, Status: 422, Fields: []string{"event_id"}},
		{Name: "an event never stored", Method: "GET", Path: "/log/inclusion?event_id=" + uuid.NewString(), ReadOnly: true, Status: 404},
		{Name: "a leaf past the tree", Method: "GET", Path: "/log/inclusion?leaf_index=303", ReadOnly: true, Status: 422, Fields: []string{"leaf_index"}},
		{Name: "a tree past the latest checkpoint", Method: "GET", Path: "/log/inclusion?leaf_index=0&tree_size=304", ReadOnly: true, Status: 422, Fields: []string{"tree_size"}},
		{Name: "a negative leaf", Method: "GET", Path: "/log/inclusion?leaf_index=-1", ReadOnly: true, Status: 400},
		{Name: "a leaf that is no number", Method: "GET", Path: "/log/inclusion?leaf_index=1e3", ReadOnly: true, Status: 400},
		{Name: "consistency without from", Method: "GET", Path: "/log/consistency", ReadOnly: true, Status: 422, Fields: []string{"from"}},
		{Name: "consistency backwards", Method: "GET", Path: "/log/consistency?from=5&to=2", ReadOnly: true, Status: 422, Fields: []string{"from"}},
		{Name: "an entry without its leaf", Method: "GET", Path: "/log/entry", ReadOnly: true, Status: 422, Fields: []string{"leaf_index"}},
		{Name: "an entry's leaf that is no number", Method: "GET", Path: "/log/entry?leaf_index=x1", ReadOnly: true, Status: 400},
		{Name: "an entry's leaf below 0", Method: "GET", Path: "/log/entry?leaf_index=-1", ReadOnly: true, Status: 400},
		{Name: "an entry past the log", Method: "GET", Path: "/log/entry?leaf_index=400", ReadOnly: true, Status: 404},
		{Name: "consistency past the latest checkpoint", Method: "GET", Path: "/log/consistency?from=1&to=400", ReadOnly: true, Status: 422, Fields: []string{"to"}},
	})
}

// Events stored before the log existed (no leaf) take theirs, in seq
// order, before the new ones: the tree is the one of the feed's order.
func TestLogBackfillsEventsStoredBefore(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	before := []outbox.Event{event("person", "created", uuid.NewString()), event("person", "created", uuid.NewString())}
	publish(t, s, before...)
	pool := s.Built.Store.Pool
	// The state of a database the log's migration just ran on.
	for _, sql := range []string{`UPDATE events SET leaf = NULL`, `DELETE FROM log_tiles16`, `UPDATE log_state SET size = 0, root = NULL`} {
		if _, err := pool.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	st := newTestStore(s)
	if n, err := st.Backfill(t.Context()); err != nil || n != 2 {
		t.Fatalf("backfilled %d, %v", n, err)
	}
	after := event("person", "created", uuid.NewString())
	if _, err := st.StoreEvents(t.Context(), incoming(t, after)); err != nil {
		t.Fatal(err)
	}
	c, _, err := st.SignCheckpoint(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	tree := newReferenceTree()
	for _, e := range append(before, after) {
		raw, _ := json.Marshal(e)
		if _, err := tree.Append([][]byte{tlog.LeafHash(raw)}); err != nil {
			t.Fatal(err)
		}
	}
	if root, _ := tree.Root(); c.Size != 3 || !bytes.Equal(root, c.Root) {
		t.Errorf("checkpoint of %d leaves with another root than the feed's events", c.Size)
	}
}

// An event is found by its leaf through the feed's seq (log_seq_from),
// whatever lies between the leaves: batches whose seqs skip numbers (a
// rolled-back transaction takes seqs for good), leaves without an event
// (redactions' entries, pruned events), events without a leaf yet. The
// bisection answers what a scan of the whole feed does, for every leaf.
func TestLeavesFoundThroughTheFeedsOrder(t *testing.T) {
	t.Parallel()
	s, _ := startSigning(t)
	st := newTestStore(s)
	pool := s.Built.Store.Pool
	person := uuid.NewString()
	var redaction uint64 // the leaf of the redaction's entry
	for batch := range 5 {
		var events []outbox.Event
		for range 3 + batch*7 {
			events = append(events, event("person", "created", uuid.NewString()))
		}
		if batch == 1 {
			created := event("person", "created", person)
			created.Data = json.RawMessage(`{"id":"` + person + `","first_name":"Kari","last_name":"Nordmann","date_of_birth":"1980-02-03"}`)
			events = append(events, created)
		}
		publish(t, s, events...)
		if _, err := pool.Exec(t.Context(), `SELECT setval('events_seq', nextval('events_seq') + $1)`, batch*5); err != nil {
			t.Fatal(err)
		}
		if batch == 2 {
			if n, err := st.RedactPerson(t.Context(), uuid.MustParse(person), "erasure request"); err != nil || n != 1 {
				t.Fatalf("redacted %d events (%v), want 1", n, err)
			}
			size, _, err := st.LogState(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			redaction = size - 1
		}
	}
	var unordered int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM (SELECT leaf, lag(leaf) OVER (ORDER BY seq) AS before FROM events) e
		WHERE leaf <= before`).Scan(&unordered); err != nil || unordered != 0 {
		t.Fatalf("%d events whose leaf is not after the one before them in the feed (%v): the bisection's premise", unordered, err)
	}
	// A pruned event in the middle, and the newest event without a leaf.
	for _, sql := range []string{`DELETE FROM events WHERE leaf = 9`, `UPDATE events SET leaf = NULL WHERE seq = (SELECT max(seq) FROM events)`} {
		if _, err := pool.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	size, _, err := st.LogState(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(t.Context(), `SELECT l, log_seq_from(l), (SELECT min(seq) FROM events WHERE leaf >= l OR leaf IS NULL)
		FROM generate_series(0, $1::bigint + 2) l`, int64(size))
	if err != nil {
		t.Fatal(err)
	}
	var leaf int64
	var found, scanned *int64
	checked := 0
	if _, err := pgx.ForEachRow(rows, []any{&leaf, &found, &scanned}, func() error {
		checked++
		if (found == nil) != (scanned == nil) || (found != nil && *found != *scanned) {
			t.Errorf("leaf %d: log_seq_from answers %v, a scan of the feed %v", leaf, deref(found), deref(scanned))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if checked != int(size)+3 {
		t.Errorf("checked %d leaves, want %d", checked, size+3)
	}
	// Entries read by their leaf: the redaction's, an event's beside the
	// pruned one, and none of the pruned one.
	if e, err := st.Entry(t.Context(), redaction); err != nil || e.Type != tlog.RedactionEntryType {
		t.Errorf("leaf %d: %+v, %v; want the redaction's entry", redaction, e, err)
	}
	if e, err := st.Entry(t.Context(), 10); err != nil || e.Type != tlog.EntryEvent {
		t.Errorf("leaf 10: %+v, %v; want the event", e, err)
	}
	if _, err := st.Entry(t.Context(), 9); err == nil {
		t.Error("the pruned event's leaf answers its bytes")
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A resource as it was: the data of its latest event at or before the
// instant; a 404 before it existed and once it was deleted.
func TestHTTPAsOf(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	asset := uuid.NewString()
	at := func(e outbox.Event, when time.Time, serial string) outbox.Event {
		e.Time, e.Data = when, json.RawMessage(`{"id":"`+asset+`","serial_number":"`+serial+`"}`)
		return e
	}
	t0 := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	publish(t, s, at(event("asset", "created", asset), t0, "SN-1"),
		at(event("asset", "updated", asset), t0.Add(time.Hour), "SN-2"),
		at(event("asset", "deleted", asset), t0.Add(2*time.Hour), "SN-2"))
	for _, c := range []struct {
		asOf   string
		status int
		serial string
	}{
		{"2025-03-14T08:59:59Z", 404, ""},
		{"2025-03-14T09:00:00Z", 200, "SN-1"},
		{"2025-03-14T10:30:00%2B01:00", 200, "SN-1"}, // 09:30 UTC
		{"2025-03-14T10:30:00+01:00", 200, "SN-1"},   // the + read as a space, taken back
		{"2025-03-14T10:00:00.5z", 200, "SN-2"},
		{"2025-03-14T11:00:00Z", 404, ""},
	} {
		r := s.Call(c.status, "GET", "/assets/"+asset+"?as_of="+c.asOf, s.RO, nil)
		if c.status == 200 && r.JSON()["serial_number"] != c.serial {
			t.Errorf("as_of %s: %s, want %s", c.asOf, r.Raw, c.serial)
		}
	}
	s.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "as_of that is no timestamp", Method: "GET", Path: "/assets/" + asset + "?as_of=yesterday", ReadOnly: true, Status: 400},
		{Name: "as_of without a zone", Method: "GET", Path: "/assets/" + asset + "?as_of=2025-03-14T09:00:00", ReadOnly: true, Status: 400},
		{Name: "as_of a date that does not exist", Method: "GET", Path: "/assets/" + asset + "?as_of=2025-02-30T09:00:00Z", ReadOnly: true, Status: 422, Fields: []string{"as_of"}},
		{Name: "as_of year 0", Method: "GET", Path: "/assets/" + asset + "?as_of=0000-01-01T00:00:00Z", ReadOnly: true, Status: 422, Fields: []string{"as_of"}},
		{Name: "as_of left out", Method: "GET", Path: "/assets/" + asset, ReadOnly: true, Status: 422, Fields: []string{"as_of"}},
		{Name: "another kind's id", Method: "GET", Path: "/people/" + asset + "?as_of=2025-03-14T09:30:00Z", ReadOnly: true, Status: 404},
		{Name: "another parameter", Method: "GET", Path: "/assets/" + asset + "?as_of=2025-03-14T09:30:00Z&limit=1", ReadOnly: true, Status: 400},
	})
}

func TestParseInstant(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"2025-03-14T09:26:53Z":                "2025-03-14T09:26:53Z",
		"2025-03-14t09:26:53.123456789z":      "2025-03-14T09:26:53.123456789Z",
		"2025-03-14T10:26:53+01:00":           "2025-03-14T09:26:53Z",
		"2025-03-14T10:26:53 01:00":           "2025-03-14T09:26:53Z",
		"2024-02-29T00:00:00Z":                "2024-02-29T00:00:00Z",
		"2025-02-29T00:00:00Z":                "value",
		"2025-03-14T24:00:00Z":                "value",
		"0000-12-31T00:00:00Z":                "value",
		"2025-03-14":                          "shape",
		"2025-03-14T09:26Z":                   "shape",
		"2025-03-14T09:26:53.1234567891Z":     "shape",
		"+2025-03-14T09:26:53Z":               "shape",
		"2025-03-14T09:26:53+0100":            "shape",
		strconv.Itoa(1741944413):              "shape",
		"2025-03-14T09:26:53Z\n":              "shape",
		"2025-03-14T09:26:53-00:00 ":          "shape",
		"10000-03-14T09:26:53Z":               "shape",
		"2025-13-14T09:26:53Z":                "value",
		"2025-03-14T09:26:60Z":                "value",
		"2025-03-14T09:26:53.000000000+00:00": "2025-03-14T09:26:53Z",
	} {
		got, err := feed.ParseInstant(in)
		switch {
		case err == feed.ErrInstantShape:
			if want != "shape" {
				t.Errorf("%q: %v, want %s", in, err, want)
			}
		case err == feed.ErrInstantValue:
			if want != "value" {
				t.Errorf("%q: %v, want %s", in, err, want)
			}
		case err != nil:
			t.Errorf("%q: %v", in, err)
		case got.Format(time.RFC3339Nano) != want:
			t.Errorf("%q: %s, want %s", in, got.Format(time.RFC3339Nano), want)
		}
	}
}

// The self-audit finds nothing in a log as it was written, and names the
// leaf and the checkpoint when one stored byte of an event changed after
// the fact (an UPDATE run in PostgreSQL), and a checkpoint whose stored
// root was changed.
func TestAuditSeesOneChangedByte(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	st := newTestStore(s)
	var batch []outbox.Event
	for range 20 {
		batch = append(batch, event("asset", "created", uuid.NewString()))
	}
	publish(t, s, batch[:10]...)
	sign(t, s, keys)
	publish(t, s, batch[10:]...)
	sign(t, s, keys)
	r, err := st.Audit(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 0 || r.Leaves != 20 || r.Checkpoints != 2 {
		t.Fatalf("audit of an untouched log: %+v", r)
	}
	pool := s.Built.Store.Pool
	// One byte: the actor's first letter.
	if tag, err := pool.Exec(t.Context(), `UPDATE events SET body = regexp_replace(body::text, '"actor":"r', '"actor":"R')::json WHERE leaf = 3`); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("tampering: %v %v", tag, err)
	}
	r, err = st.Audit(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprint(r.Problems)
	for _, want := range []string{"leaf 3 (event " + batch[3].ID, "checkpoint 10: the stored events derive root", "checkpoint 20: the stored events derive root"} {
		if !bytes.Contains([]byte(text), []byte(want)) {
			t.Errorf("audit does not say %q: %v", want, r.Problems)
		}
	}
	if _, err := pool.Exec(t.Context(), `UPDATE events SET body = regexp_replace(body::text, '"actor":"R', '"actor":"r')::json WHERE leaf = 3`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `UPDATE checkpoints SET root = $1 WHERE size = 10`, tlog.LeafHash(nil)); err != nil {
		t.Fatal(err)
	}
	r, err = st.Audit(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) == 0 || !bytes.Contains([]byte(fmt.Sprint(r.Problems)), []byte("checkpoint 10: its stored size and root are not the signed ones")) {
		t.Errorf("audit of a changed checkpoint: %v", r.Problems)
	}
}

// An erasure request: the person's fields leave their events and the
// organizations' events that list them; the events stay (marked) and keep
// their leaves, every earlier proof and checkpoint still verifies, the
// redactions are the log's next entries, and the audit finds nothing
// wrong, but still sees a redacted body changed afterwards.
func TestRedactPersonKeepsTheLogWhole(t *testing.T) {
	t.Parallel()
	s, keys, st, fx := personLog(t)
	person, org, other, created := fx.person, fx.org, fx.other, fx.events[0]
	bystander := event("person", "created", other)
	publish(t, s, bystander)
	before := sign(t, s, keys)

	n, err := st.RedactPerson(t.Context(), uuid.MustParse(person), "erasure request 42")
	if err != nil || n != 3 {
		t.Fatalf("redacted %d events, %v; want 3", n, err)
	}
	after := sign(t, s, keys)
	if after.Size != before.Size+3 {
		t.Fatalf("the log grew from %d to %d leaves, want 3 redaction entries", before.Size, after.Size)
	}
	history := s.Call(200, "GET", "/people/"+person+"/history", s.RO, nil)
	for _, secret := range []string{"Kari", "Nordmann", "Hansen", "1980-02-03"} {
		if bytes.Contains(history.Raw, []byte(secret)) {
			t.Errorf("the history still holds %q: %s", secret, history.Raw)
		}
	}
	if h := history.List(); len(h) != 2 || h[0]["redacted"] == nil || h[0]["data"].(map[string]any)["first_name"] != nil {
		t.Errorf("redacted history: %v", h)
	}
	orgHistory := s.Call(200, "GET", "/organizations/"+org+"/history", s.RO, nil).Raw
	if bytes.Contains(orgHistory, []byte("Kari")) || !bytes.Contains(orgHistory, []byte("Olsen")) {
		t.Errorf("the organization's history: %s", orgHistory)
	}
	// The bystander's event is as it was, and proved as before.
	p := s.Call(200, "GET", "/log/inclusion?event_id="+bystander.ID, s.RO, nil).JSON()
	raw, _ := json.Marshal(bystander)
	if err := proof.VerifyInclusion(hasher, 3, after.Size, tlog.LeafHash(raw), hashesOf(t, p["hashes"]), after.Root); err != nil {
		t.Errorf("a bystander's proof after the redaction: %v", err)
	}
	cp := s.Call(200, "GET", fmt.Sprintf("/log/consistency?from=%d", before.Size), s.RO, nil).JSON()
	if err := proof.VerifyConsistency(hasher, before.Size, after.Size, hashesOf(t, cp["hashes"]), before.Root, after.Root); err != nil {
		t.Errorf("the log after the redaction is not an extension of the one before: %v", err)
	}
	r, err := st.Audit(t.Context(), keys)
	if err != nil || len(r.Problems) != 0 {
		t.Fatalf("audit after a redaction: %v %v", r.Problems, err)
	}
	// An auditor reads every leaf's bytes: the bystander's event as
	// logged; a redacted event's logged form, its personal fields
	// committed, which derives the leaf signed before the redaction; and
	// the redactions' entries, each naming its event and that leaf hash.
	entry := s.Call(200, "GET", "/log/entry?leaf_index=3", s.RO, nil).JSON()
	if entry["type"] != tlog.EntryEvent || !bytes.Equal(decodeB64(t, entry["entry"]), raw) {
		t.Errorf("the bystander's entry: %v", entry)
	}
	for leaf := range uint64(3) {
		logged := decodeB64(t, s.Call(200, "GET", fmt.Sprintf("/log/entry?leaf_index=%d", leaf), s.RO, nil).JSON()["entry"])
		p := s.Call(200, "GET", fmt.Sprintf("/log/inclusion?leaf_index=%d", leaf), s.RO, nil).JSON()
		if err := proof.VerifyInclusion(hasher, leaf, after.Size, tlog.LeafHash(logged), hashesOf(t, p["hashes"]), after.Root); err != nil {
			t.Errorf("leaf %d: its redacted event's entry is not proved: %v", leaf, err)
		}
		at := before.Size + leaf
		redaction := s.Call(200, "GET", fmt.Sprintf("/log/entry?leaf_index=%d", at), s.RO, nil).JSON()
		bytesOf := decodeB64(t, redaction["entry"])
		var r tlog.RedactionEntry
		if err := json.Unmarshal(bytesOf, &r); err != nil || redaction["type"] != tlog.RedactionEntryType || r.EventLeaf != leaf ||
			r.Person != person || !bytes.Equal(r.LeafHash, tlog.LeafHash(logged)) {
			t.Fatalf("leaf %d: the redaction entry at %d: %s, %v", leaf, at, bytesOf, err)
		}
		p = s.Call(200, "GET", fmt.Sprintf("/log/inclusion?leaf_index=%d", at), s.RO, nil).JSON()
		if err := proof.VerifyInclusion(hasher, at, after.Size, tlog.LeafHash(bytesOf), hashesOf(t, p["hashes"]), after.Root); err != nil {
			t.Errorf("leaf %d: its redaction's entry is not proved: %v", leaf, err)
		}
	}
	s.Call(404, "GET", fmt.Sprintf("/log/entry?leaf_index=%d", after.Size), s.RO, nil)
	// Again: nothing more to redact.
	if n, err := st.RedactPerson(t.Context(), uuid.MustParse(person), "again"); err != nil || n != 0 {
		t.Errorf("a second redaction: %d, %v", n, err)
	}
	if _, err := s.Built.Store.Pool.Exec(t.Context(), `UPDATE events SET body = regexp_replace(body::text, '"first_name":null', '"first_name":"Kari"')::json WHERE id = $1`, created.ID); err != nil {
		t.Fatal(err)
	}
	r, err = st.Audit(t.Context(), keys)
	if err != nil || !bytes.Contains([]byte(fmt.Sprint(r.Problems)), []byte("leaf 0 (event "+created.ID+"): ")) {
		t.Errorf("audit of a redacted body changed afterwards: %v %v", r.Problems, err)
	}
}

// The tree a store grows while PostgreSQL inserts its batch is the one it
// appends only when the transaction finds what it was grown from: the
// log this process left, and every event of the batch new (one twice in
// the batch is one leaf). Otherwise (another process appended since, a
// redelivered event) the tree is grown again under the lock. Either way every root
// is the root of the tree grown from scratch.
//
// Serial: it counts the process's appends by tree, which a test beside it
// would add to.
func TestTreeGrownAheadIsCheckedUnderTheLock(t *testing.T) {
	s := servicetest.Start(t, Spec())
	consuming, other := newTestStore(s), newTestStore(s)
	ctx := t.Context()
	tree := newReferenceTree()
	batch := func(n int) []feed.Incoming {
		events := make([]outbox.Event, n)
		for i := range events {
			events[i] = event(outbox.KindOrganization, outbox.OpCreated, uuid.NewString())
		}
		return incoming(t, events...)
	}
	grown := func(where string) float64 {
		v, _ := testkit.Metric(t, "registry_log_appends_total", map[string]string{"tree": where})
		return v
	}
	stored := func(st testStore, b []feed.Incoming, newEvents []feed.Incoming, want string) {
		t.Helper()
		ahead, underLock := grown("ahead"), grown("under_lock")
		n, err := st.StoreEvents(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(newEvents) {
			t.Fatalf("stored %d events, want %d", n, len(newEvents))
		}
		for _, in := range newEvents {
			if _, err := tree.Append([][]byte{tlog.LeafHash(in.Raw)}); err != nil {
				t.Fatal(err)
			}
		}
		size, root, err := st.LogState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := tree.Root(); size != tree.Size() || !bytes.Equal(root, want) {
			t.Fatalf("the log holds %d leaves, root %x; grown from scratch: %d, %x", size, root, tree.Size(), want)
		}
		if got := map[string]float64{"ahead": grown("ahead") - ahead, "under_lock": grown("under_lock") - underLock}; got[want] != 1 || got["ahead"]+got["under_lock"] != 1 {
			t.Fatalf("the tree was grown %v; want %s", got, want)
		}
	}
	first := batch(40)
	stored(consuming, first, first, "under_lock") // nothing kept yet
	b := batch(300)
	stored(consuming, b, b, "ahead")
	b = batch(17)
	stored(other, b, b, "under_lock") // other keeps no tree of the log
	b = batch(50)
	stored(consuming, b, b, "under_lock") // the tree it kept is no longer the log's
	b = batch(20)
	stored(consuming, b, b, "ahead")
	redelivered := append(batch(10), b[3])
	stored(consuming, redelivered, redelivered[:10], "under_lock")
	twice := batch(10)
	twice = append(twice, twice[2])
	stored(consuming, twice, twice[:10], "ahead") // grown without the copy, as the insert leaves it out
	b = batch(256)
	stored(consuming, b, b, "ahead")
}
