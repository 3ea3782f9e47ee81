package crossservice

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/note"

	"github.com/assetregistry/registry/pkg/outbox"
	sdk "github.com/assetregistry/registry/sdk"
	"github.com/assetregistry/registry/services/events"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/services/events/tlog/heads"
	"github.com/assetregistry/registry/services/events/tlog/passport"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// A passport the events service builds verifies with the SDK and the
// log's public key alone, and editing, removing, reordering or adding any
// kind of element of it makes the check fail.
func TestPassportVerifiesAndEveryChangeIsSeen(t *testing.T) {
	t.Parallel()
	signing, public, err := note.GenerateKey(rand.Reader, "registry.test/log")
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.DefaultConfig()
	cfg.Log.SigningKey = signing
	keys, err := cfg.Log.Keys()
	if err != nil {
		t.Fatal(err)
	}
	s := servicetest.Start(t, events.SpecWith(cfg))
	log := tlog.NewStore(s.Built.Store)
	st := feed.NewStore(s.Built.Store, log)

	file := []byte("%PDF-1.7 an inspection report")
	sum := sha256.Sum256(file)
	assetType, asset, other := uuid.NewString(), uuid.NewString(), uuid.NewString()
	kept, dropped, document, link, unlinked := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	org := uuid.NewString()
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	var batch []outbox.Event
	add := func(kind, op, id, data string) {
		at = at.Add(time.Minute)
		e := outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: kind + "." + op, Time: at,
			Subject: outbox.EventSubject{Kind: kind, ID: id}, Actor: "inspector-app", RequestID: "req", Data: json.RawMessage(data)}
		batch = append(batch, e)
	}
	add("asset_type", "created", assetType, `{"id":"`+assetType+`","brand":"Liftco","model":"L-1"}`)
	add("asset", "created", asset, `{"id":"`+asset+`","serial_number":"SN-1","asset_type_id":"`+assetType+`"}`)
	add("asset", "created", other, `{"id":"`+other+`","serial_number":"SN-2","asset_type_id":"`+assetType+`"}`)
	add("action", "created", kept, `{"id":"`+kept+`","asset_id":"`+asset+`","action_type":"expert_control","status_ok":true}`)
	add("action", "created", dropped, `{"id":"`+dropped+`","asset_id":"`+asset+`","action_type":"maintenance"}`)
	add("document", "created", document, `{"id":"`+document+`","filename":"report.pdf","sha256":"`+hex.EncodeToString(sum[:])+`"}`)
	add("action_document", "created", link, `{"id":"`+link+`","action_id":"`+kept+`","document_id":"`+document+`"}`)
	add("action_document", "created", unlinked, `{"id":"`+unlinked+`","action_id":"`+dropped+`","document_id":"`+document+`"}`)
	add("action", "updated", kept, `{"id":"`+kept+`","asset_id":"`+asset+`","action_type":"expert_control","status_ok":false,"organization_id":"`+org+`"}`)
	add("action_document", "deleted", unlinked, `{"id":"`+unlinked+`","action_id":"`+dropped+`","document_id":"`+document+`"}`)
	add("action", "deleted", dropped, `{"id":"`+dropped+`","asset_id":"`+asset+`","action_type":"maintenance"}`)
	add("action", "created", uuid.NewString(), `{"id":"x","asset_id":"`+other+`"}`)
	add("organization", "created", org, `{"id":"`+org+`","name":"Kontroll AS"}`)
	incoming := make([]feed.Incoming, len(batch))
	for i, e := range batch {
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		incoming[i] = feed.Incoming{Event: e, Raw: raw}
	}
	if _, err := st.StoreEvents(t.Context(), incoming); err != nil {
		t.Fatal(err)
	}
	if _, _, err := log.SignCheckpoint(t.Context(), keys); err != nil {
		t.Fatal(err)
	}
	s.StandIn("actions").SetCompliance(asset, json.RawMessage(`{"asset_id":"`+asset+`","asset_type_id":"`+assetType+
		`","action_type":"expert_control","state":"failed","last_action_id":"`+kept+`","status_ok":false,"valid_through":null}`))
	bundle := s.Call(200, "GET", "/assets/"+asset+"/passport", s.RO, nil).Raw
	files := fstest.MapFS{document: {Data: file}}
	r, err := sdk.VerifyPassport(bundle, []string{public}, files)
	if err != nil {
		t.Fatalf("the passport as the registry made it: %v", err)
	}
	if r.Events != 10 || len(r.Files) != 1 {
		t.Errorf("verified %d events and %d files, want 10 and 1", r.Events, len(r.Files))
	}
	// What it tells unproved, as the SDK reads it.
	if info := r.Informational; info == nil || info.Compliance == nil || len(info.Compliance.Rows) != 1 ||
		info.Compliance.Rows[0].State != "failed" || len(info.Performers) != 2 || info.Performers[0].ActionID != kept ||
		info.Performers[0].Organization == nil || info.Performers[0].Organization.Name == nil ||
		*info.Performers[0].Organization.Name != "Kontroll AS" || info.Performers[1].Organization != nil {
		t.Errorf("informational %+v", r.Informational)
	}
	var p map[string]any
	if err := json.Unmarshal(bundle, &p); err != nil {
		t.Fatal(err)
	}
	if len(p["actions"].([]any)) != 2 || p["actions"].([]any)[1].(map[string]any)["deleted_by"] != "inspector-app" {
		t.Errorf("actions %v", p["actions"])
	}

	// Each row changes one element of the bundle (decoded as plain JSON).
	list := func(v map[string]any, k string) []any { return v[k].([]any) }
	rec := func(v map[string]any, k string, i int) map[string]any { return list(v, k)[i].(map[string]any) }
	event := func(v map[string]any, i int) map[string]any { return list(v, "events")[i].(map[string]any) }
	editEvent := func(v map[string]any, i int, edit func([]byte) []byte) {
		raw, _ := base64.StdEncoding.DecodeString(event(v, i)["event"].(string))
		event(v, i)["event"] = base64.StdEncoding.EncodeToString(edit(raw))
	}
	swap := func(l []any, i, j int) { l[i], l[j] = l[j], l[i] }
	info := func(v map[string]any) map[string]any { return v["informational"].(map[string]any) }
	performer := func(v map[string]any, i int) map[string]any { return info(v)["performers"].([]any)[i].(map[string]any) }
	rows := []struct {
		name   string
		change func(v map[string]any)
	}{
		{"checkpoint edited", func(v map[string]any) {
			v["checkpoint"] = strings.Replace(v["checkpoint"].(string), "\n13\n", "\n12\n", 1)
		}},
		{"checkpoint removed", func(v map[string]any) { delete(v, "checkpoint") }},
		{"format edited", func(v map[string]any) { v["format"] = "asset-registry-passport/0" }},
		{"asset id edited", func(v map[string]any) { v["asset_id"] = other }},
		{"a member added", func(v map[string]any) { v["verified"] = true }},
		{"asset edited", func(v map[string]any) {
			v["asset"].(map[string]any)["resource"].(map[string]any)["serial_number"] = "SN-9"
		}},
		{"asset removed", func(v map[string]any) { delete(v, "asset") }},
		{"asset type edited", func(v map[string]any) { v["asset_type"].(map[string]any)["resource"].(map[string]any)["model"] = "L-2" }},
		{"asset type removed", func(v map[string]any) { v["asset_type"] = nil }},
		{"action edited", func(v map[string]any) { rec(v, "actions", 0)["resource"].(map[string]any)["status_ok"] = true }},
		{"action's deleter edited", func(v map[string]any) { rec(v, "actions", 1)["deleted_by"] = "someone-else" }},
		{"action undeleted", func(v map[string]any) { rec(v, "actions", 1)["deleted"] = false }},
		{"action removed", func(v map[string]any) { v["actions"] = list(v, "actions")[:1] }},
		{"actions reordered", func(v map[string]any) { swap(list(v, "actions"), 0, 1) }},
		{"action added", func(v map[string]any) { v["actions"] = append(list(v, "actions"), list(v, "actions")[0]) }},
		{"action's events reordered", func(v map[string]any) { swap(rec(v, "actions", 0)["events"].([]any), 0, 1) }},
		{"action's event removed", func(v map[string]any) { rec(v, "actions", 0)["events"] = rec(v, "actions", 0)["events"].([]any)[:1] }},
		{"action document edited", func(v map[string]any) { rec(v, "action_documents", 0)["id"] = uuid.NewString() }},
		{"action document removed", func(v map[string]any) { v["action_documents"] = list(v, "action_documents")[1:] }},
		{"action documents reordered", func(v map[string]any) { swap(list(v, "action_documents"), 0, 1) }},
		{"document's hash edited", func(v map[string]any) { rec(v, "documents", 0)["sha256"] = hex.EncodeToString(make([]byte, 32)) }},
		{"document removed", func(v map[string]any) { v["documents"] = []any{} }},
		{"document added", func(v map[string]any) { v["documents"] = append(list(v, "documents"), list(v, "documents")[0]) }},
		{"an event's byte edited", func(v map[string]any) { editEvent(v, 3, func(b []byte) []byte { b[len(b)-3] ^= 1; return b }) }},
		{"an event removed", func(v map[string]any) { v["events"] = append(list(v, "events")[:4:4], list(v, "events")[5:]...) }},
		{"events reordered", func(v map[string]any) { swap(list(v, "events"), 2, 3) }},
		{"an event added twice", func(v map[string]any) { v["events"] = append(list(v, "events"), list(v, "events")[9]) }},
		{"an event's leaf edited", func(v map[string]any) { event(v, 9)["leaf_index"] = 11.0 }},
		{"a proof hash edited", func(v map[string]any) {
			event(v, 0)["proof"].([]any)[0] = base64.StdEncoding.EncodeToString(make([]byte, 32))
		}},
		{"a proof hash removed", func(v map[string]any) { event(v, 0)["proof"] = event(v, 0)["proof"].([]any)[1:] }},
		{"proof hashes reordered", func(v map[string]any) { swap(event(v, 0)["proof"].([]any), 0, 1) }},
		// The informational part is not proved, but its ids are: a
		// performer names an action's organization as its events do, and
		// the rows are of the passport's asset.
		{"a performer's organization edited", func(v map[string]any) {
			performer(v, 0)["organization"].(map[string]any)["id"] = uuid.NewString()
		}},
		{"a performer's organization removed", func(v map[string]any) { performer(v, 0)["organization"] = nil }},
		{"a performer of another action", func(v map[string]any) { performer(v, 1)["action_id"] = uuid.NewString() }},
		{"a compliance row of another asset", func(v map[string]any) {
			info(v)["compliance"].(map[string]any)["rows"].([]any)[0].(map[string]any)["asset_id"] = other
		}},
		{"a proof hash added", func(v map[string]any) {
			event(v, 0)["proof"] = append(event(v, 0)["proof"].([]any), event(v, 0)["proof"].([]any)[0])
		}},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			var v map[string]any
			if err := json.Unmarshal(bundle, &v); err != nil {
				t.Fatal(err)
			}
			tt.change(v)
			changed, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sdk.VerifyPassport(changed, []string{public}, nil); !errors.Is(err, sdk.ErrUnverified) {
				t.Errorf("verify says %v", err)
			}
		})
	}
	// What the log does not prove, a verifier cannot tell from the truth:
	// a name or a row's state edited verifies, and says so only as
	// informational.
	t.Run("the names and rows are not proved", func(t *testing.T) {
		var v map[string]any
		if err := json.Unmarshal(bundle, &v); err != nil {
			t.Fatal(err)
		}
		performer(v, 0)["organization"].(map[string]any)["name"] = "Someone Else AS"
		info(v)["compliance"].(map[string]any)["rows"].([]any)[0].(map[string]any)["state"] = "valid"
		info(v)["compliance"].(map[string]any)["rows"].([]any)[0].(map[string]any)["added_later"] = true
		changed, _ := json.Marshal(v)
		r, err := sdk.VerifyPassport(changed, []string{public}, nil)
		if err != nil || *r.Informational.Performers[0].Organization.Name != "Someone Else AS" {
			t.Errorf("verify says %+v, %v", r, err)
		}
	})
	t.Run("a file changed", func(t *testing.T) {
		changed := fstest.MapFS{document: {Data: append([]byte("x"), file...)}}
		if _, err := sdk.VerifyPassport(bundle, []string{public}, changed); !errors.Is(err, sdk.ErrUnverified) {
			t.Errorf("verify says %v", err)
		}
	})
	t.Run("another log's key", func(t *testing.T) {
		_, stranger, _ := note.GenerateKey(rand.Reader, "registry.test/log")
		if _, err := sdk.VerifyPassport(bundle, []string{stranger}, nil); !errors.Is(err, sdk.ErrUnverified) {
			t.Errorf("verify says %v", err)
		}
	})
	s.Call(404, "GET", "/assets/"+uuid.NewString()+"/passport", s.RO, nil)
}

