package events

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestConformance(t *testing.T) { servicetest.Conformance(t, Spec()) }

// publish stores events as the consumer does after reading them from the
// stream (the consumer's own tests go through NATS).
func publish(t *testing.T, s *servicetest.Service, events ...outbox.Event) {
	t.Helper()
	if _, _, err := NewStore(s.Built.Store).StoreEvents(t.Context(), incoming(t, events...)); err != nil {
		t.Fatal(err)
	}
}

// incoming are events as the consumer reads them from the stream.
func incoming(t *testing.T, events ...outbox.Event) []Incoming {
	t.Helper()
	batch := make([]Incoming, len(events))
	for i, e := range events {
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		batch[i] = Incoming{Event: e, Raw: raw}
	}
	return batch
}

// event is a change event of kind and op about id.
func event(kind, op, id string) outbox.Event {
	e := outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: kind + "." + op, Time: time.Now().UTC().Truncate(time.Millisecond),
		Subject: outbox.EventSubject{Kind: kind, ID: id}, Actor: "rw-client", RequestID: "req-" + kind,
		Data: json.RawMessage(`{"id":"` + id + `"}`)}
	if op == outbox.OpUpdated {
		e.Changes = map[string][2]json.RawMessage{"name": {json.RawMessage(`"a"`), json.RawMessage(`"b"`)}}
	}
	return e
}

var nextLink = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// next is the path and query of the answer's Link, failing when absent.
func next(t *testing.T, link string) string {
	t.Helper()
	m := nextLink.FindStringSubmatch(link)
	if m == nil {
		t.Fatalf("Link %q is not a next link", link)
	}
	return m[1]
}

func ids(list []map[string]any) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e["id"].(string)
	}
	return out
}

func TestHTTPFeed(t *testing.T) {
	s := servicetest.Start(t, Spec())
	org, asset := uuid.NewString(), uuid.NewString()
	// An empty feed still links its next page, and after=now too.
	empty := s.Call(200, "GET", "/events", s.RO, nil)
	if len(empty.List()) != 0 {
		t.Fatalf("empty feed: %s", empty.Raw)
	}
	fromStart := next(t, empty.Header.Get("Link"))
	now := next(t, s.Call(200, "GET", "/events?after=now", s.RO, nil).Header.Get("Link"))

	events := []outbox.Event{event("organization", "created", org), event("asset", "created", asset),
		event("organization", "updated", org), event("action", "created", uuid.NewString()), event("asset", "deleted", asset)}
	publish(t, s, events...)
	publish(t, s, events[1]) // a redelivery stores nothing

	all := s.Call(200, "GET", fromStart, s.RO, nil)
	want := []string{events[0].ID, events[1].ID, events[2].ID, events[3].ID, events[4].ID}
	if got := ids(all.List()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("feed %v, want %v", got, want)
	}
	if got := all.List()[2]; got["changes"].(map[string]any)["name"] == nil || got["subject"].(map[string]any)["id"] != org {
		t.Errorf("event as stored: %v", got)
	}
	if got := ids(s.Call(200, "GET", now, s.RO, nil).List()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("from after=now: %v", got)
	}

	// Paging: limit, the Link carries the filters, and the last page's Link
	// leads to an empty page that links to itself's position.
	page1 := s.Call(200, "GET", "/events?limit=2", s.RO, nil)
	page2 := s.Call(200, "GET", next(t, page1.Header.Get("Link")), s.RO, nil)
	page3 := s.Call(200, "GET", next(t, page2.Header.Get("Link")), s.RO, nil)
	page4 := s.Call(200, "GET", next(t, page3.Header.Get("Link")), s.RO, nil)
	if fmt.Sprint(ids(page1.List()), ids(page2.List()), ids(page3.List()), len(page4.List())) !=
		fmt.Sprint(want[:2], want[2:4], want[4:], 0) || !strings.Contains(page4.Header.Get("Link"), "limit=2") {
		t.Errorf("pages %v %v %v %v (%s)", ids(page1.List()), ids(page2.List()), ids(page3.List()), ids(page4.List()), page4.Header.Get("Link"))
	}
	later := event("document", "created", uuid.NewString())
	publish(t, s, later)
	if got := ids(s.Call(200, "GET", next(t, page4.Header.Get("Link")), s.RO, nil).List()); fmt.Sprint(got) != fmt.Sprint([]string{later.ID}) {
		t.Errorf("polling the last Link: %v", got)
	}

	// Type filters: exact, a whole kind, repeated.
	filters := []struct {
		query string
		want  []string
	}{
		{"type=asset.created", []string{events[1].ID}},
		{"type=organization.*", []string{events[0].ID, events[2].ID}},
		{"type=asset.*&type=action.created", []string{events[1].ID, events[3].ID, events[4].ID}},
		{"type=person.*", []string{}},
	}
	for _, f := range filters {
		r := s.Call(200, "GET", "/events?"+f.query, s.RO, nil)
		if got := ids(r.List()); fmt.Sprint(got) != fmt.Sprint(f.want) {
			t.Errorf("%s: %v, want %v", f.query, got, f.want)
		}
		// An empty filtered page still moves on: its Link starts after the
		// newest event, whatever the filter skipped.
		if tail := s.Call(200, "GET", next(t, r.Header.Get("Link")), s.RO, nil); len(tail.List()) != 0 {
			t.Errorf("%s: the Link repeats %v", f.query, ids(tail.List()))
		}
	}
	q, _ := url.ParseQuery(strings.SplitN(next(t, s.Call(200, "GET", "/events?type=asset.*&type=action.created", s.RO, nil).Header.Get("Link")), "?", 2)[1])
	if fmt.Sprint(q["type"]) != "[asset.* action.created]" {
		t.Errorf("the Link lost the filters: %v", q)
	}
}

