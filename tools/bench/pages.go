package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The bounded pages' row: 16 clients reading limit=1000 pages of
// the largest events the registry makes, through the gateway, while the
// table watches the events process's resident set. A page stops before
// the event that would take it past 4 MiB, so each answer holds two of
// them; without that bound each would hold every one seeded (and a
// thousand, on a registry with as many), and the process as many bodies
// at once as clients read.
const (
	LargePagesRowName = "GET /events?limit=1000, pages of the largest events · gateway"
	// defaultLargeEvents is how many are seeded (Options.LargeEvents):
	// enough that the clients read different pages.
	defaultLargeEvents = 64
	// largeField is the size of data and of meta_data in each: their
	// limit. An update that replaces both carries each twice more in
	// changes, so the event is about six times this.
	largeField = 256 << 10
)

var (
	largePages struct {
		cursors []string // the after= of each page of the seeded events
	}
	// afterParam is a Link's after (base64url: never escaped).
	afterParam = regexp.MustCompile(`[?&]after=([^&>]+)`)
)

// largestEvent is the body of an action update that replaced data and
// meta_data of largeField each.
func largestEvent(subject string, n int) []byte {
	blob := func(c string) map[string]string { return map[string]string{"blob": strings.Repeat(c, largeField-16)} }
	data := map[string]any{"id": subject, "action_type": "expert_control", "data": blob("a"), "meta_data": blob("b")}
	body, _ := json.Marshal(map[string]any{
		"id": newUUIDv7(), "type": "action.updated", "time": "2026-01-01T00:00:00Z",
		"subject": map[string]string{"kind": "action", "id": subject}, "actor": "bench", "request_id": fmt.Sprint("bench-large-", n),
		"data":    data,
		"changes": map[string]any{"data": []any{blob("c"), blob("a")}, "meta_data": []any{blob("d"), blob("b")}},
	})
	return body
}

// LargePagesRow: each call reads one page of the seeded events from a
// random one of their positions (the Links of the feed, collected before
// the row), so the 16 clients hold different bodies at once.
// A page is about 4 MiB, longer to read than a QUICK=1 window on a busy
// machine, so the row's window is at least three seconds.
var LargePagesRow = Row{Name: LargePagesRowName, Via: "gateway", MinWindow: 3 * time.Second,
	Before: func(ctx context.Context, e *Env) error {
		// Where the feed ends now: the seeded events follow.
		end, err := e.feedEnd(ctx)
		if err != nil {
			return err
		}
		// Seeded straight into the feed, as the consumer stores events
		// (numbered under its lock), so the row measures reading them.
		tx, err := e.Reference.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after commit
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('events feed:events', 0))"); err != nil {
			return err
		}
		for n := range e.LargeEvents {
			body := largestEvent(fmt.Sprintf("bench-large-%s-%d", randomHex(), n), n)
			if _, err := tx.Exec(ctx, `INSERT INTO events.events (seq, id, type, kind, subject_id, body, size)
				SELECT nextval('events.events_seq'), (b::json->>'id')::uuid, 'action.updated', 'action', b::json->'subject'->>'id', b::json, octet_length(b)
				FROM (SELECT $1::text AS b) s`, string(body)); err != nil {
				return fmt.Errorf("seed the largest events: %w", err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		// The pages of the seeded events, by their Links.
		largePages.cursors = largePages.cursors[:0]
		after := end
		for range e.LargeEvents {
			largePages.cursors = append(largePages.cursors, after)
			raw, h, err := e.exchange(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: "/events?type=action.updated&limit=1000&after=" + after, Want: 200})
			if err != nil {
				return err
			}
			if string(raw) == "[]\n" {
				largePages.cursors = largePages.cursors[:len(largePages.cursors)-1]
				break
			}
			m := afterParam.FindStringSubmatch(h.Get("Link"))
			if m == nil {
				return fmt.Errorf("a page without a Link: %q", h.Get("Link"))
			}
			after = m[1]
		}
		if len(largePages.cursors) < 2 {
			return fmt.Errorf("the seeded events made %d pages", len(largePages.cursors))
		}
		return nil
	},
	// Later rows must not read these.
	After: func(ctx context.Context, e *Env) error {
		_, err := e.Reference.Exec(ctx, "DELETE FROM events.events WHERE subject_id LIKE 'bench-large-%'")
		return err
	},
	Op: func(e *Env) (Op, error) {
		return e.HTTPOp(e.Stack.RegistryURL, func(w *Worker) Request {
			after := largePages.cursors[w.Rand.IntN(len(largePages.cursors))]
			return Request{Method: "GET", Path: "/events?type=action.updated&limit=1000&after=" + after, Want: 200}
		}), nil
	}}

// feedEnd is the after= of the feed's end now: what is stored next
// follows it.
func (e *Env) feedEnd(ctx context.Context) (string, error) {
	_, h, err := e.exchange(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: "/events?after=now", Want: 200})
	if err != nil {
		return "", err
	}
	next := afterParam.FindStringSubmatch(h.Get("Link"))
	if next == nil {
		return "", fmt.Errorf("the feed's Link %q has no after", h.Get("Link"))
	}
	return next[1], nil
}