// The passport's wire types are written twice, since the SDK imports
// nothing of the registry and a service nothing but pkg/: the events
// service's and the SDK's must name the same members the same way (the
// test above decodes the service's bundle strictly with the SDK's).
func TestPassportTypesAreTheSDKs(t *testing.T) {
	t.Parallel()
	if passport.Format != sdk.PassportFormat {
		t.Errorf("format %q, the SDK's %q", passport.Format, sdk.PassportFormat)
	}
	for _, pair := range [][2]any{{passport.Record{}, sdk.PassportRecord{}}, {passport.Event{}, sdk.PassportEvent{}}, {heads.Head{}, sdk.AssetHead{}},
		{passport.Party{}, sdk.PassportParty{}}} {
		service, kit := reflect.TypeOf(pair[0]), reflect.TypeOf(pair[1])
		if service.NumField() != kit.NumField() {
			t.Errorf("%s has %d fields, the SDK's %d", service.Name(), service.NumField(), kit.NumField())
			continue
		}
		for i := range service.NumField() {
			a, b := service.Field(i), kit.Field(i)
			if a.Name != b.Name || a.Tag.Get("json") != b.Tag.Get("json") || a.Type.String() != b.Type.String() {
				t.Errorf("%s.%s %s `json:%q`, the SDK's %s %s `json:%q`", service.Name(), a.Name, a.Type, a.Tag.Get("json"), b.Name, b.Type, b.Tag.Get("json"))
			}
		}
	}
	// The informational part's types hold types of their own (the SDK's
	// rows are typed, the service passes the actions service's on): the
	// same members by the same names.
	for _, pair := range [][2]any{{passport.Informational{}, sdk.PassportInformational{}}, {passport.Compliance{}, sdk.PassportCompliance{}},
		{passport.Performer{}, sdk.PassportPerformer{}}} {
		service, kit := reflect.TypeOf(pair[0]), reflect.TypeOf(pair[1])
		var a, b []string
		for i := range service.NumField() {
			a = append(a, service.Field(i).Name+" "+service.Field(i).Tag.Get("json"))
		}
		for i := range kit.NumField() {
			b = append(b, kit.Field(i).Name+" "+kit.Field(i).Tag.Get("json"))
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s has %v, the SDK's %v", service.Name(), a, b)
		}
	}
}