func TestHTTPFeedErrors(t *testing.T) {
	s := servicetest.Start(t, Spec())
	publish(t, s, event("organization", "created", uuid.NewString()))
	s.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "unknown type", Method: "GET", Path: "/events?type=spaceship.created", ReadOnly: true, Status: 422, Fields: []string{"type"}},
		{Name: "unknown operation", Method: "GET", Path: "/events?type=asset.moved", ReadOnly: true, Status: 422, Fields: []string{"type"}},
		{Name: "a cursor the registry did not issue", Method: "GET", Path: "/events?after=" + model.EncodeSequenceCursor(3, "elsewhere"), ReadOnly: true, Status: 400},
		{Name: "garbage after", Method: "GET", Path: "/events?after=yesterday", ReadOnly: true, Status: 400},
		{Name: "a list cursor is no feed position", Method: "GET", Path: "/events?after=" + model.EncodeCursor(uuid.New(), ""), ReadOnly: true, Status: 400},
		{Name: "limit zero", Method: "GET", Path: "/events?limit=0", ReadOnly: true, Status: 400},
		{Name: "limit over 1000", Method: "GET", Path: "/events?limit=1001", ReadOnly: true, Status: 400},
		{Name: "after twice", Method: "GET", Path: "/events?after=now&after=now", ReadOnly: true, Status: 400},
	})
}

