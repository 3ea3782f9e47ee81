package events

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/job"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/webhooks"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	servicetest.Conformance(t, Spec(), ownership)
}

// A subscription is its maker's alone: to another client every call on it
// is a 404, as if it did not exist; an admin may read, change and delete it.
// A passport link is deleted by its maker or an admin alone (another
// client that sees the asset is refused, 403).
func ownership(t *testing.T, s *servicetest.Service) []servicetest.OwnerCase {
	hook := "/webhooks/" + s.Call(201, "POST", "/webhooks", s.RW,
		map[string]any{"url": "https://93.184.216.34/owned", "types": []string{"asset.*"}}).JSON()["id"].(string)
	asset := uuid.NewString()
	publish(t, s, outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: "asset.created", Time: time.Now().UTC(),
		Subject: outbox.EventSubject{Kind: "asset", ID: asset}, Actor: "rw-client", Data: json.RawMessage(`{"id":"` + asset + `"}`)})
	links := "/assets/" + asset + "/passport_links"
	link := links + "/" + s.Call(201, "POST", links, s.RW, map[string]any{}).JSON()["id"].(string)
	return []servicetest.OwnerCase{
		{Name: "delete passport link", Method: "DELETE", Path: link, Read: links, AdminStatus: 204},
		{Name: "read subscription", Method: "GET", Path: hook, Read: hook, AdminStatus: 200},
		{Name: "list deliveries", Method: "GET", Path: hook + "/deliveries", Read: hook, AdminStatus: 200},
		{Name: "retry delivery", Method: "POST", Path: hook + "/deliveries/" + uuid.NewString() + "/retry", Read: hook, AdminStatus: 404},
		{Name: "rotate secret", Method: "POST", Path: hook + "/rotate-secret", Read: hook, AdminStatus: 200},
		{Name: "patch subscription", Method: "PATCH", Path: hook, Body: map[string]any{"description": "taken"}, Read: hook, AdminStatus: 200},
		{Name: "delete subscription", Method: "DELETE", Path: hook, Read: hook, AdminStatus: 204},
	}
}

// publish stores events as the consumer does after reading them from the
// stream (the consumer's own tests go through NATS).
func publish(t *testing.T, s *servicetest.Service, events ...outbox.Event) {
	t.Helper()
	if _, err := newTestStore(s).StoreEvents(t.Context(), incoming(t, events...)); err != nil {
		t.Fatal(err)
	}
}