// A passport with any event of its asset's record left out fails
// verification, even when whoever removed it made the rest agree (the
// records rebuilt from the events left, the chain's leaves dropped with
// them): the chain the checkpoint signs is the asset's head, and only
// every event of the record hashes to it.
func TestPassportWithAnEventLeftOutFails(t *testing.T) {
	t.Parallel()
	signing, public, err := note.GenerateKey(rand.Reader, "registry.test/log")
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.DefaultConfig()
	cfg.Log.SigningKey = signing
	keys, err := cfg.Log.Keys()
	if err != nil {
		t.Fatal(err)
	}
	s := servicetest.Start(t, events.SpecWith(cfg))
	log := tlog.NewStore(s.Built.Store)
	st := feed.NewStore(s.Built.Store, log)

	assetType, asset, other := uuid.NewString(), uuid.NewString(), uuid.NewString()
	first, middle, latest, document, link := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	var incoming []feed.Incoming
	add := func(kind, op, id, data string) {
		at = at.Add(time.Minute)
		e := outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: kind + "." + op, Time: at,
			Subject: outbox.EventSubject{Kind: kind, ID: id}, Actor: "inspector-app", RequestID: "req", Data: json.RawMessage(data)}
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		incoming = append(incoming, feed.Incoming{Event: e, Raw: raw})
	}
	action := func(id, asset string, ok bool) string {
		return fmt.Sprintf(`{"id":%q,"asset_id":%q,"action_type":"expert_control","status_ok":%t}`, id, asset, ok)
	}
	add("asset_type", "created", assetType, `{"id":"`+assetType+`","brand":"Liftco"}`)
	add("asset", "created", asset, `{"id":"`+asset+`","serial_number":"SN-1","asset_type_id":"`+assetType+`"}`)
	add("asset", "created", other, `{"id":"`+other+`","serial_number":"SN-2","asset_type_id":"`+assetType+`"}`)
	add("action", "created", first, action(first, asset, true))
	add("action", "created", middle, action(middle, asset, true))
	add("document", "created", document, `{"id":"`+document+`","sha256":"`+strings.Repeat("0", 64)+`"}`)
	add("action_document", "created", link, `{"id":"`+link+`","action_id":"`+first+`","document_id":"`+document+`"}`)
	add("action", "updated", middle, action(middle, asset, false))
	add("action", "updated", middle, action(middle, asset, true))
	add("action", "created", uuid.NewString(), action(uuid.NewString(), other, true))
	add("action", "created", latest, action(latest, asset, false))
	add("asset", "updated", asset, `{"id":"`+asset+`","serial_number":"SN-1b","asset_type_id":"`+assetType+`"}`)
	if _, err := st.StoreEvents(t.Context(), incoming); err != nil {
		t.Fatal(err)
	}
	if _, _, err := log.SignCheckpoint(t.Context(), keys); err != nil {
		t.Fatal(err)
	}
	bundle := s.Call(200, "GET", "/assets/"+asset+"/passport", s.RO, nil).Raw

	// leaveOut removes the events of the bundle that drop names, rebuilds
	// its records from those left as a verifier derives them, and drops
	// the removed leaves from the chain too.
	leaveOut := func(t *testing.T, drop func(e sdk.Event, leaf uint64) bool) []byte {
		t.Helper()
		var p sdk.Passport
		if err := json.Unmarshal(bundle, &p); err != nil {
			t.Fatal(err)
		}
		var kept []sdk.PassportEvent
		gone := map[uint64]bool{}
		for _, e := range p.Events {
			var ev sdk.Event
			if err := json.Unmarshal(e.Event, &ev); err != nil {
				t.Fatal(err)
			}
			if drop(ev, e.LeafIndex) {
				gone[e.LeafIndex] = true
				continue
			}
			kept = append(kept, e)
		}
		if len(gone) == 0 {
			t.Fatal("nothing left out")
		}
		p.Events = kept
		p.Completeness.Chain = slices.DeleteFunc(p.Completeness.Chain, func(l uint64) bool { return gone[l] })
		rebuildRecords(t, &p)
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	subject := func(id string) func(sdk.Event, uint64) bool {
		return func(e sdk.Event, _ uint64) bool {
			return e.Subject.ID == id || strings.Contains(string(e.Data), `"action_id":"`+id+`"`)
		}
	}
	lastOf := func(id string) func(sdk.Event, uint64) bool {
		var leaf uint64
		var p sdk.Passport
		_ = json.Unmarshal(bundle, &p)
		for _, e := range p.Events {
			var ev sdk.Event
			_ = json.Unmarshal(e.Event, &ev)
			if ev.Subject.ID == id {
				leaf = e.LeafIndex
			}
		}
		return func(_ sdk.Event, l uint64) bool { return l == leaf }
	}
	rows := []struct {
		name string
		drop func(sdk.Event, uint64) bool
	}{
		{"an action and its events and links", subject(first)},
		{"the latest action", subject(latest)},
		{"one event in the middle of an action's", func(e sdk.Event, _ uint64) bool {
			return e.Subject.ID == middle && e.Type == "action.updated" && strings.Contains(string(e.Data), `"status_ok":false`)
		}},
		{"the asset's own latest event", lastOf(asset)},
		{"an action document link", subject(link)},
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sdk.VerifyPassport(leaveOut(t, tt.drop), []string{public}, nil)
			if !errors.Is(err, sdk.ErrUnverified) {
				t.Errorf("verify says %v", err)
			}
		})
	}
	// The rebuilding alone changes nothing a verifier sees: what fails
	// above is what was left out.
	t.Run("nothing left out", func(t *testing.T) {
		var p sdk.Passport
		if err := json.Unmarshal(bundle, &p); err != nil {
			t.Fatal(err)
		}
		rebuildRecords(t, &p)
		out, _ := json.Marshal(p)
		r, err := sdk.VerifyPassport(out, []string{public}, nil)
		if err != nil || !r.Complete || r.CompleteFrom != 0 {
			t.Errorf("verify says %+v, %v", r, err)
		}
	})
	t.Run("the completeness removed", func(t *testing.T) {
		var p map[string]any
		if err := json.Unmarshal(bundle, &p); err != nil {
			t.Fatal(err)
		}
		p["completeness"] = nil
		out, _ := json.Marshal(p)
		if _, err := sdk.VerifyPassport(out, []string{public}, nil); !errors.Is(err, sdk.ErrUnverified) {
			t.Errorf("verify says %v", err)
		}
	})
}