// A cursor from before what retention removed is a 410; histories keep
// every event past the feed's retention, and past their own only each
// subject's latest.
func TestHTTPFeedRetention(t *testing.T) {
	s := servicetest.Start(t, Spec())
	org := uuid.NewString()
	first := s.Call(200, "GET", "/events?after=now", s.RO, nil)
	publish(t, s, event("organization", "created", org), event("organization", "updated", org))
	oldCursor := next(t, first.Header.Get("Link"))
	st := NewStore(s.Built.Store)
	if _, err := st.Prune(t.Context(), 0, 0); err != nil {
		t.Fatal(err)
	}
	gone := s.Call(410, "GET", oldCursor, s.RO, nil)
	if gone.JSON()["type"] != "urn:asset-registry:problem:cursor-expired" {
		t.Errorf("410: %s", gone.Raw)
	}
	if got := s.Call(200, "GET", "/events", s.RO, nil).List(); len(got) != 0 {
		t.Errorf("pruned events are still in the feed: %v", ids(got))
	}
	if h := s.Call(200, "GET", "/organizations/"+org+"/history", s.RO, nil).List(); len(h) != 2 {
		t.Errorf("history after the feed's retention: %v", h)
	}
	after := event("organization", "deleted", org)
	publish(t, s, after)
	if got := ids(s.Call(200, "GET", "/events", s.RO, nil).List()); fmt.Sprint(got) != fmt.Sprint([]string{after.ID}) {
		t.Errorf("feed after pruning: %v", got)
	}
	if n, err := st.Prune(t.Context(), 0, time.Nanosecond); err != nil || n != 2 {
		t.Fatalf("past the histories' retention: %d removed, %v", n, err)
	}
	if h := s.Call(200, "GET", "/organizations/"+org+"/history", s.RO, nil).List(); len(h) != 1 || h[0]["type"] != "organization.deleted" {
		t.Errorf("history after its own retention: %v", h)
	}
}

func TestHTTPHistory(t *testing.T) {
	s := servicetest.Start(t, Spec())
	asset, other := uuid.NewString(), uuid.NewString()
	events := []outbox.Event{event("asset", "created", asset), event("asset", "created", other),
		event("asset", "updated", asset), event("asset", "deleted", asset)}
	publish(t, s, events...)
	h := s.Call(200, "GET", "/assets/"+asset+"/history", s.RO, nil)
	if got := ids(h.List()); fmt.Sprint(got) != fmt.Sprint([]string{events[0].ID, events[2].ID, events[3].ID}) || h.Header.Get("Link") != "" {
		t.Fatalf("history %v (Link %q)", got, h.Header.Get("Link"))
	}
	p1 := s.Call(200, "GET", "/assets/"+asset+"/history/?limit=2", s.RO, nil)
	p2 := s.Call(200, "GET", next(t, p1.Header.Get("Link")), s.RO, nil)
	if fmt.Sprint(ids(p1.List()), ids(p2.List())) != fmt.Sprint([]string{events[0].ID, events[2].ID}, []string{events[3].ID}) ||
		p2.Header.Get("Link") != "" {
		t.Errorf("pages %v %v", ids(p1.List()), ids(p2.List()))
	}
	// A person's events are not an organization's, even with one id.
	person := uuid.NewString()
	publish(t, s, event("person", "created", person))
	s.Call(200, "GET", "/people/"+person+"/history", s.RO, nil)

	otherCursor := strings.SplitN(next(t, p1.Header.Get("Link")), "cursor=", 2)[1]
	s.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "an id that never had an event", Method: "GET", Path: "/assets/" + uuid.NewString() + "/history", ReadOnly: true, Status: 404},
		{Name: "another kind's id", Method: "GET", Path: "/organizations/" + person + "/history", ReadOnly: true, Status: 404},
		{Name: "a malformed id", Method: "GET", Path: "/actions/x/history", ReadOnly: true, Status: 400},
		{Name: "another subject's cursor", Method: "GET", Path: "/assets/" + other + "/history?cursor=" + otherCursor, ReadOnly: true, Status: 400},
		{Name: "an unknown parameter", Method: "GET", Path: "/assets/" + asset + "/history?type=asset.created", ReadOnly: true, Status: 400},
	})
}

