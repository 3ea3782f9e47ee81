package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// fixture is one schema's outbox and a stream of the test's own.
type fixture struct {
	store  *store.Store
	schema string
	cfg    outbox.Config
	js     jetstream.JetStream
}

func newFixture(t *testing.T, server testkit.NATSServer) fixture {
	t.Helper()
	schema := testkit.NewDatabaseSchema(t)
	pool, err := store.OpenAndMigrateSets(t.Context(), store.Config{URL: testkit.PostgresURL(t), Schema: schema, MaxConns: 8, StartupWait: time.Second},
		nil, store.KitMigrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	stream := testkit.NATS(t)
	if server.URL != "" {
		stream.NATSServer = server
	}
	cfg := outbox.Config{URL: stream.URL, User: stream.User, Password: stream.Password, Stream: stream.Stream, SubjectPrefix: stream.SubjectPrefix,
		Replicas: 1, MaxAge: time.Hour, DuplicateWindow: 10 * time.Minute, Record: true, Batch: 16, Poll: 100 * time.Millisecond, Retention: time.Hour}
	st := store.New(pool, nil)
	st.Events = outbox.NewRecorder(cfg)
	js, err := jetstream.New(stream.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	return fixture{store: st, schema: schema, cfg: cfg, js: js}
}

// relay starts a relay of the fixture's outbox; stop ends it as a crash
// would end it (nothing more is marked).
func (f fixture) relay(t *testing.T) (*outbox.Relay, func()) {
	t.Helper()
	nc, err := outbox.Connect(f.cfg, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	r, err := outbox.NewRelay(f.store.Pool.Pool, f.schema, nc, f.store.Events, f.cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stopRelay := job.StartJobs(log.NewNopLogger(), r.Job())
	stop := func() { once.Do(func() { stopRelay(); nc.Close() }) }
	t.Cleanup(stop)
	return r, stop
}

// request is a caller: its subject and request id.
func request(sub, id string) model.Caller { return model.Caller{Subject: sub, RequestID: id} }

// write commits (or, with fail, rolls back) one write for by recording
// changes.
func (f fixture) write(t *testing.T, by model.Caller, fail error, changes ...outbox.Change) error {
	t.Helper()
	return f.store.Write(t.Context(), "test write", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if err := f.store.Record(ctx, tx, by, changes...); err != nil {
			return nil, err
		}
		return nil, fail
	})
}

// writeRound writes change n of each of subjects assets ("asset-0", ...),
// each in its own transaction: change 0 creates them.
func (f fixture) writeRound(t *testing.T, subjects, n int) error {
	t.Helper()
	for s := range subjects {
		c := outbox.Updated(outbox.KindAsset, fmt.Sprint("asset-", s), counter{n - 1}, counter{n})
		if n == 0 {
			c = outbox.Created(outbox.KindAsset, fmt.Sprint("asset-", s), counter{0})
		}
		if err := f.write(t, request("client", "req"), nil, c); err != nil {
			return fmt.Errorf("change %d of asset-%d: %w", n, s, err)
		}
	}
	return nil
}

func (f fixture) unpublished(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// stream is the test's stream.
func (f fixture) stream(t *testing.T) jetstream.Stream {
	t.Helper()
	s, err := f.js.Stream(t.Context(), f.cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// last is the last message the test's stream holds of a resource, by the
// subject's end (kind and id: "asset.asset-0").
func (f fixture) last(t *testing.T, resource string) *jetstream.RawStreamMsg {
	t.Helper()
	msg, err := f.stream(t).GetLastMsgForSubject(t.Context(), f.cfg.SubjectPrefix+"."+resource)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// streamed reads every message of the test's stream, in stream order.
func (f fixture) streamed(t *testing.T) []outbox.Event {
	t.Helper()
	s := f.stream(t)
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var events []outbox.Event
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		msg, err := s.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(msg.Subject, f.cfg.SubjectPrefix+"-leaders.") {
			continue // a relay's fence, not an event
		}
		var e outbox.Event
		if err := json.Unmarshal(msg.Data, &e); err != nil {
			t.Fatal(err)
		}
		if got := msg.Header.Get("Nats-Msg-Id"); got != e.ID {
			t.Errorf("message %d: Nats-Msg-Id %q, want the event id %s", seq, got, e.ID)
		}
		if want := f.cfg.SubjectPrefix + "." + e.Subject.Kind + "." + e.Subject.ID; msg.Subject != want {
			t.Errorf("message %d: subject %s, want %s", seq, msg.Subject, want)
		}
		events = append(events, e)
	}
	return events
}

type counter struct {
	N int `json:"n"`
}

func TestRecordKeepsOnlyCommittedWrites(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.NATSServer{})
	ctx := request("client-a", "req-1")
	if err := f.write(t, ctx, errors.New("refused"), outbox.Created(outbox.KindOrganization, "o1", counter{1})); err == nil {
		t.Fatal("the failing write succeeded")
	}
	if n := f.unpublished(t); n != 0 {
		t.Fatalf("a rolled-back write left %d events", n)
	}
	if err := f.write(t, ctx, nil,
		outbox.Created(outbox.KindOrganization, "o1", counter{1}),
		outbox.Updated(outbox.KindOrganization, "o1", counter{1}, counter{1}), // no change: no event
		outbox.Updated(outbox.KindOrganization, "o1", counter{1}, counter{2}),
	); err != nil {
		t.Fatal(err)
	}
	var (
		actor, requestID, op, data string
		changes                    *string
		at                         time.Time
	)
	rows, err := f.store.Pool.Query(t.Context(), `SELECT actor, request_id, op, data::text, changes::text, time FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for rows.Next() {
		if err := rows.Scan(&actor, &requestID, &op, &data, &changes, &at); err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ops) != "[created updated]" {
		t.Fatalf("recorded %v, want [created updated]", ops)
	}
	if actor != "client-a" || requestID != "req-1" {
		t.Errorf("actor %q, request id %q; want the caller's client-a, req-1", actor, requestID)
	}
	if data != `{"n":2}` || changes == nil || *changes != `{"n":[1,2]}` {
		t.Errorf("update recorded data %s changes %v, want {\"n\":2} and {\"n\":[1,2]}", data, changes)
	}
	if time.Since(at) > time.Minute || time.Since(at) < 0 {
		t.Errorf("event time %s is not the write's", at)
	}
}

// TestRelayPublishesEverythingInOrderPerSubject writes from several
// clients at once, each changing its own resources in turn, and checks
// that the stream holds every event once, each subject's in write order.
func TestRelayPublishesEverythingInOrderPerSubject(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.NATSServer{})
	f.relay(t)
	const subjects, changes = 6, 25
	var wg sync.WaitGroup
	for s := range subjects {
		wg.Go(func() {
			ctx := request("client", fmt.Sprint("req-", s))
			id := fmt.Sprint("asset-", s)
			for n := range changes {
				c := outbox.Updated(outbox.KindAsset, id, counter{n - 1}, counter{n})
				if n == 0 {
					c = outbox.Created(outbox.KindAsset, id, counter{0})
				}
				// A write the pool turns away (503: no connection free
				// in time, as a loaded machine can) changed nothing; a
				// client retries it, and so does this one.
				err := f.write(t, ctx, nil, c)
				for tries := 1; apperr.Is(err, apperr.KindUnavailable) && tries < 10; tries++ {
					err = f.write(t, ctx, nil, c)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	testkit.Eventually(t, "every event published", 30*time.Second, func() bool { return f.unpublished(t) == 0 })
	checkStream(t, f.streamed(t), subjects, changes)
}

// checkStream wants each of subjects asset-0... to have changes events,
// n = 0, 1, ... in stream order, each id once.
func checkStream(t *testing.T, events []outbox.Event, subjects, changes int) {
	t.Helper()
	next := map[string]int{}
	seen := map[string]bool{}
	for _, e := range events {
		if seen[e.ID] {
			t.Errorf("event %s is in the stream twice", e.ID)
		}
		seen[e.ID] = true
		var c counter
		if err := json.Unmarshal(e.Data, &c); err != nil {
			t.Fatal(err)
		}
		if c.N != next[e.Subject.ID] {
			t.Errorf("%s: event n=%d where n=%d was due (out of order or lost)", e.Subject.ID, c.N, next[e.Subject.ID])
		}
		next[e.Subject.ID] = c.N + 1
		if e.Actor != "client" || e.RequestID == "" || e.Time.Location() != time.UTC {
			t.Errorf("event %s: actor %q request %q time %s", e.ID, e.Actor, e.RequestID, e.Time)
		}
	}
	if len(events) != subjects*changes {
		t.Errorf("the stream holds %d events, want %d", len(events), subjects*changes)
	}
	for s := range subjects {
		if got := next[fmt.Sprint("asset-", s)]; got != changes {
			t.Errorf("asset-%d: %d events, want %d", s, got, changes)
		}
	}
}

// TestRelayKilledBetweenPublishAndMark ends a relay after JetStream
// acknowledged a round and before the round was marked: a second relay
// publishes the round again and JetStream keeps one copy.
func TestRelayKilledBetweenPublishAndMark(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.NATSServer{})
	const subjects, changes = 4, 10
	for n := range changes {
		if err := f.writeRound(t, subjects, n); err != nil {
			t.Fatal(err)
		}
	}
	first, stop := f.relay(t)
	killed := make(chan struct{})
	var once sync.Once
	first.SetAfterPublish(func() {
		once.Do(func() {
			close(killed)
			// The relay dies here: its context ends before it marks.
			go stop()
			time.Sleep(200 * time.Millisecond)
		})
	})
	<-killed
	stop()
	if n := f.unpublished(t); n != subjects*changes {
		t.Fatalf("%d events unpublished after the kill, want all %d (the round was not marked)", n, subjects*changes)
	}
	if got := len(f.streamed(t)); got == 0 {
		t.Fatal("the killed relay published nothing before it died")
	}
	f.relay(t)
	testkit.Eventually(t, "every event published by the second relay", 30*time.Second, func() bool { return f.unpublished(t) == 0 })
	checkStream(t, f.streamed(t), subjects, changes)
}

// TestNATSDownWritesKeepWorking kills NATS: writes go on recording events,
// the relay says it cannot publish, and once NATS is back every event is
// published, in order.
func TestNATSDownWritesKeepWorking(t *testing.T) {
	t.Parallel()
	server := testkit.StartNats(t, filepath.Join(testkit.ServerDir(t), "nats"), 0)
	f := newFixture(t, testkit.NATSServer{URL: server.URL, User: server.User, Password: server.Password})
	relay, _ := f.relay(t)
	const subjects, changes = 3, 12
	writeRound := func(n int) {
		if err := f.writeRound(t, subjects, n); err != nil {
			t.Fatalf("while NATS is %s: %v", map[bool]string{true: "up", false: "down"}[n < 4 || n >= 8], err)
		}
	}
	for n := range 4 {
		writeRound(n)
	}
	testkit.Eventually(t, "the first events published", 30*time.Second, func() bool { return f.unpublished(t) == 0 })
	if err := relay.Ready(t.Context()); err != nil {
		t.Fatalf("relay not ready with NATS up: %v", err)
	}

	if err := server.Kill(); err != nil {
		t.Fatal(err)
	}
	for n := 4; n < 8; n++ {
		writeRound(n)
	}
	testkit.Eventually(t, "the relay reporting NATS down", 30*time.Second, func() bool { return relay.Ready(t.Context()) != nil })
	if n := f.unpublished(t); n != 4*subjects {
		t.Fatalf("%d events wait with NATS down, want %d", n, 4*subjects)
	}
	testkit.Eventually(t, "outbox_pending_events counting what waits", 30*time.Second, func() bool {
		return outbox.PendingGauge(f.schema) == 4*subjects
	})

	if err := server.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	for n := 8; n < changes; n++ {
		writeRound(n)
	}
	testkit.Eventually(t, "every event published after NATS returned", 60*time.Second, func() bool { return f.unpublished(t) == 0 })
	testkit.Eventually(t, "the relay ready again", 30*time.Second, func() bool { return relay.Ready(t.Context()) == nil })
	checkStream(t, f.streamed(t), subjects, changes)
}

// TestOneRelayLeadsPerSchema runs two relays on one outbox: one publishes,
// the other stands by, and nothing is published twice.
func TestOneRelayLeadsPerSchema(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.NATSServer{})
	a, stopA := f.relay(t)
	b, _ := f.relay(t)
	testkit.Eventually(t, "both relays settled", 10*time.Second, func() bool {
		return a.Ready(t.Context()) == nil && b.Ready(t.Context()) == nil
	})
	for n := range 5 {
		c := outbox.Updated(outbox.KindAsset, "asset-0", counter{n - 1}, counter{n})
		if n == 0 {
			c = outbox.Created(outbox.KindAsset, "asset-0", counter{0})
		}
		if err := f.write(t, request("client", "req"), nil, c); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, "published", 30*time.Second, func() bool { return f.unpublished(t) == 0 })
	stopA() // whichever led, the other takes over (or already leads)
	for n := 5; n < 10; n++ {
		if err := f.write(t, request("client", "req"), nil, outbox.Updated(outbox.KindAsset, "asset-0", counter{n - 1}, counter{n})); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, "published after one relay stopped", 30*time.Second, func() bool { return f.unpublished(t) == 0 })
	checkStream(t, f.streamed(t), 1, 10)
}

// Published events leave the outbox, which so holds only what waits: at
// once without a retention (the default); with one, to outbox_published,
// whence the sweep deletes them after it. They are in the stream.
func TestPublishedEventsLeaveTheOutbox(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		retention time.Duration
		kept      int // events in outbox_published once the outbox is empty
	}{
		{"deleted once acknowledged", 0, 0},
		{"kept for the retention", time.Hour, 5},
		{"swept after the retention", 300 * time.Millisecond, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, testkit.NATSServer{})
			f.cfg.Retention = c.retention
			for n := range 5 {
				if err := f.write(t, request("client", "req"), nil, outbox.Created(outbox.KindAsset, fmt.Sprint("asset-", n), counter{0})); err != nil {
					t.Fatal(err)
				}
			}
			f.relay(t)
			count := func(table string) int {
				var n int
				if err := f.store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			testkit.Eventually(t, "the outbox emptied", 30*time.Second, func() bool {
				return count("outbox") == 0 && count("outbox_published") == c.kept
			})
			if got := len(f.streamed(t)); got != 5 {
				t.Fatalf("the stream holds %d events, want the 5 gone from the outbox", got)
			}
		})
	}
}

// The relay vacuums the outbox it empties, without waiting for
// autovacuum: PostgreSQL counts the vacuum of the table.
func TestRelayVacuumsTheOutboxItEmpties(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.NATSServer{})
	f.cfg.Retention, f.cfg.Batch = 0, 1000
	changes := make([]outbox.Change, leader.QueueVacuumAfter+500)
	for n := range changes {
		changes[n] = outbox.Created(outbox.KindAsset, fmt.Sprint("asset-", n), counter{0})
	}
	if err := f.write(t, request("client", "req"), nil, changes...); err != nil {
		t.Fatal(err)
	}
	f.relay(t)
	testkit.Eventually(t, "the outbox emptied", 60*time.Second, func() bool { return f.unpublished(t) == 0 })
	testkit.Eventually(t, "PostgreSQL counted a vacuum of the outbox", 30*time.Second, func() bool {
		var vacuums int
		if err := f.store.Pool.QueryRow(t.Context(), `SELECT vacuum_count FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'outbox'`).Scan(&vacuums); err != nil {
			t.Fatal(err)
		}
		return vacuums > 0
	})
}