// rebuildRecords derives a passport's records from its events as a
// verifier does: each subject's latest event, in the order of its first.
func rebuildRecords(t *testing.T, p *sdk.Passport) {
	t.Helper()
	byKind := map[string][]*sdk.PassportRecord{}
	seen := map[string]*sdk.PassportRecord{}
	for _, e := range p.Events {
		var ev sdk.Event
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			t.Fatal(err)
		}
		r := seen[ev.Subject.ID]
		if r == nil {
			r = &sdk.PassportRecord{ID: ev.Subject.ID}
			seen[ev.Subject.ID] = r
			byKind[ev.Subject.Kind] = append(byKind[ev.Subject.Kind], r)
		}
		r.Events = append(r.Events, e.LeafIndex)
		r.Resource = ev.Data
		r.Deleted, r.DeletedAt, r.DeletedBy = false, nil, nil
		if strings.HasSuffix(ev.Type, ".deleted") {
			at, by := ev.Time, ev.Actor
			r.Deleted, r.DeletedAt, r.DeletedBy = true, &at, &by
		}
		if ev.Subject.Kind == "document" {
			var d struct {
				SHA256 string `json:"sha256"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			r.SHA256 = d.SHA256
		}
	}
	list := func(kind string) []sdk.PassportRecord {
		out := []sdk.PassportRecord{}
		for _, r := range byKind[kind] {
			out = append(out, *r)
		}
		return out
	}
	p.Asset = list("asset")[0]
	p.AssetType = nil
	if l := list("asset_type"); len(l) > 0 {
		p.AssetType = &l[0]
	}
	p.Actions, p.ActionDocuments, p.Documents = list("action"), list("action_document"), list("document")
}

// The heads grow checkpoint by checkpoint, each rehashing only the
// buckets its events touched: every asset's passport stays complete and
// verifiable after each, whichever assets changed since.
func TestPassportsStayCompleteAcrossCheckpoints(t *testing.T) {
	t.Parallel()
	signing, public, err := note.GenerateKey(rand.Reader, "registry.test/log")
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.DefaultConfig()
	cfg.Log.SigningKey = signing
	keys, err := cfg.Log.Keys()
	if err != nil {
		t.Fatal(err)
	}
	s := servicetest.Start(t, events.SpecWith(cfg))
	log := tlog.NewStore(s.Built.Store)
	st := feed.NewStore(s.Built.Store, log)
	assets := make([]string, 40)
	for i := range assets {
		assets[i] = uuid.NewString()
	}
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	for round := range 3 {
		var incoming []feed.Incoming
		for i, a := range assets {
			if round > 0 && i%(round+1) != 0 {
				continue // later rounds change some assets only
			}
			at = at.Add(time.Second)
			kind, id, data := "asset", a, `{"id":"`+a+`","round":`+fmt.Sprint(round)+`}`
			if round > 0 {
				id = uuid.NewString()
				kind, data = "action", `{"id":"`+id+`","asset_id":"`+a+`"}`
			}
			e := outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: kind + ".created", Time: at,
				Subject: outbox.EventSubject{Kind: kind, ID: id}, Actor: "inspector-app", Data: json.RawMessage(data)}
			raw, _ := json.Marshal(e)
			incoming = append(incoming, feed.Incoming{Event: e, Raw: raw})
		}
		if _, err := st.StoreEvents(t.Context(), incoming); err != nil {
			t.Fatal(err)
		}
		if _, _, err := log.SignCheckpoint(t.Context(), keys); err != nil {
			t.Fatal(err)
		}
		for _, a := range assets {
			bundle := s.Call(200, "GET", "/assets/"+a+"/passport", s.RO, nil).Raw
			if r, err := sdk.VerifyPassport(bundle, []string{public}, nil); err != nil || !r.Complete {
				t.Fatalf("round %d, asset %s: %+v, %v", round, a, r, err)
			}
		}
	}
}

// An asset recorded before the registry kept the chains (an upgrade's
// migration starts them at the log's size then) has a passport complete
// from that leaf: its later events are chained and proved complete, its
// earlier ones proved alone, and verify says from where.
func TestPassportOfARecordOlderThanTheChains(t *testing.T) {
	t.Parallel()
	signing, public, err := note.GenerateKey(rand.Reader, "registry.test/log")
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.DefaultConfig()
	cfg.Log.SigningKey = signing
	keys, err := cfg.Log.Keys()
	if err != nil {
		t.Fatal(err)
	}
	s := servicetest.Start(t, events.SpecWith(cfg))
	log := tlog.NewStore(s.Built.Store)
	st := feed.NewStore(s.Built.Store, log)
	asset, old, later := uuid.NewString(), uuid.NewString(), uuid.NewString()
	at := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	store := func(kind, id, data string) {
		t.Helper()
		at = at.Add(time.Minute)
		e := outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: kind + ".created", Time: at,
			Subject: outbox.EventSubject{Kind: kind, ID: id}, Actor: "inspector-app", Data: json.RawMessage(data)}
		raw, _ := json.Marshal(e)
		if _, err := st.StoreEvents(t.Context(), []feed.Incoming{{Event: e, Raw: raw}}); err != nil {
			t.Fatal(err)
		}
	}
	store("asset", asset, `{"id":"`+asset+`"}`)
	store("action", old, `{"id":"`+old+`","asset_id":"`+asset+`"}`)
	// What migration 012 does to a log that already holds these two.
	if _, err := s.Built.Store.Pool.Exec(t.Context(), `UPDATE asset_heads_state SET from_leaf = (SELECT size FROM log_state), through = (SELECT size FROM log_state)`); err != nil {
		t.Fatal(err)
	}
	store("action", later, `{"id":"`+later+`","asset_id":"`+asset+`"}`)
	if _, _, err := log.SignCheckpoint(t.Context(), keys); err != nil {
		t.Fatal(err)
	}
	bundle := s.Call(200, "GET", "/assets/"+asset+"/passport", s.RO, nil).Raw
	r, err := sdk.VerifyPassport(bundle, []string{public}, nil)
	if err != nil || !r.Complete || r.CompleteFrom != 2 || r.Events != 3 {
		t.Fatalf("verify says %+v, %v; want complete from leaf 2, 3 events", r, err)
	}
	var p sdk.Passport
	if err := json.Unmarshal(bundle, &p); err != nil {
		t.Fatal(err)
	}
	p.Events = slices.DeleteFunc(p.Events, func(e sdk.PassportEvent) bool { return e.LeafIndex == 2 })
	p.Actions = slices.DeleteFunc(p.Actions, func(a sdk.PassportRecord) bool { return a.ID == later })
	p.Completeness.Chain = []uint64{}
	changed, _ := json.Marshal(p)
	if _, err := sdk.VerifyPassport(changed, []string{public}, nil); !errors.Is(err, sdk.ErrUnverified) {
		t.Errorf("the action after the chains' start left out: verify says %v", err)
	}
}