func TestHTTPWebhooks(t *testing.T) {
	s := servicetest.Start(t, Spec())
	created := s.Call(201, "POST", "/webhooks", s.RW, map[string]any{"url": "https://93.184.216.34/hooks", "types": []string{"asset.*", "action.created"}, "description": "planner"})
	w := created.JSON()
	id := w["id"].(string)
	path := "/webhooks/" + id
	if created.Header.Get("Location") != path || !strings.HasPrefix(w["secret"].(string), SecretPrefix) || w["created_by"] != "rw-client" {
		t.Fatalf("created: %s", created.Raw)
	}
	got := s.Call(200, "GET", path, s.RW, nil).JSON()
	if _, shown := got["secret"]; shown || got["url"] != "https://93.184.216.34/hooks" {
		t.Errorf("GET shows %v", got)
	}
	theirs := s.Call(201, "POST", "/webhooks", s.Other, map[string]any{"url": "https://93.184.216.34/other", "types": []string{"document.*"}}).JSON()
	if list := s.Call(200, "GET", "/webhooks", s.RW, nil).List(); len(list) != 1 || list[0]["id"] != id || list[0]["secret"] != nil {
		t.Errorf("list: %v", list)
	}
	patched := s.Call(200, "PATCH", path, s.RW, `{"types":["organization.updated"],"description":null}`, "Content-Type", "application/merge-patch+json").JSON()
	if fmt.Sprint(patched["types"]) != "[organization.updated]" || patched["description"] != nil || patched["secret"] != nil {
		t.Errorf("patched: %v", patched)
	}
	rotated := s.Call(200, "POST", path+"/rotate-secret", s.RW, nil).JSON()
	if rotated["secret"] == w["secret"] || !strings.HasPrefix(rotated["secret"].(string), SecretPrefix) {
		t.Errorf("rotated: %v", rotated)
	}
	if d := s.Call(200, "GET", path+"/deliveries", s.RW, nil).List(); len(d) != 0 {
		t.Errorf("deliveries: %v", d)
	}

	// Another client's subscription does not exist for this one; an admin
	// may change and delete it.
	theirPath := "/webhooks/" + theirs["id"].(string)
	for _, call := range []struct{ method, path string }{
		{"GET", theirPath}, {"PATCH", theirPath}, {"DELETE", theirPath}, {"POST", theirPath + "/rotate-secret"},
		{"GET", theirPath + "/deliveries"}, {"POST", theirPath + "/deliveries/" + uuid.NewString() + "/retry"},
	} {
		var body any
		if call.method == "PATCH" {
			body = map[string]any{"description": "mine now"}
		}
		s.Call(404, call.method, call.path, s.RW, body)
	}
	s.Call(200, "PATCH", theirPath, s.Admin, map[string]any{"description": "by the admin"})
	s.Call(204, "DELETE", theirPath, s.Admin, nil)
	s.Call(404, "GET", theirPath, s.Other, nil)

	s.Call(204, "DELETE", path, s.RW, nil)
	s.Call(404, "GET", path, s.RW, nil)
}

