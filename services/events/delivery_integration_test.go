package events

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/webhooks"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// fastConfig compresses the retry schedule and lets deliveries reach the
// test's loopback receivers.
func fastConfig() Config {
	cfg := DefaultConfig()
	cfg.AllowedOrigins = "http://127.0.0.1:*"
	cfg.Retry = webhooks.RetrySchedule{First: 50 * time.Millisecond, Max: 200 * time.Millisecond, Jitter: 0.2, GiveUpAfter: time.Minute}
	cfg.Poll = 50 * time.Millisecond
	cfg.Timeout = time.Second
	return cfg
}

// streamWorld is the events service reading a stream of the test's own on
// the test NATS server, and what publishes to that stream (the producers'
// relays, played by the test).
type streamWorld struct {
	*servicetest.Service
	stream testkit.NATSStream
	js     jetstream.JetStream
}

func startWithStream(t *testing.T, cfg Config, opts ...servicetest.Option) *streamWorld {
	t.Helper()
	stream := testkit.NATS(t)
	js, err := jetstream.New(stream.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(t.Context(), jetstream.StreamConfig{Name: stream.Stream,
		Subjects: []string{stream.SubjectPrefix + ".>"}, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	issuer := testkit.NewIssuer(t, servicetest.Audience)
	spec := SpecWith(cfg)
	scfg := servicetest.Config(t, spec, issuer)
	scfg.Events.URL, scfg.Events.User, scfg.Events.Password = stream.URL, stream.User, stream.Password
	scfg.Events.Stream, scfg.Events.SubjectPrefix = stream.Stream, stream.SubjectPrefix
	for _, o := range opts {
		o(&scfg)
	}
	return &streamWorld{Service: servicetest.StartWith(t, spec, scfg, issuer), stream: stream, js: js}
}

// restart stops the service and starts it again on the same schema and
// stream, with cfg.
func (w *streamWorld) restart(t *testing.T, cfg Config) {
	t.Helper()
	w.Built.Close()
	w.Service = servicetest.StartWith(t, SpecWith(cfg), w.Config, w.Issuer)
}

// publish sends events as a relay does: subject per resource, the event
// id as Nats-Msg-Id.
func (w *streamWorld) publish(t *testing.T, events ...outbox.Event) {
	t.Helper()
	for _, e := range events {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		subject := w.stream.SubjectPrefix + "." + e.Subject.Kind + "." + e.Subject.ID
		if _, err := w.js.Publish(t.Context(), subject, data, jetstream.WithMsgID(e.ID)); err != nil {
			t.Fatal(err)
		}
	}
}

// eventually polls cond until it holds or 20 s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, what, 20*time.Second, cond)
}

// receipt is one request a receiver got.
type receipt struct {
	id, subject string
	status      int
	signatures  int
	err         error // the signature check's
}

// receiver is a webhook endpoint on loopback that checks every delivery's
// signature against the secrets it is told and answers as answer says.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	secrets  []string
	answer   func(id string, attempt int) int // status; 0 hangs until the client gives up
	receipts []receipt
	attempts map[string]int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{attempts: map[string]int{}, answer: func(string, int) int { return 200 }}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// failWith makes r answer status to every attempt until the returned
// recovered is called, and 200 from then on.
func (r *receiver) failWith(status int) (recovered func()) {
	failing := true
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = func(string, int) int {
		if failing {
			return status
		}
		return 200
	}
	return func() {
		r.mu.Lock()
		failing = false
		r.mu.Unlock()
	}
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var e outbox.Event
	_ = json.Unmarshal(body, &e)
	r.mu.Lock()
	id := req.Header.Get("webhook-id")
	r.attempts[id]++
	status := r.answer(id, r.attempts[id])
	rc := receipt{id: id, subject: e.Subject.Kind + ":" + e.Subject.ID, status: status,
		signatures: len(strings.Fields(req.Header.Get("webhook-signature")))}
	if id != e.ID {
		rc.err = fmt.Errorf("webhook-id %s is not the event's id %s", id, e.ID)
	}
	for _, secret := range r.secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err == nil {
			err = wh.Verify(body, req.Header)
		}
		if err != nil && rc.err == nil {
			rc.err = fmt.Errorf("secret %d: %w", slices.Index(r.secrets, secret), err)
		}
	}
	r.receipts = append(r.receipts, rc)
	r.mu.Unlock()
	if status == 0 {
		<-req.Context().Done()
		return
	}
	w.WriteHeader(status)
}

func (r *receiver) log() []receipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.receipts)
}

func (r *receiver) succeeded() map[string]bool {
	out := map[string]bool{}
	for _, rc := range r.log() {
		if rc.status >= 200 && rc.status < 300 {
			out[rc.id] = true
		}
	}
	return out
}

