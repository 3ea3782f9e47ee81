package servicetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/outbox"
)

// Event is what a test expects of one recorded change event.
type Event struct {
	Type string // "organization.created", ...
	ID   string // the subject's id
	// Data is the resource as GET answers it (a response body, or a value
	// that marshals to the same JSON): the event's data must be the same
	// JSON document.
	Data any
	// Changes are the fields an update's changes must name, all of them
	// (nil: not checked; an update always has changes).
	Changes []string
}

// Events reads the events the service recorded in its outbox since the
// previous call, oldest first.
func (s *Service) Events(t testing.TB) []outbox.Event {
	t.Helper()
	rows, err := s.Built.Store.Pool.Query(t.Context(), `SELECT id, event_id::text, kind || '.' || op, kind, subject_id, time,
		actor, request_id, data::text, changes::text FROM outbox WHERE id > $1 ORDER BY id`, s.eventsSeen)
	if err != nil {
		t.Fatalf("servicetest: read the outbox: %v", err)
	}
	defer rows.Close()
	var events []outbox.Event
	for rows.Next() {
		var (
			e       outbox.Event
			data    string
			changes *string
		)
		if err := rows.Scan(&s.eventsSeen, &e.ID, &e.Type, &e.Subject.Kind, &e.Subject.ID, &e.Time, &e.Actor, &e.RequestID, &data, &changes); err != nil {
			t.Fatalf("servicetest: read the outbox: %v", err)
		}
		e.Data = json.RawMessage(data)
		if changes != nil {
			if err := json.Unmarshal([]byte(*changes), &e.Changes); err != nil {
				t.Fatalf("servicetest: event %s changes: %v", e.ID, err)
			}
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("servicetest: read the outbox: %v", err)
	}
	return events
}

// WantEvents checks that the events recorded since the previous Events
// call are exactly want, in order: each of the right type and subject, by
// the caller (actor) with a request id, its data the resource as GET
// answers it, an update's changes naming the fields want names.
func (s *Service) WantEvents(t testing.TB, actor string, want ...Event) {
	t.Helper()
	got := s.Events(t)
	if len(got) != len(want) {
		t.Errorf("recorded %d events %s, want %d %s", len(got), types(got), len(want), wantTypes(want))
		return
	}
	for i, w := range want {
		e := got[i]
		if e.Type != w.Type || e.Subject.ID != w.ID || e.Subject.Kind+"."+strings.SplitN(e.Type, ".", 2)[1] != e.Type {
			t.Errorf("event %d: %s of %s %s, want %s of %s", i, e.Type, e.Subject.Kind, e.Subject.ID, w.Type, w.ID)
			continue
		}
		if e.Actor != actor || e.RequestID == "" {
			t.Errorf("event %d (%s): actor %q, request id %q; want %q and the request's id", i, e.Type, e.Actor, e.RequestID, actor)
		}
		if !sameDocument(t, e.Data, w.Data) {
			t.Errorf("event %d (%s): data\n%s\nwant (GET)\n%s", i, e.Type, e.Data, render(t, w.Data))
		}
		isUpdate := strings.HasSuffix(e.Type, ".updated")
		if isUpdate != (e.Changes != nil) {
			t.Errorf("event %d (%s): changes %v; only updates carry changes", i, e.Type, e.Changes)
		}
		if w.Changes != nil {
			fields := make([]string, 0, len(e.Changes))
			for f := range e.Changes {
				fields = append(fields, f)
			}
			slices.Sort(fields)
			wantFields := slices.Sorted(slices.Values(w.Changes))
			if !slices.Equal(fields, wantFields) {
				t.Errorf("event %d (%s): changes name %v, want %v", i, e.Type, fields, wantFields)
			}
		}
		for f, pair := range e.Changes {
			if sameDocument(t, pair[0], pair[1]) {
				t.Errorf("event %d (%s): field %s listed as changed from and to %s", i, e.Type, f, pair[0])
			}
		}
	}
}

// GET returns the body of a GET of path, for an Event's Data.
func (s *Service) GET(path string) json.RawMessage {
	return json.RawMessage(s.Expect(s.Do("GET", path, s.RO, nil), 200).Raw)
}

func sameDocument(t testing.TB, raw json.RawMessage, want any) bool {
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("servicetest: event data %s: %v", raw, err)
	}
	if err := json.Unmarshal(render(t, want), &b); err != nil {
		t.Fatalf("servicetest: wanted data: %v", err)
	}
	return reflect.DeepEqual(a, b)
}

func render(t testing.TB, v any) []byte {
	switch v := v.(type) {
	case json.RawMessage:
		return v
	case []byte:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func types(events []outbox.Event) string {
	var out []string
	for _, e := range events {
		out = append(out, e.Type+" "+e.Subject.ID)
	}
	return fmt.Sprint(out)
}

func wantTypes(want []Event) string {
	var out []string
	for _, w := range want {
		out = append(out, w.Type+" "+w.ID)
	}
	return fmt.Sprint(out)
}