func TestHTTPWebhookErrors(t *testing.T) {
	s := servicetest.Start(t, Spec())
	path := "/webhooks/" + s.Call(201, "POST", "/webhooks", s.RW, map[string]any{"url": "https://93.184.216.34/", "types": []string{"asset.*"}}).JSON()["id"].(string)
	hook := func(u string, types ...string) map[string]any { return map[string]any{"url": u, "types": types} }
	s.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "empty types", Method: "POST", Path: "/webhooks", Body: hook("https://93.184.216.34/"), Status: 422, Fields: []string{"types"}},
		{Name: "types missing", Method: "POST", Path: "/webhooks", Body: `{"url":"https://93.184.216.34/"}`, Status: 422, Fields: []string{"types"}},
		{Name: "unknown type", Method: "POST", Path: "/webhooks", Body: hook("https://93.184.216.34/", "asset.moved"), Status: 422, Fields: []string{"types[0]"}},
		{Name: "url not absolute", Method: "POST", Path: "/webhooks", Body: hook("/hooks", "asset.*"), Status: 422, Fields: []string{"url"}},
		{Name: "url plain http", Method: "POST", Path: "/webhooks", Body: hook("http://93.184.216.34/", "asset.*"), Status: 422, Fields: []string{"url"}},
		{Name: "url on loopback", Method: "POST", Path: "/webhooks", Body: hook("https://127.0.0.1/", "asset.*"), Status: 422, Fields: []string{"url"}},
		{Name: "url on localhost", Method: "POST", Path: "/webhooks", Body: hook("https://localhost:8443/", "asset.*"), Status: 422, Fields: []string{"url"}},
		{Name: "url on a private address", Method: "POST", Path: "/webhooks", Body: hook("https://192.168.0.10/", "asset.*"), Status: 422, Fields: []string{"url"}},
		{Name: "url on the metadata address", Method: "POST", Path: "/webhooks", Body: hook("https://169.254.169.254/latest/meta-data/", "asset.*"), Status: 422, Fields: []string{"url"}},
		{Name: "url on the IPv6 metadata address", Method: "POST", Path: "/webhooks", Body: hook("https://[fd00:ec2::254]/", "asset.*"), Status: 422, Fields: []string{"url"}},
		{Name: "url on a unique local address", Method: "POST", Path: "/webhooks", Body: hook("https://[fd12::1]/", "asset.*"), Status: 422, Fields: []string{"url"}},
		{Name: "secret is read-only", Method: "POST", Path: "/webhooks", Body: map[string]any{"url": "https://93.184.216.34/", "types": []string{"asset.*"}, "secret": "whsec_x"}, Status: 422, Fields: []string{"secret"}},
		{Name: "id is read-only", Method: "POST", Path: "/webhooks", Body: map[string]any{"url": "https://93.184.216.34/", "types": []string{"asset.*"}, "id": uuid.NewString()}, Status: 422, Fields: []string{"id"}},
		{Name: "patch removes the url", Method: "PATCH", Path: path, Body: `{"url":null}`, Status: 422, Fields: []string{"url"}},
		{Name: "patch to an empty types", Method: "PATCH", Path: path, Body: `{"types":[]}`, Status: 422, Fields: []string{"types"}},
		{Name: "patch to loopback", Method: "PATCH", Path: path, Body: `{"url":"https://127.0.0.1:9/"}`, Status: 422, Fields: []string{"url"}},
		{Name: "deliveries by an unknown status", Method: "GET", Path: path + "/deliveries?status=lost", Status: 422, Fields: []string{"status"}},
		{Name: "retry of a delivery that does not exist", Method: "POST", Path: path + "/deliveries/" + uuid.NewString() + "/retry", Status: 404},
	})
}

// One batch is one statement: its events are numbered in the batch's
// order, an event twice in it (or stored before) is stored and delivered
// once, and each subscription gets a delivery of each event it names.
func TestStoreEventsBatch(t *testing.T) {
	s := servicetest.Start(t, Spec())
	assets := s.Call(201, "POST", "/webhooks", s.RW, map[string]any{"url": "https://93.184.216.34/assets", "types": []string{"asset.*"}}).JSON()
	everything := s.Call(201, "POST", "/webhooks", s.Other, map[string]any{"url": "https://93.184.216.34/all", "types": []string{"asset.*", "organization.*", "action.*"}}).JSON()
	before := event("organization", "created", uuid.NewString())
	publish(t, s, before)

	var batch []outbox.Event
	for i := range 300 {
		kind := []string{"asset", "organization", "action"}[i%3]
		batch = append(batch, event(kind, "created", uuid.NewString()))
	}
	upper := batch[7]
	upper.ID = strings.ToUpper(upper.ID) // the same event, written another way
	sent := append(append(append([]outbox.Event{}, batch...), batch[3], before), upper)
	stored, queued, err := NewStore(s.Built.Store).StoreEvents(t.Context(), incoming(t, sent...))
	if err != nil {
		t.Fatal(err)
	}
	if stored != len(batch) || queued != len(batch)/3+len(batch) {
		t.Errorf("stored %d, queued %d; want %d and %d", stored, queued, len(batch), len(batch)/3+len(batch))
	}
	want := []string{before.ID}
	for _, e := range batch {
		want = append(want, e.ID)
	}
	if got := ids(s.Call(200, "GET", "/events?limit=1000", s.RO, nil).List()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("feed order %v, want %v", got, want)
	}
	for hook, n := range map[string]int{assets["id"].(string): len(batch) / 3, everything["id"].(string): len(batch) + 1} { // and before
		var got int
		if err := s.Built.Store.Pool.QueryRow(t.Context(), "SELECT count(*) FROM deliveries WHERE webhook_id = $1", hook).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Errorf("webhook %s: %d deliveries, want %d", hook, got, n)
		}
	}
}