// subscribe makes a subscription of the read-write client to the
// receiver, telling the receiver its secret.
func (w *streamWorld) subscribe(t *testing.T, r *receiver, types ...string) string {
	t.Helper()
	hook := w.Call(201, "POST", "/webhooks", w.RW, map[string]any{"url": r.URL + "/hook", "types": types}).JSON()
	r.mu.Lock()
	r.secrets = []string{hook["secret"].(string)}
	r.mu.Unlock()
	return "/webhooks/" + hook["id"].(string)
}

// checkOrder fails when, for one subject, an event was sent before every
// earlier event of that subject had succeeded (or failed for good, which
// these tests' receivers never cause), or when a signature did not verify.
func checkOrder(t *testing.T, log []receipt, order []outbox.Event) {
	t.Helper()
	index := map[string]int{}
	for i, e := range order {
		index[e.ID] = i
	}
	done := map[string]int{} // subject → index of the last event that succeeded
	for _, rc := range log {
		if rc.err != nil {
			t.Errorf("delivery %s: %v", rc.id, rc.err)
		}
		i := index[rc.id]
		for j := range i {
			if order[j].Subject.Kind+":"+order[j].Subject.ID == rc.subject && done[rc.subject] < j+1 {
				t.Errorf("event %d of %s was sent before event %d had succeeded", i, rc.subject, j)
			}
		}
		if rc.status >= 200 && rc.status < 300 {
			done[rc.subject] = max(done[rc.subject], i+1)
		}
	}
}

// Events go from the stream to the feed once each, in order, and to a
// subscribed receiver signed, retried on failure (500 and no answer in
// time), in order per subject; every duplicate carries the same
// webhook-id.
func TestStreamToFeedAndWebhook(t *testing.T) {
	t.Parallel()
	w := startWithStream(t, fastConfig())
	r := newReceiver(t)
	hook := w.subscribe(t, r, "asset.*", "action.created")
	// Each event fails its first attempt with a 500 and its second with
	// no answer within the timeout.
	r.answer = func(_ string, attempt int) int {
		switch attempt {
		case 1:
			return 500
		case 2:
			return 0
		}
		return 204
	}

	var events []outbox.Event
	assets := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	for _, op := range feed.Ops {
		for _, a := range assets {
			events = append(events, event("asset", op, a))
		}
	}
	unsubscribed := event("organization", "created", uuid.NewString())
	w.publish(t, events[:4]...)
	w.publish(t, unsubscribed)
	w.publish(t, events[4:]...)
	w.publish(t, events[0]) // a relay publishing twice: JetStream drops it
	again := events[1]
	raw, _ := json.Marshal(again)
	if _, err := w.js.Publish(t.Context(), w.stream.SubjectPrefix+".asset."+again.Subject.ID, raw); err != nil { // past JetStream's dedup: the store drops it
		t.Fatal(err)
	}

	eventually(t, "the feed", func() bool { return len(w.Call(200, "GET", "/events?limit=1000", w.RO, nil).List()) == len(events)+1 })
	feed := ids(w.Call(200, "GET", "/events?type=asset.*", w.RO, nil).List())
	want := make([]string, len(events))
	for i, e := range events {
		want[i] = e.ID
	}
	if fmt.Sprint(feed) != fmt.Sprint(want) {
		t.Fatalf("feed %v, want %v", feed, want)
	}
	eventually(t, "every delivery", func() bool {
		return len(w.Call(200, "GET", hook+"/deliveries?status=succeeded&limit=1000", w.RW, nil).List()) == len(events)
	})
	log := r.log()
	checkOrder(t, log, events)
	for _, rc := range log {
		if rc.id == unsubscribed.ID {
			t.Error("an event the subscription does not name was delivered")
		}
	}
	deliveries := w.Call(200, "GET", hook+"/deliveries?status=succeeded", w.RW, nil).List()
	if len(deliveries) != len(events) {
		t.Fatalf("deliveries: %v", deliveries)
	}
	for _, d := range deliveries {
		if d["attempts"] != 3.0 || d["last_status_code"] != 204.0 || d["last_error"] != nil || d["next_attempt_at"] != nil {
			t.Errorf("delivery %v", d)
		}
	}
}

