//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/pkg/outbox"
)

// eventCheck is what checkEvents found: every event a service recorded
// must be in the stream once, each resource's in the order they were
// recorded.
type eventCheck struct {
	recorded, lost, duplicated, outOfOrder int
}

// checkEvents waits until every service's relay has published its outbox
// (90 s at most) and then holds the stream to the outboxes: nothing lost,
// nothing twice, nothing out of order per subject. It looks at every event
// of the run so far, so a fault that breaks what an earlier one published
// is caught too.
func checkEvents(t *testing.T) eventCheck {
	t.Helper()
	conn := admin(t)
	var schemas []string
	for _, s := range catalog.Services {
		if s.NeedsStore(catalog.NATS) {
			schemas = append(schemas, s.Name)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, schema := range schemas {
		for {
			var pending int
			if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{schema, "outbox"}.Sanitize()+
				` WHERE published_at IS NULL`).Scan(&pending); err != nil {
				t.Fatal(err)
			}
			if pending == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: %d events still unpublished 90 s after the fault", schema, pending)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	position, copies := streamPositions(t)
	var c eventCheck
	for _, schema := range schemas {
		// Published events are kept (outbox.retention) in outbox_published.
		rows, err := conn.Query(t.Context(), `SELECT event_id::text, kind, subject_id FROM (
				SELECT id, event_id, kind, subject_id FROM `+pgx.Identifier{schema, "outbox_published"}.Sanitize()+`
				UNION ALL SELECT id, event_id, kind, subject_id FROM `+pgx.Identifier{schema, "outbox"}.Sanitize()+`) recorded ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]uint64{} // subject -> stream position of its latest event so far
		for rows.Next() {
			var id, kind, subject string
			if err := rows.Scan(&id, &kind, &subject); err != nil {
				t.Fatal(err)
			}
			c.recorded++
			pos, ok := position[id]
			if !ok {
				c.lost++
				continue
			}
			if copies[id] > 1 {
				c.duplicated++
			}
			key := kind + "." + subject
			if pos < last[key] {
				c.outOfOrder++
			}
			last[key] = pos
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if c.recorded == 0 {
		t.Error("events: no service recorded any event under the load; the check would check nothing")
	}
	if c.lost > 0 || c.duplicated > 0 || c.outOfOrder > 0 {
		t.Errorf("events: of %d recorded, %d not in the stream, %d in it twice, %d out of order for their resource", c.recorded, c.lost, c.duplicated, c.outOfOrder)
	}
	return c
}

// streamPositions reads the whole stream: each event id's position (its
// first copy's) and how many copies it has. On a cluster whose node just
// came back, a JetStream API request may find no responder for a moment;
// the reading then starts again from the stream's first message, for up to
// a minute, so what it counts is always one whole pass.
func streamPositions(t *testing.T) (map[string]uint64, map[string]int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		position, copies, err := readStream(t.Context())
		if err == nil {
			return position, copies
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		t.Logf("reading the stream again: %v", err)
		time.Sleep(time.Second)
	}
}

func readStream(ctx context.Context) (map[string]uint64, map[string]int, error) {
	nc, err := nats.Connect(stack.NATS.URL, nats.UserInfo(stack.NATS.User, stack.NATS.Password), nats.Timeout(10*time.Second))
	if err != nil {
		return nil, nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, outbox.StreamName, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, nil, fmt.Errorf("ordered consumer: %w", err)
	}
	position, copies := map[string]uint64{}, map[string]int{}
	for {
		info := cons.CachedInfo()
		if info != nil && info.NumPending == 0 && len(position) > 0 {
			break
		}
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, nil, fmt.Errorf("fetch: %w", err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil {
				return nil, nil, err
			}
			var e outbox.Event
			if err := json.Unmarshal(msg.Data(), &e); err != nil {
				return nil, nil, fmt.Errorf("stream message %d: %w", meta.Sequence.Stream, err)
			}
			if _, seen := position[e.ID]; !seen {
				position[e.ID] = meta.Sequence.Stream
			}
			copies[e.ID]++
			if meta.NumPending == 0 {
				return position, copies, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, nil, fmt.Errorf("fetch: %w", err)
		}
		if n == 0 {
			break
		}
	}
	return position, copies, nil
}