// incoming are events as the consumer reads them from the stream.
func incoming(t *testing.T, events ...outbox.Event) []feed.Incoming {
	t.Helper()
	batch := make([]feed.Incoming, len(events))
	for i, e := range events {
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		batch[i] = feed.Incoming{Event: e, Raw: raw}
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
	s := servicetest.StartParallel(t, Spec())
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
	s := servicetest.StartParallel(t, Spec())
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
	s := servicetest.StartParallel(t, Spec())
	org := uuid.NewString()
	first := s.Call(200, "GET", "/events?after=now", s.RO, nil)
	publish(t, s, event("organization", "created", org), event("organization", "updated", org))
	oldCursor := next(t, first.Header.Get("Link"))
	st := newTestStore(s)
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
	s := servicetest.StartParallel(t, Spec())
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

// largeEvent is an update of action id whose data is a string of n bytes.
func largeEvent(id string, n int) outbox.Event {
	e := event("action", "updated", id)
	e.Data = json.RawMessage(`{"id":"` + id + `","data":"` + strings.Repeat("x", n) + `"}`)
	return e
}

// follow reads path and every page its Links lead to, until an empty
// page (the feed) or one without a Link (a history), checking that each
// body of more than one event stays within model.MaxPageBytes; it returns
// the pages' ids.
func follow(t *testing.T, s *servicetest.Service, path string) [][]string {
	t.Helper()
	var pages [][]string
	for path != "" {
		r := s.Call(200, "GET", path, s.RO, nil)
		list := r.List()
		if len(r.Raw) > model.MaxPageBytes && len(list) > 1 {
			t.Errorf("%s: a body of %d bytes with %d events, over %d", path, len(r.Raw), len(list), model.MaxPageBytes)
		}
		if len(list) == 0 {
			break
		}
		pages = append(pages, ids(list))
		path = ""
		if link := r.Header.Get("Link"); link != "" {
			path = next(t, link)
		}
	}
	return pages
}

// A page of the feed or of a history stops before the event that would
// take its body past MaxPageBytes, and its Link continues right after its
// last event; an event larger than that alone is still a page. Events
// stored before their size was recorded are measured when read.
func TestPagesStopBeforeMaxPageBytes(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	action := uuid.NewString()
	const mib = 1 << 20
	sizes := []int{mib, mib, mib, mib, mib, 5 * mib, mib} // the sixth alone is over the bound
	var events []outbox.Event
	for _, n := range sizes {
		events = append(events, largeEvent(action, n))
	}
	small := event("organization", "created", uuid.NewString())
	// One statement each: a batch of them is many MiB for one statement.
	for _, e := range append(append(slices.Clone(events[:3]), small), events[3:]...) {
		publish(t, s, e)
	}
	// Three events of a MiB fit in 4 MiB, a fourth does not.
	want := [][]string{{events[0].ID, events[1].ID, events[2].ID, small.ID}, {events[3].ID, events[4].ID}, {events[5].ID}, {events[6].ID}}
	wantHistory := [][]string{{events[0].ID, events[1].ID, events[2].ID}, {events[3].ID, events[4].ID}, {events[5].ID}, {events[6].ID}}
	check := func(when string) {
		if got := follow(t, s, "/events?limit=1000"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: feed pages %v, want %v", when, got, want)
		}
		if got := follow(t, s, "/events?type=action.updated&limit=1000"); fmt.Sprint(got) != fmt.Sprint(wantHistory) {
			t.Errorf("%s: filtered feed pages %v, want %v", when, got, wantHistory)
		}
		if got := follow(t, s, "/actions/"+action+"/history?limit=1000"); fmt.Sprint(got) != fmt.Sprint(wantHistory) {
			t.Errorf("%s: history pages %v, want %v", when, got, wantHistory)
		}
		// The count still bounds a page first.
		if got := follow(t, s, "/actions/"+action+"/history?limit=1"); len(got) != len(events) {
			t.Errorf("%s: history pages of one %v", when, got)
		}
	}
	check("sizes stored")
	if _, err := s.Built.Store.Pool.Exec(t.Context(), "UPDATE events SET size = NULL"); err != nil {
		t.Fatal(err)
	}
	check("sizes measured")
}

func TestHTTPWebhooks(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	created := s.Call(201, "POST", "/webhooks", s.RW, map[string]any{"url": "https://93.184.216.34/hooks", "types": []string{"asset.*", "action.created"}, "description": "planner"})
	w := created.JSON()
	id := w["id"].(string)
	path := "/webhooks/" + id
	if created.Header.Get("Location") != path || !strings.HasPrefix(w["secret"].(string), webhooks.SecretPrefix) || w["created_by"] != "rw-client" {
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
	if rotated["secret"] == w["secret"] || !strings.HasPrefix(rotated["secret"].(string), webhooks.SecretPrefix) {
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
	s := servicetest.StartParallel(t, Spec())
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
// order, and an event twice in it (or stored before) is stored once.
func TestStoreEventsBatch(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
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
	stored, err := newTestStore(s).StoreEvents(t.Context(), incoming(t, sent...))
	if err != nil {
		t.Fatal(err)
	}
	if stored != len(batch) {
		t.Errorf("stored %d; want %d", stored, len(batch))
	}
	want := []string{before.ID}
	for _, e := range batch {
		want = append(want, e.ID)
	}
	if got := ids(s.Call(200, "GET", "/events?limit=1000", s.RO, nil).List()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("feed order %v, want %v", got, want)
	}
}

// idleDispatcher is a configuration whose dispatcher, once started, waits
// an hour before it looks for work again unless woken: a test that stores
// events itself (not through the stream) then drives the fan-out and the
// claims alone.
func idleDispatcher() Config {
	cfg := DefaultConfig()
	cfg.Poll = time.Hour
	return cfg
}

// withoutDispatcher is the service without its webhook dispatcher, for
// tests that fan out and claim deliveries themselves: an idle dispatcher
// (idleDispatcher) still makes one pass when it starts, and on a busy
// machine that pass can come after the test's events, fan them out first
// and claim them.
func withoutDispatcher() servicekit.Spec { return leaveOut(DefaultConfig(), "webhook dispatcher") }

// leaveOut is the service of cfg without its job or maintenance task of
// that name, for a test that does that work itself; it fails to start
// when there is none, so a renamed one cannot slip back in.
func leaveOut(cfg Config, name string) servicekit.Spec {
	spec := SpecWith(cfg)
	build := spec.Build
	spec.Build = func(d servicekit.Deps) (servicekit.Handlers, error) {
		h, err := build(d)
		before := len(h.Jobs) + len(h.Maintenance)
		h.Jobs = slices.DeleteFunc(h.Jobs, func(j job.Job) bool { return j.Name == name })
		h.Maintenance = slices.DeleteFunc(h.Maintenance, func(task leader.Task) bool { return task.Name == name })
		if err == nil && len(h.Jobs)+len(h.Maintenance) != before-1 {
			err = fmt.Errorf("the events service runs no job or task named %q to leave out", name)
		}
		return h, err
	}
	return spec
}

// deliveriesOf are a subscription's deliveries' event ids, in the order
// they were queued.
func deliveriesOf(t *testing.T, s *servicetest.Service, hook string) []string {
	t.Helper()
	rows, err := s.Built.Store.Pool.Query(t.Context(), "SELECT event_id::text FROM deliveries WHERE webhook_id = $1 ORDER BY id", hook)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { out = append(out, id); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// The fan-out queues one delivery of each stored event for each
// subscription naming its type, in the feed's order, from the feed
// position where the subscription was made, and in bounded steps: the
// feed's own transaction queues nothing.
func TestFanOutQueuesEachEventOnceInBoundedSteps(t *testing.T) {
	s := servicetest.StartParallel(t, withoutDispatcher())
	hooks := webhooks.NewStore(s.Built.Store)
	assets := s.Call(201, "POST", "/webhooks", s.RW, map[string]any{"url": "https://93.184.216.34/assets", "types": []string{"asset.*"}}).JSON()["id"].(string)
	everything := s.Call(201, "POST", "/webhooks", s.Other, map[string]any{"url": "https://93.184.216.34/all", "types": []string{"asset.*", "organization.created", "action.*"}}).JSON()["id"].(string)
	before := event("organization", "created", uuid.NewString())
	publish(t, s, before)
	if got := deliveriesOf(t, s, everything); len(got) != 0 {
		t.Fatalf("storing events queued deliveries: %v", got)
	}
	var batch []outbox.Event
	for i := range 300 {
		kind := []string{"asset", "organization", "action"}[i%3]
		batch = append(batch, event(kind, "created", uuid.NewString()))
	}
	publish(t, s, batch[:150]...)
	late := s.Call(201, "POST", "/webhooks", s.RW, map[string]any{"url": "https://93.184.216.34/late", "types": []string{"asset.*"}}).JSON()["id"].(string)
	publish(t, s, batch[150:]...)
	publish(t, s, batch[3]) // stored before: nothing new to deliver

	// One step: at most one subscription moved on by at most 40 positions.
	queued, behind, err := hooks.FanOut(t.Context(), 1, 40, webhooks.AllStored)
	if err != nil || queued > 40 || queued == 0 || !behind {
		t.Fatalf("one bounded step queued %d (behind %v, %v)", queued, behind, err)
	}
	for behind {
		if _, behind, err = hooks.FanOut(t.Context(), 2, 40, webhooks.AllStored); err != nil {
			t.Fatal(err)
		}
	}
	wantOf := func(from int, match func(outbox.Event) bool) []string {
		var out []string
		for _, e := range batch[from:] {
			if match(e) {
				out = append(out, e.ID)
			}
		}
		return out
	}
	isAsset := func(e outbox.Event) bool { return e.Subject.Kind == "asset" }
	for name, c := range map[string]struct {
		hook string
		want []string
	}{
		"asset.*":               {assets, wantOf(0, isAsset)},
		"every type it names":   {everything, append([]string{before.ID}, wantOf(0, func(outbox.Event) bool { return true })...)},
		"made after 150 events": {late, wantOf(150, isAsset)},
	} {
		if got := deliveriesOf(t, s, c.hook); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %d deliveries %v, want %d %v", name, len(got), got, len(c.want), c.want)
		}
	}
	if queued, behind, err := hooks.FanOut(t.Context(), 100, 1000, webhooks.AllStored); queued != 0 || behind || err != nil {
		t.Errorf("a fan-out with nothing new queued %d (behind %v, %v)", queued, behind, err)
	}
}

// A fan-out goes no further than the position read before the copy of
// who sees what was refreshed: an event stored after the refresh waits
// for the next fan-out and its fresher copy.
func TestFanOutStopsWhereAccessWasRead(t *testing.T) {
	s := servicetest.StartParallel(t, withoutDispatcher())
	hooks := webhooks.NewStore(s.Built.Store)
	hook := s.Call(201, "POST", "/webhooks", s.RW, map[string]any{"url": "https://93.184.216.34/assets", "types": []string{"asset.*"}}).JSON()["id"].(string)
	judged, stored := event("asset", "created", uuid.NewString()), event("asset", "created", uuid.NewString())
	publish(t, s, judged)
	through, err := hooks.NewestEvent(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	publish(t, s, stored)
	if _, _, err := hooks.FanOut(t.Context(), 10, 100, through); err != nil {
		t.Fatal(err)
	}
	if got := deliveriesOf(t, s, hook); fmt.Sprint(got) != fmt.Sprint([]string{judged.ID}) {
		t.Errorf("fanned out through %d: deliveries %v, want only %s", through, got, judged.ID)
	}
	if _, _, err := hooks.FanOut(t.Context(), 10, 100, webhooks.AllStored); err != nil {
		t.Fatal(err)
	}
	if got := deliveriesOf(t, s, hook); fmt.Sprint(got) != fmt.Sprint([]string{judged.ID, stored.ID}) {
		t.Errorf("the next fan-out: deliveries %v, want %s then %s", got, judged.ID, stored.ID)
	}
}

// Claims give each subscription its turn: one due delivery of each before
// a second of any, never more than maxInFlight leased for one
// subscription, only the earliest pending delivery of a subject, and a
// lease that ran out (a dispatcher that died) no longer counts.
func TestClaimGivesEachSubscriptionItsTurn(t *testing.T) {
	s := servicetest.StartParallel(t, withoutDispatcher())
	subscriptions := webhooks.NewStore(s.Built.Store)
	hooks := map[string]string{} // id → name
	for _, name := range []string{"a", "b", "c", "d"} {
		id := s.Call(201, "POST", "/webhooks", s.RW, map[string]any{"url": "https://93.184.216.34/" + name, "types": []string{"asset.*"}}).JSON()["id"].(string)
		hooks[id] = name
	}
	var events []outbox.Event
	for range 20 {
		events = append(events, event("asset", "created", uuid.NewString()))
	}
	twice := events[0].Subject.ID // a second event of the first subject waits for the first
	events = append(events, event("asset", "updated", twice))
	publish(t, s, events...)
	for behind := true; behind; {
		var err error
		if _, behind, err = subscriptions.FanOut(t.Context(), 100, 1000, webhooks.AllStored); err != nil {
			t.Fatal(err)
		}
	}
	inFlight := map[string]int{}
	claim := func(n int) []webhooks.Job {
		t.Helper()
		jobs, err := subscriptions.Claim(t.Context(), n, 4, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			inFlight[hooks[j.WebhookID.String()]]++
			if j.EventID.String() == events[len(events)-1].ID {
				t.Errorf("the second event of subject %s was claimed before the first succeeded", twice)
			}
		}
		return jobs
	}
	if jobs := claim(10); len(jobs) != 10 || len(inFlight) != 4 || maxOf(inFlight)-minOf(inFlight) > 1 {
		t.Fatalf("10 claims in turns: %v", inFlight)
	}
	if jobs := claim(100); len(jobs) != 6 || fmt.Sprint(inFlight) != "map[a:4 b:4 c:4 d:4]" {
		t.Fatalf("up to 4 each: %d more, %v", len(jobs), inFlight)
	}
	if jobs := claim(100); len(jobs) != 0 {
		t.Fatalf("every subscription at its limit, yet %d more claimed", len(jobs))
	}
	// An outcome frees its subscription's place.
	var first webhooks.Job
	rows, err := s.Built.Store.Pool.Query(t.Context(), "SELECT id, webhook_id FROM deliveries WHERE leased_until IS NOT NULL LIMIT 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&first.ID, &first.WebhookID}, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := subscriptions.Record(t.Context(), first.ID, webhooks.Outcome{Status: webhooks.StatusSucceeded, StatusCode: 204}); err != nil {
		t.Fatal(err)
	}
	inFlight[hooks[first.WebhookID.String()]]--
	if jobs := claim(100); len(jobs) != 1 || jobs[0].WebhookID != first.WebhookID {
		t.Fatalf("after one outcome: %d claimed", len(jobs))
	}
	// Leases that ran out, as a dead dispatcher leaves them, no longer
	// count, and their deliveries are due again.
	if _, err := s.Built.Store.Pool.Exec(t.Context(), `UPDATE deliveries SET leased_until = now() - interval '1 second',
		next_attempt_at = now() - interval '1 second' WHERE leased_until IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if jobs := claim(100); len(jobs) != 16 {
		t.Fatalf("after the leases ran out: %d claimed, want 16", len(jobs))
	}
}

func maxOf(m map[string]int) int {
	out := 0
	for _, v := range m {
		out = max(out, v)
	}
	return out
}

func minOf(m map[string]int) int {
	out := -1
	for _, v := range m {
		if out < 0 || v < out {
			out = v
		}
	}
	return out
}

// One client may have MaxPerClient subscriptions; one more is a 409 that
// says so and creates nothing, also when many are made at once; other
// clients are not affected, and a delete makes room.
func TestWebhooksPerClientAreCapped(t *testing.T) {
	t.Parallel()
	cfg := idleDispatcher()
	cfg.MaxPerClient = 3
	s := servicetest.Start(t, SpecWith(cfg))
	hook := map[string]any{"url": "https://93.184.216.34/hook", "types": []string{"asset.*"}}
	var wg sync.WaitGroup
	statuses := make(chan int, 8)
	for range 8 { // at once: exactly three pass
		wg.Go(func() {
			statuses <- s.Client.Do(t, "POST", "/webhooks", s.RW, hook).Status
		})
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for code := range statuses {
		counts[code]++
	}
	if counts[201] != 3 || counts[409] != 5 {
		t.Fatalf("8 creates at once against a cap of 3: %v", counts)
	}
	over := s.Call(409, "POST", "/webhooks", s.RW, hook).JSON()
	if over["type"] != "urn:asset-registry:problem:subscription-limit" || over["limit"] != 3.0 || !strings.Contains(over["detail"].(string), "3 webhook subscriptions") {
		t.Errorf("over the cap: %v", over)
	}
	list := s.Call(200, "GET", "/webhooks", s.RW, nil).List()
	if len(list) != 3 {
		t.Fatalf("%d subscriptions after the refusals", len(list))
	}
	s.Call(201, "POST", "/webhooks", s.Other, hook)
	s.Call(204, "DELETE", "/webhooks/"+list[0]["id"].(string), s.RW, nil)
	s.Call(201, "POST", "/webhooks", s.RW, hook)
}

// The purge removes the deliveries that succeeded or failed longer ago
// than the retention, in batches, and nothing else: pending ones stay
// whatever their age, and recent ones stay. The count reads the pending
// and the failed ones.
func TestDeliveriesPurgedPastRetention(t *testing.T) {
	s := servicetest.StartParallel(t, Spec())
	hooks := webhooks.NewStore(s.Built.Store)
	pool := s.Built.Store.Pool
	hook := uuid.New()
	if _, err := pool.Exec(t.Context(), `INSERT INTO webhooks (id, url, types, secret, created_at, created_by, updated_at, updated_by)
		VALUES ($1, 'https://example.com/hook', '{}', 'whsec_x', now(), 'test', now(), 'test')`, hook); err != nil {
		t.Fatal(err)
	}
	insert := func(n int, status, age string) {
		t.Helper()
		ids := make([]uuid.UUID, n) // UUIDv7, as the dispatcher makes them: the table is partitioned by their time
		for i := range ids {
			ids[i] = store.NewID()
		}
		if _, err := pool.Exec(t.Context(), `INSERT INTO deliveries (id, webhook_id, event_seq, event_id, subject, status, updated_at)
			SELECT id, $1, n, gen_random_uuid(), 'asset:' || n, $2, now() - $3::interval FROM unnest($4::uuid[]) WITH ORDINALITY AS t(id, n)`,
			hook, status, age, ids); err != nil {
			t.Fatal(err)
		}
	}
	insert(2400, webhooks.StatusSucceeded, "2 hours")
	insert(100, webhooks.StatusFailed, "2 hours")
	insert(3, webhooks.StatusPending, "2 hours")
	insert(5, webhooks.StatusSucceeded, "10 minutes")
	insert(7, webhooks.StatusFailed, "10 minutes")
	if n, err := hooks.PurgeDeliveries(t.Context(), time.Hour); err != nil || n != 2500 {
		t.Fatalf("purged %d deliveries (%v), want the 2,500 settled over an hour ago", n, err)
	}
	counts, err := hooks.DeliveryCounts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if counts[webhooks.StatusPending] != 3 || counts[webhooks.StatusFailed] != 7 {
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
	s := servicetest.StartParallel(t, Spec())
	st := newTestStore(s)
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