// The purge removes the deliveries that succeeded or failed longer ago
// than the retention, in batches, and nothing else: pending ones stay
// whatever their age, and recent ones stay. The count reads the pending
// and the failed ones.
func TestDeliveriesPurgedPastRetention(t *testing.T) {
	s := servicetest.Start(t, Spec())
	st := NewStore(s.Built.Store)
	pool := s.Built.Store.Pool
	hook := uuid.New()
	if _, err := pool.Exec(t.Context(), `INSERT INTO webhooks (id, url, types, secret, created_at, created_by, updated_at, updated_by)
		VALUES ($1, 'https://example.com/hook', '{}', 'whsec_x', now(), 'test', now(), 'test')`, hook); err != nil {
		t.Fatal(err)
	}
	insert := func(n int, status, age string) {
		t.Helper()
		if _, err := pool.Exec(t.Context(), `INSERT INTO deliveries (id, webhook_id, event_seq, event_id, subject, status, updated_at)
			SELECT gen_random_uuid(), $1, n, gen_random_uuid(), 'asset:' || n, $2, now() - $3::interval FROM generate_series(1, $4) n`,
			hook, status, age, n); err != nil {
			t.Fatal(err)
		}
	}
	insert(2400, StatusSucceeded, "2 hours")
	insert(100, StatusFailed, "2 hours")
	insert(3, StatusPending, "2 hours")
	insert(5, StatusSucceeded, "10 minutes")
	insert(7, StatusFailed, "10 minutes")
	if n, err := st.PurgeDeliveries(t.Context(), time.Hour); err != nil || n != 2500 {
		t.Fatalf("purged %d deliveries (%v), want the 2,500 settled over an hour ago", n, err)
	}
	counts, err := st.DeliveryCounts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if counts[StatusPending] != 3 || counts[StatusFailed] != 7 {
		t.Errorf("counts after the purge: %v, want 3 pending and 7 failed", counts)
	}
	var succeeded int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM deliveries WHERE status = 'succeeded'`).Scan(&succeeded); err != nil || succeeded != 5 {
		t.Errorf("%d succeeded deliveries left (%v), want the 5 recent ones", succeeded, err)
	}
}

// The histories' prune goes through a feed larger than its batch: every
// event past retention but its subject's latest leaves, whatever batch it
// falls in.
func TestHistoriesPrunedInBatches(t *testing.T) {
	s := servicetest.Start(t, Spec())
	st := NewStore(s.Built.Store)
	subjects := make([]string, 1200)
	var events []outbox.Event
	for i := range subjects {
		subjects[i] = uuid.NewString()
		events = append(events, event("organization", "created", subjects[i]), event("organization", "updated", subjects[i]))
	}
	publish(t, s, events...)
	n, err := st.Prune(t.Context(), 0, time.Nanosecond)
	if err != nil || n != int64(len(subjects)) {
		t.Fatalf("pruned %d events from the histories (%v), want each subject's first, %d", n, err, len(subjects))
	}
	for _, id := range []string{subjects[0], subjects[len(subjects)-1]} {
		if h := s.Call(200, "GET", "/organizations/"+id+"/history", s.RO, nil).List(); len(h) != 1 || h[0]["type"] != "organization.updated" {
			t.Errorf("history of %s after the prune: %v", id, h)
		}
	}
}
