package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// Event is one change of the change feed (GET /events): a create, update
// or delete of one resource, in the feed's one global order.
type Event struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"` // <kind>.created|updated|deleted
	Time      time.Time `json:"time"`
	Subject   Subject   `json:"subject"`
	Actor     string    `json:"actor"`
	RequestID string    `json:"request_id"`
	// Data is the resource as a GET returned it after the change (for a
	// delete, as it was).
	Data json.RawMessage `json:"data"`
	// Changes, on updates only: field → [old, new].
	Changes map[string][2]json.RawMessage `json:"changes,omitempty"`
	// Commitments, on an event that holds a person's personal fields:
	// each field's opening by its JSON pointer, from which the event's
	// leaf in the log is recomputed (LoggedEvent, EventLeafHash).
	Commitments map[string]FieldOpening `json:"commitments,omitempty"`
	// Redacted, on an event an erasure request redacted: what and when.
	Redacted *EventRedaction `json:"redacted,omitempty"`
	// Cursor is where to resume so that nothing after this event is
	// missed: save it once the event is handled, and pass it as
	// EventsQuery.After. Resuming may repeat events of this event's page
	// (the feed's cursors are per page), never skip one; tell repeats by ID.
	Cursor string `json:"-"`
}

// EventRedaction says that an erasure request removed personal fields
// from an event: which, when, and the leaf of the redaction's log entry.
type EventRedaction struct {
	Fields []string  `json:"fields"`
	At     time.Time `json:"at"`
	Entry  uint64    `json:"entry"`
}

// Subject names the resource an event is about.
type Subject struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// EventsQuery says where to read the feed from and what to read.
type EventsQuery struct {
	// After is a saved Cursor; "" is the oldest kept event, "now" the
	// present (only what happens from now on).
	After string
	// Types filters by type; "action.*" matches a kind's every type.
	Types []string
	Limit int
	// Follow keeps polling at the end of the feed (every PollInterval,
	// default 2 s) until ctx ends, instead of stopping there.
	Follow       bool
	PollInterval time.Duration
}

// Events reads the change feed, following its Link from page to page. A
// cursor older than the feed keeps is a Problem with status 410.
func (c *Client) Events(ctx context.Context, q EventsQuery) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		query := url.Values{}
		if q.After != "" {
			query.Set("after", q.After)
		}
		for _, t := range q.Types {
			query.Add("type", t)
		}
		if q.Limit > 0 {
			query.Set("limit", fmt.Sprint(q.Limit))
		}
		poll := q.PollInterval
		if poll <= 0 {
			poll = 2 * time.Second
		}
		cl := &call{method: http.MethodGet, path: "/events", query: query}
		for {
			resp, err := c.do(ctx, cl)
			if err != nil {
				yield(Event{}, err)
				return
			}
			var page []Event
			if err := json.Unmarshal(resp.body, &page); err != nil {
				yield(Event{}, fmt.Errorf("registry: decoding a page of events: %w", err))
				return
			}
			next, ok := c.next(resp.header)
			here := cl.query.Get("after")
			for i, e := range page {
				e.Cursor = here
				if i == len(page)-1 && ok {
					e.Cursor = next.query.Get("after")
				}
				if !yield(e, nil) {
					return
				}
			}
			if !ok {
				return // a feed always links on; a history ends
			}
			if len(page) == 0 {
				if !q.Follow {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(poll):
				}
			}
			cl = next
		}
	}
}
