package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/testkit"
)

// webhookReceiver is an integration's endpoint on loopback (make run's
// stack allows http://127.0.0.1:*): it checks each delivery's signature
// the way docs/events.md tells integration authors to, by hand.
type webhookReceiver struct {
	*httptest.Server
	secret string
	mu     sync.Mutex
	got    map[string]map[string]any // by webhook-id
	bad    []string
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	r := &webhookReceiver{got: map[string]map[string]any{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		id := req.Header.Get("webhook-id")
		if err := verifySignature(r.secret, req.Header, body); err != nil {
			r.bad = append(r.bad, fmt.Sprintf("%s: %v", id, err))
		}
		var e map[string]any
		_ = json.Unmarshal(body, &e)
		if e["id"] != id {
			r.bad = append(r.bad, fmt.Sprintf("webhook-id %s carries event %v", id, e["id"]))
		}
		r.got[id] = e
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func verifySignature(secret string, h http.Header, body []byte) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("timestamp %q", h.Get("webhook-timestamp"))
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.%s", h.Get("webhook-id"), ts, body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("no signature matches: %q", h.Get("webhook-signature"))
}

var linkNext = regexp.MustCompile(`<([^>]+)>; rel="next"`)

// The recording flow of the interface produces the expected events in the
// feed, in each resource's history and at a subscribed receiver, signed.
func TestChangeEventsThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	call := func(status int, method, path, token string, body any, headers ...string) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, method, path, token, body, headers...), status)
	}
	receiver := newWebhookReceiver(t)
	hook := call(201, "POST", "/webhooks", rw, map[string]any{"url": receiver.URL + "/registry", "description": "e2e",
		"types": []string{"organization.*", "person.*", "person_organization.*", "asset_type.*", "asset.*", "action.*",
			"action_document.*", "document.*"}}).JSON()
	receiver.mu.Lock()
	receiver.secret = hook["secret"].(string)
	receiver.mu.Unlock()
	next := linkNext.FindStringSubmatch(call(200, "GET", "/events?after=now", ro, nil).Header.Get("Link"))[1]

	// The recording flow.
	org := call(201, "POST", "/organizations", rw, map[string]any{"name": "Events AS", "registration_number": unique("reg"),
		"organization_type": "private", "country": "NO"}).JSON()["id"].(string)
	person := call(201, "POST", "/people", rw, map[string]any{"first_name": "Eva", "last_name": unique("Hendelse")}).JSON()["id"].(string)
	call(201, "POST", fmt.Sprintf("/people/%s/organizations/%s?relation_type=employee", person, org), rw, nil)
	brand := unique("Eventlift")
	assetType := call(201, "POST", "/asset_types", rw, map[string]any{"brand": brand, "model": "E-1"}).JSON()["id"].(string)
	asset := call(201, "POST", "/assets", rw, map[string]any{"serial_number": unique("SN"), "asset_type_id": assetType}).JSON()["id"].(string)
	action := call(201, "POST", "/actions", rw, map[string]any{"asset_id": asset, "action_type": "expert_control",
		"performed_at": "2025-03-14", "person_id": person, "organization_id": org, "status_ok": true}).JSON()["id"].(string)
	document := uploadThroughGateway(t, rw, "report.pdf", "application/pdf", "%PDF-1.7 events report")
	actionDocument := call(201, "POST", "/actions/"+action+"/action_documents", rw, map[string]any{"action_id": action,
		"document_id": document, "source_system": "e2e", "source_reference": unique("ref")}).JSON()["id"].(string)
	call(200, "PATCH", "/people/"+person, rw, map[string]any{"first_name": "Eve"})
	call(204, "DELETE", "/actions/"+action+"/action_documents/"+actionDocument, rw, nil)

	link := person + ":" + org + ":employee"
	want := map[string][]string{ // per subject, in order
		org: {"organization.created"}, person: {"person.created", "person.updated"}, link: {"person_organization.created"},
		assetType: {"asset_type.created"}, asset: {"asset.created"}, action: {"action.created"},
		document: {"document.created"}, actionDocument: {"action_document.created", "action_document.deleted"},
	}
	total := 0
	for _, types := range want {
		total += len(types)
	}

	// The feed, followed by its Link as a client polls it.
	got := map[string][]string{}
	var ours []map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for len(ours) < total && time.Now().Before(deadline) {
		r := call(200, "GET", next, ro, nil)
		for _, e := range r.List() {
			if _, mine := want[e["subject"].(map[string]any)["id"].(string)]; mine {
				ours = append(ours, e)
			}
		}
		next = linkNext.FindStringSubmatch(r.Header.Get("Link"))[1]
		if len(r.List()) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, e := range ours {
		id := e["subject"].(map[string]any)["id"].(string)
		got[id] = append(got[id], e["type"].(string))
		if e["actor"] != creds.ClientID || e["request_id"] == "" || e["data"] == nil {
			t.Errorf("event %v", e)
		}
	}
	for subject, types := range want {
		if !slices.Equal(got[subject], types) {
			t.Errorf("feed, subject %s: %v, want %v", subject, got[subject], types)
		}
	}
	for _, e := range ours {
		if e["type"] == "person.updated" {
			if changes := e["changes"].(map[string]any)["first_name"]; fmt.Sprint(changes) != "[Eva Eve]" {
				t.Errorf("person.updated changes: %v", e["changes"])
			}
		}
	}

	// Each resource's history, still there after a delete.
	for path, types := range map[string][]string{
		"/organizations/" + org: want[org], "/people/" + person: want[person], "/asset_types/" + assetType: want[assetType],
		"/assets/" + asset: want[asset], "/actions/" + action: want[action], "/documents/" + document: want[document],
	} {
		var history []string
		for _, e := range call(200, "GET", path+"/history", ro, nil).List() {
			history = append(history, e["type"].(string))
		}
		if !slices.Equal(history, types) {
			t.Errorf("%s/history: %v, want %v", path, history, types)
		}
	}
	call(404, "GET", "/assets/"+person+"/history", ro, nil)

	// The receiver got every event, signed.
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(100 * time.Millisecond) {
		receiver.mu.Lock()
		n := 0
		for _, e := range ours {
			if receiver.got[e["id"].(string)] != nil {
				n++
			}
		}
		receiver.mu.Unlock()
		if n == len(ours) {
			break
		}
	}
	receiver.mu.Lock()
	defer receiver.mu.Unlock()
	for _, e := range ours {
		if receiver.got[e["id"].(string)] == nil {
			t.Errorf("event %s %s was not delivered", e["type"], e["id"])
		}
	}
	if len(receiver.bad) > 0 {
		t.Errorf("deliveries that do not verify: %v", receiver.bad)
	}
}