// A receiver that keeps failing: the delivery fails for good when the
// schedule ends, which lets the subject's next event go; a manual retry
// sends it again.
//
// Serial: two attempts must fit in its 300 ms give-up window, which the
// load of parallel tests beside it stretched past (one attempt, in make test).
func TestDeliveryFailsForGoodAndIsRetried(t *testing.T) {
	cfg := fastConfig()
	cfg.Retry.GiveUpAfter = 300 * time.Millisecond
	w := startWithStream(t, cfg)
	r := newReceiver(t)
	hook := w.subscribe(t, r, "document.*")
	recovered := r.failWith(500)
	failedBefore := failedForGood(t)
	doc := uuid.NewString()
	first, second := event("document", "created", doc), event("document", "deleted", doc)
	w.publish(t, first, second)
	failed := func() []map[string]any {
		return w.Call(200, "GET", hook+"/deliveries?status=failed", w.RW, nil).List()
	}
	eventually(t, "both deliveries to fail", func() bool { return len(failed()) == 2 })
	d := failed()[0]
	// The alert on deliveries failed for good reads a counter (the gauge of
	// failed ones falls when the purge removes old ones).
	if n := failedForGood(t) - failedBefore; n < 2 {
		t.Errorf("registry_webhook_deliveries_failed_total rose by %v, want the 2 failed deliveries", n)
	}
	if d["event_id"] != first.ID || d["last_status_code"] != 500.0 || d["next_attempt_at"] != nil || d["attempts"].(float64) < 2 ||
		!strings.Contains(d["last_error"].(string), "500") {
		t.Errorf("failed delivery: %v", d)
	}
	// The second was only sent once the first had failed for good.
	log := r.log()
	firstSecond := slices.IndexFunc(log, func(rc receipt) bool { return rc.id == second.ID })
	lastFirst := lastIndex(log, first.ID)
	if firstSecond < 0 || firstSecond < lastFirst {
		t.Errorf("the second event was sent (at %d) before the first had failed for good (its last attempt at %d)", firstSecond, lastFirst)
	}

	recovered()
	retried := w.Call(200, "POST", hook+"/deliveries/"+d["id"].(string)+"/retry", w.RW, nil).JSON()
	if retried["status"] != "pending" {
		t.Errorf("retried: %v", retried)
	}
	eventually(t, "the retried delivery", func() bool {
		return len(w.Call(200, "GET", hook+"/deliveries?status=succeeded", w.RW, nil).List()) == 1
	})
	w.Call(409, "POST", hook+"/deliveries/"+d["id"].(string)+"/retry", w.RW, nil)
	w.Call(404, "POST", hook+"/deliveries/"+d["id"].(string)+"/retry", w.Other, nil)
}

// After a rotation, deliveries carry a signature with each secret, and
// each verifies.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	w := startWithStream(t, fastConfig())
	r := newReceiver(t)
	hook := w.subscribe(t, r, "person.*")
	rotated := w.Call(200, "POST", hook+"/rotate-secret", w.RW, nil).JSON()["secret"].(string)
	r.mu.Lock()
	r.secrets = append(r.secrets, rotated) // the receiver checks both
	r.mu.Unlock()
	e := event("person", "created", uuid.NewString())
	w.publish(t, e)
	eventually(t, "the delivery", func() bool { return r.succeeded()[e.ID] })
	for _, rc := range r.log() {
		if rc.err != nil || rc.signatures != 2 {
			t.Errorf("delivery with %d signatures: %v", rc.signatures, rc.err)
		}
	}
}

// Pending deliveries and the stream's position survive a restart; a
// stricter operator setting refuses the loopback receiver at delivery
// time (the dialer checks every connection).
func TestDeliveriesSurviveRestart(t *testing.T) {
	t.Parallel()
	w := startWithStream(t, fastConfig())
	r := newReceiver(t)
	hook := w.subscribe(t, r, "asset.*")
	recovered := r.failWith(503)
	a := uuid.NewString()
	before := event("asset", "created", a)
	w.publish(t, before)
	eventually(t, "a failed attempt", func() bool { return len(r.log()) > 0 })

	w.Built.Close()
	during := event("asset", "updated", a) // published while the service is down
	w.publish(t, during)
	recovered()
	w.restart(t, fastConfig())
	eventually(t, "both deliveries after the restart", func() bool {
		s := r.succeeded()
		return s[before.ID] && s[during.ID]
	})
	checkOrder(t, r.log(), []outbox.Event{before, during})
	if feed := ids(w.Call(200, "GET", "/events", w.RO, nil).List()); fmt.Sprint(feed) != fmt.Sprint([]string{before.ID, during.ID}) {
		t.Errorf("feed after the restart: %v", feed)
	}

	// The same subscription under an operator setting without the
	// loopback exemption: every attempt is refused before connecting.
	hits := len(r.log())
	strict := fastConfig()
	strict.AllowedOrigins = ""
	w.restart(t, strict)
	refused := event("asset", "deleted", a)
	w.publish(t, refused)
	eventually(t, "a refused attempt", func() bool {
		d := w.Call(200, "GET", hook+"/deliveries?status=pending", w.RW, nil).List()
		return len(d) == 1 && d[0]["last_error"] != nil
	})
	d := w.Call(200, "GET", hook+"/deliveries?status=pending", w.RW, nil).List()[0]
	if !strings.Contains(d["last_error"].(string), "https") && !strings.Contains(d["last_error"].(string), "refused") {
		t.Errorf("refused delivery: %v", d)
	}
	if len(r.log()) != hits {
		t.Error("the receiver was reached under the strict setting")
	}
}

