package events

import (
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// A passport far larger than what the process may hold for it is written
// as it is read: the heap grows by a bounded buffer, not by the bundle
// (before, its events were held several times over), and the answer
// declares its cost by its size for the gateway's rate limit.
func TestLargePassportIsStreamedAndCosted(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 16 MiB of events")
	}
	// Chaining 16 MiB of events into the log is one statement, which a
	// machine busy with other suites has stretched past the default
	// 5 s statement timeout; what is tested here is the passport's memory.
	s, keys := startSigning(t, func(c *servicekit.Config) { c.Database.StatementTimeout = time.Minute })
	st := newTestStore(s)
	// 16 MiB of actions' data make a passport of about 37 MiB (each
	// action is both a record and an event), over twice the heap growth
	// allowed below: a server that held the bundle would exceed it.
	const actions, dataBytes = 32, 512 << 10
	asset, assetType := uuid.NewString(), uuid.NewString()
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	store := func(kind, id, data string) {
		t.Helper()
		at = at.Add(time.Second)
		e := outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: kind + ".created", Time: at,
			Subject: outbox.EventSubject{Kind: kind, ID: id}, Actor: "inspector-app", Data: json.RawMessage(data)}
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.StoreEvents(t.Context(), []feed.Incoming{{Event: e, Raw: raw}}); err != nil {
			t.Fatal(err)
		}
	}
	store("asset_type", assetType, `{"id":"`+assetType+`"}`)
	store("asset", asset, `{"id":"`+asset+`","asset_type_id":"`+assetType+`"}`)
	report := strings.Repeat("x", dataBytes)
	for range actions {
		id := uuid.NewString()
		store("action", id, `{"id":"`+id+`","asset_id":"`+asset+`","report":"`+report+`"}`)
	}
	report = ""
	sign(t, s, keys)

	req, err := http.NewRequestWithContext(t.Context(), "GET", s.Client.BaseURL+"/assets/"+asset+"/passport", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.RO)
	// Garbage is collected early, so the heap's high-water is about what
	// the passport holds live.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	base := heapBytes()
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), heapBytes()))
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The body is checked as it arrives, never held: its shape is JSON,
	// and it holds every action's event.
	var size countingWriter
	dec := json.NewDecoder(io.TeeReader(resp.Body, &size))
	var members int
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("status %d: the passport does not start as an object (%v, %v)", resp.StatusCode, tok, err)
	}
	var events, records int
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		members++
		switch key {
		case "actions", "events":
			if _, err := dec.Token(); err != nil {
				t.Fatal(err)
			}
			for dec.More() {
				var item struct {
					ID        string `json:"id"`
					LeafIndex *uint64
				}
				if err := dec.Decode(&item); err != nil {
					t.Fatal(err)
				}
				if key == "events" {
					events++
				} else {
					records++
				}
			}
			if _, err := dec.Token(); err != nil {
				t.Fatal(err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	<-sampled
	if resp.StatusCode != 200 || members != 11 || records != actions || events != actions+2 {
		t.Fatalf("status %d, %d members, %d action records, %d events: want 200, 11, %d and %d", resp.StatusCode, members, records, events, actions, actions+2)
	}
	grown := int64(peak.Load()) - int64(base)
	t.Logf("passport of %d MiB: the heap grew by at most %d MiB while it was served", size/(1<<20), grown/(1<<20))
	if size < 2*actions*dataBytes {
		t.Fatalf("the passport is %d bytes, want more than twice its actions' data", size)
	}
	if grown > 16<<20 {
		t.Errorf("serving a passport of %d MiB grew the heap by %d MiB: want a bounded buffer, not the bundle", size/(1<<20), grown/(1<<20))
	}
	cost, err := strconv.ParseInt(resp.Header.Get(httpx.CostHeader), 10, 64)
	if want := httpx.CostOf(int64(size)); err != nil || cost < want*3/4 || cost > want*3/2 {
		t.Errorf("%s %q for a passport of %d bytes, want about %d", httpx.CostHeader, resp.Header.Get(httpx.CostHeader), size, want)
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// heapBytes is the bytes of live and not yet swept heap objects.
func heapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// A passport link answers the asset's passport without a token, exactly
// as the asset's own passport route, counts each fetch, and answers 404
// once deleted or expired; its URL is absolute, holds 256 random bits and
// is shown only when made.
func TestPassportLinks(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	st := newTestStore(s)
	asset := uuid.NewString()
	e := outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: "asset.created", Time: time.Now().UTC(),
		Subject: outbox.EventSubject{Kind: "asset", ID: asset}, Actor: "inspector-app", Data: json.RawMessage(`{"id":"` + asset + `"}`)}
	raw, _ := json.Marshal(e)
	if _, err := st.StoreEvents(t.Context(), []feed.Incoming{{Event: e, Raw: raw}}); err != nil {
		t.Fatal(err)
	}
	sign(t, s, keys)

	created := s.Call(201, "POST", "/assets/"+asset+"/passport_links", s.RW, map[string]any{})
	link := created.JSON()
	url, _ := link["url"].(string)
	if created.Header.Get("Location") != url || !strings.HasPrefix(url, servicetest.Audience+"/passports/") ||
		len(strings.TrimPrefix(url, servicetest.Audience+"/passports/")) < 43 || link["created_by"] != "rw-client" {
		t.Fatalf("link %v, Location %q", link, created.Header.Get("Location"))
	}
	path := strings.TrimPrefix(url, servicetest.Audience)
	want := s.Call(200, "GET", "/assets/"+asset+"/passport", s.RO, nil).Raw
	for range 2 {
		if got := s.Call(200, "GET", path, "", nil).Raw; string(got) != string(want) {
			t.Fatalf("through the link:\n%s\nthe asset's:\n%s", got, want)
		}
	}
	list := s.Call(200, "GET", "/assets/"+asset+"/passport_links", s.RO, nil)
	var links []map[string]any
	if err := json.Unmarshal(list.Raw, &links); err != nil || len(links) != 1 || links[0]["fetch_count"] != 2.0 ||
		links[0]["last_fetched_at"] == nil || links[0]["url"] != nil {
		t.Fatalf("links %s", list.Raw)
	}
	s.Call(404, "GET", "/passports/"+strings.Repeat("A", 43), "", nil)
	s.Call(204, "DELETE", "/assets/"+asset+"/passport_links/"+link["id"].(string), s.RW, nil)
	s.Call(404, "GET", path, "", nil)
	s.Call(404, "DELETE", "/assets/"+asset+"/passport_links/"+link["id"].(string), s.RW, nil)

	soon := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	expiring := s.Call(201, "POST", "/assets/"+asset+"/passport_links", s.RW, map[string]any{"expires_at": soon}).JSON()
	expired := strings.TrimPrefix(expiring["url"].(string), servicetest.Audience)
	s.Call(200, "GET", expired, "", nil)
	time.Sleep(time.Until(time.Now().Add(1100 * time.Millisecond)))
	s.Call(404, "GET", expired, "", nil)

	s.Call(422, "POST", "/assets/"+asset+"/passport_links", s.RW, map[string]any{"expires_at": "2001-01-01T00:00:00Z"})
	s.Call(404, "POST", "/assets/"+uuid.NewString()+"/passport_links", s.RW, map[string]any{})
	s.Call(403, "POST", "/assets/"+asset+"/passport_links", s.RO, map[string]any{})
}

// A passport ends with what it tells but does not prove: the asset's
// compliance rows as the actions service answers them for the day it is
// made, and who performed each action, named as the registry knew them at
// the checkpoint (a rename after it is not in this passport).
func TestPassportInformational(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	st := newTestStore(s)
	asset, org, person, done, open := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	store := func(kind, op, id, data string) {
		t.Helper()
		at = at.Add(time.Second)
		e := outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: kind + "." + op, Time: at,
			Subject: outbox.EventSubject{Kind: kind, ID: id}, Actor: "inspector-app", Data: json.RawMessage(data)}
		raw, _ := json.Marshal(e)
		if _, err := st.StoreEvents(t.Context(), []feed.Incoming{{Event: e, Raw: raw}}); err != nil {
			t.Fatal(err)
		}
	}
	store("organization", "created", org, `{"id":"`+org+`","name":"Kontroll AS"}`)
	store("person", "created", person, `{"id":"`+person+`","first_name":"Ingrid","last_name":"Kontrollør"}`)
	store("asset", "created", asset, `{"id":"`+asset+`"}`)
	store("action", "created", done, `{"id":"`+done+`","asset_id":"`+asset+`","organization_id":"`+org+`"}`)
	store("action", "updated", done, `{"id":"`+done+`","asset_id":"`+asset+`","organization_id":"`+org+`","person_id":"`+person+`"}`)
	store("action", "created", open, `{"id":"`+open+`","asset_id":"`+asset+`","performed_by_person":"someone"}`)
	sign(t, s, keys)
	store("organization", "updated", org, `{"id":"`+org+`","name":"Renamed AS"}`)
	row := `{"asset_id":"` + asset + `","action_type":"expert_control","state":"valid","last_action_id":"` + done + `"}`
	s.StandIn("actions").SetCompliance(asset, json.RawMessage(row))

	var p struct {
		Informational struct {
			About      string `json:"about"`
			Compliance struct {
				AsOf string            `json:"as_of"`
				Rows []json.RawMessage `json:"rows"`
			} `json:"compliance"`
			Performers []map[string]any `json:"performers"`
		} `json:"informational"`
	}
	if err := json.Unmarshal(s.Call(200, "GET", "/assets/"+asset+"/passport", s.RO, nil).Raw, &p); err != nil {
		t.Fatal(err)
	}
	info := p.Informational
	today := time.Now().UTC().Format(time.DateOnly)
	if !strings.HasPrefix(info.About, "not proved") || info.Compliance.AsOf != today || len(info.Compliance.Rows) != 1 ||
		string(info.Compliance.Rows[0]) != row {
		t.Errorf("informational %+v", info)
	}
	if asked := s.StandIn("actions").ComplianceAsked(); len(asked) != 1 ||
		!strings.Contains(asked[0], "asset_id="+asset) || !strings.Contains(asked[0], "as_of="+today) {
		t.Errorf("the actions service was asked %q", asked)
	}
	want := []map[string]any{
		{"action_id": done, "organization": map[string]any{"id": org, "name": "Kontroll AS"},
			"person": map[string]any{"id": person, "name": "Ingrid Kontrollør"}},
		{"action_id": open, "organization": nil, "person": nil},
	}
	got, _ := json.Marshal(info.Performers)
	if wanted, _ := json.Marshal(want); string(got) != string(wanted) {
		t.Errorf("performers %s, want %s", got, wanted)
	}
}
