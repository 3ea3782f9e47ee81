//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
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

// streamPositions returns each event id's position in the stream (its
// first copy's) and how many copies it has, over the whole stream. What an
// earlier check read is kept (readSoFar) and only what was published since
// is read, but only once the stream is seen to still hold all of it
// (streamRead.intact); otherwise, or if the stream does not add up after
// the reading, it is read again from its first message, as every check
// did before. On a cluster whose node just came back, a JetStream API
// request may find no responder for a moment; the reading then starts
// again from the stream's first message, for up to a minute, so what it
// counts is always one whole pass.
func streamPositions(t *testing.T) (map[string]uint64, map[string]int) {
	t.Helper()
	readMu.Lock()
	defer readMu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for {
		err := readSoFar.catchUp(t.Context())
		if err == nil {
			return readSoFar.position, readSoFar.copies
		}
		readSoFar = streamRead{}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		t.Logf("reading the stream again: %v", err)
		time.Sleep(time.Second)
	}
}

var (
	readMu sync.Mutex
	// readSoFar is the stream as the checks have read it so far.
	readSoFar streamRead
)

// streamRead is the stream read up to a sequence: each event id's
// position (its first copy's), its copies, how many messages there were,
// the first and last sequence and the last message's event id.
type streamRead struct {
	position    map[string]uint64
	copies      map[string]int
	messages    uint64
	first, last uint64
	lastID      string
	// unsure: the stream's own figures did not match even a whole reading
	// (as on a cluster whose leader just changed): the next check reads
	// it whole again instead of building on it.
	unsure bool
	// wholeReads and tailReads count how often a check read the whole
	// stream, and only what was new, for the report.
	wholeReads, tailReads int
}

// catchUp brings the read up to the stream's last message. It reads only
// the messages after the last one read, if the stream still holds what was
// read: its first sequence is the same and its last message read is still
// there with the same event (a stream that lost its tail and was written
// again from there holds another event at that sequence). Once read, the
// stream's own count of messages and last sequence must be what was read
// (a message lost in the middle lowers the count); if not, it reads it
// all again from the first message. A run's end reads the whole stream once
// more and compares it with this (checkStreamWhole).
func (r *streamRead) catchUp(ctx context.Context) error {
	ctx, js, done, err := connectJetStream(ctx)
	if err != nil {
		return err
	}
	defer done()
	stream, err := js.Stream(ctx, outbox.StreamName)
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	if r.last > 0 {
		intact := !r.unsure
		if intact {
			if intact, err = r.intact(ctx, stream); err != nil {
				return err
			}
		}
		if !intact {
			r.restart()
		}
	}
	whole := r.last == 0
	for {
		info, err := stream.Info(ctx)
		if err != nil {
			return fmt.Errorf("stream info: %w", err)
		}
		s := info.State
		if s.LastSeq > r.last {
			before := r.messages
			if err := r.readFrom(ctx, js, r.last+1, s.LastSeq); err != nil {
				return err
			}
			if r.messages > before {
				continue // until the stream holds nothing after what was read
			}
		}
		switch {
		case s.Msgs == r.messages && s.LastSeq == r.last && (r.messages == 0 || s.FirstSeq == r.first):
		case whole:
			// Not what the stream says it holds, even read whole: the
			// checks use this reading, as they would any whole one,
			// and the next reads the stream whole again.
			r.unsure = true
		default:
			r.restart()
			whole = true
			continue
		}
		if whole {
			r.wholeReads++
		} else {
			r.tailReads++
		}
		return nil
	}
}

// restart forgets what was read, to read the stream from its first
// message.
func (r *streamRead) restart() {
	*r = streamRead{wholeReads: r.wholeReads, tailReads: r.tailReads}
}