func lastIndex(log []receipt, id string) int {
	for i := len(log) - 1; i >= 0; i-- {
		if log[i].id == id {
			return i
		}
	}
	return -1
}

// Two replicas share the durable consumer, but one consumes at a time, so
// each resource's events are stored in the stream's order; when it stops,
// the other takes over and nothing is lost.
func TestOneReplicaConsumesAndAnotherTakesOver(t *testing.T) {
	t.Parallel()
	w := startWithStream(t, fastConfig())
	second := servicetest.StartWith(t, SpecWith(fastConfig()), w.Config, w.Issuer)
	org := uuid.NewString()
	var events []outbox.Event
	for range 20 {
		events = append(events, event("organization", "updated", org))
	}
	w.publish(t, events[:10]...)
	eventually(t, "the first events", func() bool { return len(w.Call(200, "GET", "/events", w.RO, nil).List()) == 10 })
	w.Built.Close() // whichever replica leads, the other one's turn may come
	w.publish(t, events[10:]...)
	history := func() []string {
		return ids(second.Call(200, "GET", "/organizations/"+org+"/history", second.RO, nil).List())
	}
	eventually(t, "the rest after the takeover", func() bool { return len(history()) == 20 })
	want := make([]string, len(events))
	for i, e := range events {
		want[i] = e.ID
	}
	if got := history(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("history %v, want the stream's order %v", got, want)
	}
}

// A receiver that hangs holds at most MaxInFlight of the workers: with
// four workers and a limit of two, another subscription's receiver gets
// every event while the hanging one's attempts are all still open (without
// the limit and the turns, the hanging receiver's attempts, due as early,
// take every worker until they time out).
func TestAHangingReceiverHoldsOnlyItsShare(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.Workers, cfg.MaxInFlight = 4, 2
	cfg.Timeout = time.Minute // longer than the test waits: no hanging attempt ends on its own
	w := startWithStream(t, cfg)

	release := make(chan struct{})
	var mu sync.Mutex
	open, mostOpen := 0, 0
	hanging := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		mu.Lock()
		open++
		mostOpen = max(mostOpen, open)
		mu.Unlock()
		select {
		case <-req.Context().Done():
		case <-release:
		}
		mu.Lock()
		open--
		mu.Unlock()
		rw.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(hanging.Close)
	defer close(release) // before the server's Close waits for its handlers
	w.Call(201, "POST", "/webhooks", w.RW, map[string]any{"url": hanging.URL + "/hook", "types": []string{"asset.*"}})
	healthy := newReceiver(t)
	w.subscribe(t, healthy, "asset.*")

	var events []outbox.Event
	for range 20 { // twenty subjects: twenty deliveries due at once for each subscription
		events = append(events, event("asset", "created", uuid.NewString()))
	}
	w.publish(t, events...)
	eventually(t, "every event at the healthy receiver", func() bool { return len(healthy.succeeded()) == len(events) })
	mu.Lock()
	defer mu.Unlock()
	if mostOpen > cfg.MaxInFlight || open == 0 {
		t.Errorf("the hanging receiver had up to %d attempts open at once (%d now), want at most %d and some still open", mostOpen, open, cfg.MaxInFlight)
	}
}

// failedForGood is the count of deliveries that ran out of retries, as
// the process's metrics tell it.
func failedForGood(t *testing.T) float64 {
	v, _ := testkit.Metric(t, "registry_webhook_deliveries_failed_total", nil)
	return v
}

// The consumer's goroutines do not grow with the batches it stores: a
// long run stores millions of them (a goroutine left per batch once grew
// the process by hundreds of MiB in an hour).
func TestConsumerGoroutinesDoNotGrowWithBatches(t *testing.T) {
	w := startWithStream(t, fastConfig())
	stored := 0
	storeBatches := func(n int) {
		for range n {
			w.publish(t, event("organization", "created", uuid.NewString()))
			stored++
			eventually(t, "the event in the feed", func() bool {
				return len(w.Call(200, "GET", "/events?limit=1000", w.RO, nil).List()) == stored
			})
		}
	}
	storeBatches(10) // warm: pools, connections and the consumer settle
	before := runtime.NumGoroutine()
	storeBatches(100)
	if grew := runtime.NumGoroutine() - before; grew > 50 {
		t.Errorf("100 batches left %d more goroutines (%d → %d): something starts one per batch", grew, before, before+grew)
	}
}