// connectJetStream connects to the stack's NATS as the suite's checks do; ctx
// bounds the calls made on it to a minute, and done closes it.
func connectJetStream(parent context.Context) (ctx context.Context, js jetstream.JetStream, done func(), err error) {
	nc, err := nats.Connect(stack.NATS.URL, nats.UserInfo(stack.NATS.User, stack.NATS.Password), nats.Timeout(10*time.Second))
	if err != nil {
		return nil, nil, nil, err
	}
	js, err = jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(parent, time.Minute)
	return ctx, js, func() { cancel(); nc.Close() }, nil
}

// intact reports whether the stream still begins where it did and holds
// the same event at the last sequence read.
func (r *streamRead) intact(ctx context.Context, stream jetstream.Stream) (bool, error) {
	info, err := stream.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("stream info: %w", err)
	}
	if info.State.FirstSeq != r.first || info.State.LastSeq < r.last || info.State.Msgs < r.messages {
		return false, nil
	}
	msg, err := stream.GetMsg(ctx, r.last)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stream message %d: %w", r.last, err)
	}
	var e outbox.Event
	if err := json.Unmarshal(msg.Data, &e); err != nil {
		return false, fmt.Errorf("stream message %d: %w", r.last, err)
	}
	return e.ID == r.lastID, nil
}

// readFrom reads the stream's messages from sequence from on, until none
// is pending or, when until is not 0, up to sequence until.
func (r *streamRead) readFrom(ctx context.Context, js jetstream.JetStream, from, until uint64) error {
	if r.position == nil {
		r.position, r.copies = map[string]uint64{}, map[string]int{}
	}
	cons, err := js.OrderedConsumer(ctx, outbox.StreamName, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from})
	if err != nil {
		return fmt.Errorf("ordered consumer: %w", err)
	}
	for read := 0; ; {
		info := cons.CachedInfo()
		if info != nil && info.NumPending == 0 && read > 0 {
			return nil
		}
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			read++
			meta, err := msg.Metadata()
			if err != nil {
				return err
			}
			var e outbox.Event
			if err := json.Unmarshal(msg.Data(), &e); err != nil {
				return fmt.Errorf("stream message %d: %w", meta.Sequence.Stream, err)
			}
			seq := meta.Sequence.Stream
			if _, seen := r.position[e.ID]; !seen {
				r.position[e.ID] = seq
			}
			r.copies[e.ID]++
			r.messages++
			if r.first == 0 {
				r.first = seq
			}
			r.last, r.lastID = seq, e.ID
			if meta.NumPending == 0 || until > 0 && seq >= until {
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// checkStreamWhole reads the whole stream once more, up to the last
// message the checks read, and compares it with what they kept: an event
// read by an earlier check that has vanished or moved since is reported
// even if no check after it noticed (they compare counts and the last
// message read, not every message).
func checkStreamWhole(ctx context.Context) error {
	readMu.Lock()
	defer readMu.Unlock()
	kept := readSoFar
	if kept.last == 0 || kept.unsure {
		return nil // nothing read, or its last reading was whole
	}
	ctx, js, done, err := connectJetStream(ctx)
	if err != nil {
		return err
	}
	defer done()
	start := time.Now()
	var whole streamRead
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		err := whole.readFrom(ctx, js, 1, kept.last)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return err
		}
		whole = streamRead{} // a node just back on a cluster: read it all again
	}
	if whole.messages != kept.messages || whole.first != kept.first || whole.last != kept.last || whole.lastID != kept.lastID ||
		!maps.Equal(whole.position, kept.position) || !maps.Equal(whole.copies, kept.copies) {
		return fmt.Errorf("the stream up to message %d is not what the checks read: %d messages from %d now, %d from %d then; %d event ids now, %d then",
			kept.last, whole.messages, whole.first, kept.messages, kept.first, len(whole.position), len(kept.position))
	}
	fmt.Printf("events: the whole stream read again at the end matches the checks' reading (%d messages, read in %s; the checks read it whole %d times, only what was new %d times)\n",
		kept.messages, time.Since(start).Round(time.Millisecond), kept.wholeReads, kept.tailReads)
	return nil
}
