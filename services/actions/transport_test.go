package actions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// world is the service under test with the targets its actions name,
// owned by the stand-ins of assets, parties and documents.
type world struct {
	*servicetest.Service
	asset, person, organization string
}

// newWorld starts the service for one test and lets the test run beside
// the package's others (t.Parallel): a world shares nothing, its schema,
// key space and stand-ins are its own. So does every world built on it.
func newWorld(t *testing.T) world {
	t.Helper()
	t.Parallel()
	return worldOn(servicetest.Start(t, Spec()))
}

// worldOn is the world on a running service.
func worldOn(s *servicetest.Service) world {
	w := world{Service: s, asset: uuid.NewString(), person: uuid.NewString(), organization: uuid.NewString()}
	s.StandIn("assets").Add("asset", uuid.MustParse(w.asset), nil)
	s.StandIn("parties").Add("person", uuid.MustParse(w.person), nil)
	s.StandIn("parties").Add("organization", uuid.MustParse(w.organization), nil)
	return w
}

// document makes a document exist at the documents stand-in.
func (w world) document() string {
	id := uuid.New()
	w.StandIn("documents").Add("document", id, refs.Attrs{"content_type": "application/pdf"})
	return id.String()
}

// action is a whole action body naming the world's targets.
func (w world) action(extra map[string]any) map[string]any {
	body := map[string]any{"asset_id": w.asset, "action_type": "expert_control", "performed_at": "2025-03-14",
		"person_id": w.person, "organization_id": w.organization, "reference": "EK-42", "status": "approved",
		"status_ok": true, "status_finalized": true, "status_valid_through": "2026-03-14",
		"source_system": "inspection-app", "source_reference": "42", "data": map[string]any{"brakes": "ok", "load": 1.50},
		"meta_data": map[string]any{"app_version": "3.1"}}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

func TestHTTPActions(t *testing.T) {
	w := newWorld(t)
	created := w.Call(201, "POST", "/actions/", w.RW, w.action(nil))
	a := created.JSON()
	id := a["id"].(string)
	path := "/actions/" + id
	if created.Header.Get("Location") != path || a["created_by"] != "rw-client" || a["status_use_ok"] != true ||
		a["performed_at"] != "2025-03-14" || len(a["action_documents"].([]any)) != 0 ||
		a["data"].(map[string]any)["load"] != 1.5 || a["meta_data"].(map[string]any)["app_version"] != "3.1" {
		t.Fatalf("created: %s (Location %q)", created.Raw, created.Header.Get("Location"))
	}
	got := w.Call(200, "GET", path+"/", w.RO, nil)
	if string(got.Raw) != string(created.Raw) || got.Header.Get("ETag") != created.Header.Get("ETag") {
		t.Errorf("get: %s, create: %s", got.Raw, created.Raw)
	}

	// Merge patch: data merges member by member; status_ok alone sets
	// status_use_ok too.
	patched := w.Call(200, "PATCH", path, w.RW, `{"status_ok":false,"data":{"brakes":"worn","load":null,"chains":"ok"},"reference":" "}`,
		"Content-Type", "application/merge-patch+json").JSON()
	if patched["status_ok"] != false || patched["status_use_ok"] != false || patched["reference"] != nil ||
		fmt.Sprint(patched["data"]) != "map[brakes:worn chains:ok]" {
		t.Errorf("patched: %v", patched)
	}
	kept := w.Call(200, "PATCH", path, w.RW, map[string]any{"status_use_ok": true, "data": map[string]any{"chains": "ok"}}).JSON()
	if kept["status_use_ok"] != true || kept["status_ok"] != false || kept["updated_at"] == patched["updated_at"] {
		t.Errorf("status_use_ok apart: %v", kept)
	}
	same := w.Call(200, "PATCH", path, w.RW, map[string]any{"data": map[string]any{"chains": "ok", "brakes": "worn"}, "action_type": "expert_control"}).JSON()
	if same["updated_at"] != kept["updated_at"] {
		t.Error("a patch that changes nothing moved updated_at")
	}

	// Action documents.
	report := w.document()
	link := w.Call(201, "POST", path+"/action_documents", w.RW, map[string]any{"action_id": id, "document_id": report,
		"source_system": "inspection-app", "source_reference": "report-42"})
	ad := link.JSON()
	adPath := path + "/action_documents/" + ad["id"].(string)
	if link.Header.Get("Location") != adPath || ad["document_id"] != report || ad["created_by"] != "rw-client" {
		t.Fatalf("action document: %s (Location %q)", link.Raw, link.Header.Get("Location"))
	}
	dup := w.Call(409, "POST", path+"/action_documents/", w.RW, map[string]any{"action_id": id, "document_id": report,
		"source_system": "x", "source_reference": "y"}).JSON()
	if dup["existing_id"] != ad["id"] || dup["type"] != httpx.ProblemTypePrefix+"duplicate" {
		t.Errorf("same pair twice: %v", dup)
	}
	withDocs := w.Call(200, "GET", path, w.RO, nil).JSON()
	listed := withDocs["action_documents"].([]any)
	if len(listed) != 1 || fmt.Sprint(listed[0]) != fmt.Sprint(ad) {
		t.Errorf("action_documents = %v, want [%v]", listed, ad)
	}
	relinked := w.Call(200, "PATCH", adPath, w.RW, `{"source_reference":"report-42b"}`, "Content-Type", "application/merge-patch+json").JSON()
	if relinked["source_reference"] != "report-42b" || relinked["document_id"] != report {
		t.Errorf("patched action document: %v", relinked)
	}

	// What the owners ask before deleting: the action names its asset,
	// person and organization, and the action document its document.
	for _, q := range []struct{ kind, id, wantKind string }{
		{"asset", w.asset, "action"}, {"person", w.person, "action"}, {"organization", w.organization, "action"}, {"document", report, "action_document"},
	} {
		if referrers := w.referrers(t, q.kind, q.id); len(referrers) != 1 || referrers[0].(map[string]any)["kind"] != q.wantKind {
			t.Errorf("referrers of %s: %v", q.kind, referrers)
		}
	}

	list := w.Call(200, "GET", "/actions?asset_id="+w.asset+"&action_type=expert_control&status_ok=false&performed_from=2025-03-14&performed_to=2025-03-14", w.RO, nil).List()
	if len(list) != 1 || list[0]["id"] != id || list[0]["action_documents"] != nil {
		t.Errorf("list: %v", list)
	}
	w.Call(204, "DELETE", adPath, w.RW, nil)
	w.Call(404, "DELETE", adPath, w.RW, nil)
	w.Call(201, "POST", path+"/action_documents", w.RW, map[string]any{"action_id": id, "document_id": report, "source_system": "a", "source_reference": "b"})
	w.Call(204, "DELETE", path, w.RW, nil)
	w.Call(404, "GET", path, w.RO, nil)
	// Its action documents went with it.
	if found := w.referrers(t, "document", report); len(found) != 0 {
		t.Errorf("after the action's delete: %v", found)
	}
}

// referrers asks, as an owner deleting kind/id would, what points at it.
func (w world) referrers(t *testing.T, kind, id string) []any {
	t.Helper()
	internal := testkit.Client{BaseURL: w.Client.BaseURL} // the protocol is not part of the API document
	r := w.Expect(internal.Do(t, "POST", refs.ReferrersPath, w.Issuer.Token(t, "svc-test", auth.ScopeInternal),
		map[string]any{"kind": kind, "id": id, "settle": true}), 200)
	return r.JSON()["referrers"].([]any)
}

// Every filter of the list, each on the actions that differ in it, paged.
func TestHTTPListFilters(t *testing.T) {
	w := newWorld(t)
	otherAsset := uuid.New()
	w.StandIn("assets").Add("asset", otherAsset, nil)
	ids := map[string]string{}
	for _, a := range []struct {
		name string
		body map[string]any
	}{
		{"plain", map[string]any{"asset_id": w.asset, "action_type": "maintenance", "performed_at": "2024-01-10"}},
		{"due", map[string]any{"asset_id": w.asset, "action_type": "expert_control", "performed_at": "2024-02-10", "status_valid_through": "2025-02-10", "status_ok": true}},
		{"later", map[string]any{"asset_id": w.asset, "action_type": "expert_control", "performed_at": "2024-03-10", "status_valid_through": "2026-02-10", "status_ok": false}},
		{"other", map[string]any{"asset_id": otherAsset.String(), "action_type": "repair", "performed_at": "2024-04-10", "person_id": w.person, "status_finalized": false}},
		{"sourced", map[string]any{"asset_id": otherAsset.String(), "action_type": "pre_use_inspection", "performed_at": "2024-05-10",
			"organization_id": w.organization, "source_system": "app", "source_reference": "r-1", "status_finalized": true}},
	} {
		ids[a.name] = w.Call(201, "POST", "/actions", w.RW, a.body).JSON()["id"].(string)
	}
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"", []string{"plain", "due", "later", "other", "sourced"}},
		{"asset_id=" + otherAsset.String(), []string{"other", "sourced"}},
		{"person_id=" + w.person, []string{"other"}},
		{"organization_id=" + w.organization, []string{"sourced"}},
		{"action_type=expert_control", []string{"due", "later"}},
		{"status_ok=true", []string{"due"}},
		{"status_ok=false", []string{"later"}},
		{"status_finalized=false", []string{"other"}},
		{"valid_through_before=2026-02-10", []string{"due"}},
		{"valid_through_before=2026-02-11", []string{"due", "later"}},
		{"performed_from=2024-02-10&performed_to=2024-04-10", []string{"due", "later", "other"}},
		{"performed_to=2024-01-10", []string{"plain"}},
		{"source_system=app", []string{"sourced"}},
		{"source_system=app&source_reference=r-2", nil},
		{"source_system=app&source_reference=r-1", []string{"sourced"}},
	} {
		t.Run(tt.query, func(t *testing.T) {
			var got []string
			next := "/actions?limit=1"
			if tt.query != "" {
				next += "&" + tt.query
			}
			for next != "" {
				r := w.Call(200, "GET", next, w.RO, nil)
				for _, a := range r.List() {
					for name, id := range ids {
						if a["id"] == id {
							got = append(got, name)
						}
					}
				}
				next = strings.TrimSuffix(strings.TrimPrefix(r.Header.Get("Link"), "<"), `>; rel="next"`)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// The contract's errors particular to actions, one row each.
// A page of actions whose data and meta_data are near their limits stops
// before the action that would take it past model.MaxPageBytes, its Link
// continuing right after its last action (unbounded, a thousand such
// actions once made a page of half a GiB).
func TestHTTPListOfLargeActionsIsBoundedBySize(t *testing.T) {
	w := newWorld(t)
	var want []string
	for i := range 20 {
		body := w.action(map[string]any{"source_reference": fmt.Sprint("large-", i), "data": object(250_000), "meta_data": object(250_000)})
		want = append(want, w.Call(201, "POST", "/actions", w.RW, body).JSON()["id"].(string))
	}
	var got []string
	pages := 0
	for path := "/actions?limit=1000"; path != ""; pages++ {
		r := w.Call(200, "GET", path, w.RO, nil)
		page := r.List()
		if len(r.Raw) > model.MaxPageBytes {
			t.Errorf("page %d: %d bytes, over %d", pages+1, len(r.Raw), model.MaxPageBytes)
		}
		for _, a := range page {
			got = append(got, a["id"].(string))
		}
		path = ""
		if link := r.Header.Get("Link"); link != "" {
			path = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || pages < 3 {
		t.Errorf("%d pages of %v, want every action once, in order, over several pages: %v", pages, got, want)
	}
}

func TestHTTPErrors(t *testing.T) {
	w := newWorld(t)
	id := w.Call(201, "POST", "/actions", w.RW, w.action(nil)).JSON()["id"].(string)
	path := "/actions/" + id
	report := w.document()
	ad := w.Call(201, "POST", path+"/action_documents", w.RW, map[string]any{"action_id": id, "document_id": report,
		"source_system": "a", "source_reference": "b"}).JSON()["id"].(string)
	adPath := path + "/action_documents/" + ad
	other := w.Call(201, "POST", "/actions", w.RW, map[string]any{"asset_id": w.asset, "action_type": "repair", "performed_at": "2025-01-01"}).JSON()["id"].(string)
	missing := uuid.NewString()
	big := `{"k":"` + strings.Repeat("x", MaxJSONObject) + `"}`
	link := func(extra string) string {
		return `{"action_id":"` + id + `","document_id":"` + report + `","source_system":"a","source_reference":"b"` + extra + `}`
	}

	w.ErrorCases(t, []servicetest.ErrorCase{
		{Name: "required members", Method: "POST", Path: "/actions", Body: `{}`, Status: 422, Fields: []string{"asset_id", "action_type", "performed_at"}},
		{Name: "action_documents is read-only", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"action_documents": []any{}}), Status: 422, Fields: []string{"action_documents"}},
		{Name: "unknown action type", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"action_type": "Expert Control"}), Status: 422, Fields: []string{"action_type"}},
		{Name: "date that does not exist", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"performed_at": "2025-02-29"}), Status: 422, Fields: []string{"performed_at"}},
		{Name: "date with a time", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"status_valid_through": "2025-02-01T00:00:00Z"}), Status: 422, Fields: []string{"status_valid_through"}},
		{Name: "asset that does not exist", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"asset_id": missing}), Status: 422, Fields: []string{"asset_id"}},
		{Name: "person and organization that do not exist", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"person_id": missing, "organization_id": uuid.NewString()}), Status: 422, Fields: []string{"person_id", "organization_id"}},
		{Name: "a person is no organization", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"organization_id": w.person}), Status: 422, Fields: []string{"organization_id"}},
		{Name: "data an array", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"data": []any{1}}), Status: 422, Fields: []string{"data"}},
		{Name: "meta_data a string", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"meta_data": "x"}), Status: 422, Fields: []string{"meta_data"}},
		{Name: "data over 256 KiB", Method: "POST", Path: "/actions", Body: `{"asset_id":"` + w.asset + `","action_type":"repair","performed_at":"2025-01-01","data":` + big + `}`, Status: 422, Fields: []string{"data"}},
		{Name: "status_ok a string", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"status_ok": "true"}), Status: 422, Fields: []string{"status_ok"}},
		// A 1 KB body that PostgreSQL would store and answer as
		// 13 MB (it prints a jsonb number in full) is refused, each number
		// named (the first 50).
		{Name: "the 13 MB action", Method: "POST", Path: "/actions", Body: `{"asset_id":"` + w.asset + `","action_type":"repair","performed_at":"2025-01-01","data":{"readings":[` +
			strings.TrimSuffix(strings.Repeat("1e131071,", 100), ",") + `]}}`, Status: 422, Fields: fieldsAt("data.readings[%d]", 50)},
		{Name: "a number past numeric's digits", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"data": json.RawMessage(`{"x":1e131072}`)}), Status: 422, Fields: []string{"data.x"}},
		{Name: "a number past numeric's scale", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"meta_data": json.RawMessage(`{"x":[1e-16384]}`)}), Status: 422, Fields: []string{"meta_data.x[0]"}},
		{Name: "a number past float64's range", Method: "PATCH", Path: path, Body: `{"data":{"x":1e400}}`, Status: 422, Fields: []string{"data.x"}},
		{Name: "data over 256 KiB once its numbers are written out", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"data": json.RawMessage(`{"n":[` + strings.Repeat("1e19,", MaxJSONObject/5) + `1]}`)}), Status: 422, Fields: []string{"data"}},
		{Name: "performed_at in the year 0", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"performed_at": "0000-12-31"}), Status: 422, Fields: []string{"performed_at"}},
		{Name: "status_valid_through in the year 0", Method: "PATCH", Path: path, Body: `{"status_valid_through":"0000-01-01"}`, Status: 422, Fields: []string{"status_valid_through"}},
		{Name: "list from the year 0", Method: "GET", Path: "/actions?performed_from=0000-01-01", ReadOnly: true, Status: 422, Fields: []string{"performed_from"}},
		{Name: "list valid through the year 0", Method: "GET", Path: "/actions?valid_through_before=0000-06-01", ReadOnly: true, Status: 422, Fields: []string{"valid_through_before"}},
		{Name: "compliance due before the year 0", Method: "GET", Path: "/compliance?due_before=0000-01-01", ReadOnly: true, Status: 422, Fields: []string{"due_before"}},
		{Name: "asset_id not a UUID", Method: "POST", Path: "/actions", Body: w.action(map[string]any{"asset_id": strings.ToUpper(w.asset)}), Status: 422, Fields: []string{"asset_id"}},
		{Name: "performed_at removed by patch", Method: "PATCH", Path: path, Body: `{"performed_at":null,"action_type":null}`, Status: 422, Fields: []string{"action_type", "performed_at"}},
		{Name: "patch to an asset that does not exist", Method: "PATCH", Path: path, Body: map[string]any{"asset_id": missing}, Status: 422, Fields: []string{"asset_id"}},
		{Name: "patch data to a number", Method: "PATCH", Path: path, Body: `{"data":7}`, Status: 422, Fields: []string{"data"}},
		{Name: "list by an unknown action type", Method: "GET", Path: "/actions?action_type=inspection", ReadOnly: true, Status: 422, Fields: []string{"action_type"}},
		{Name: "list by a malformed asset id", Method: "GET", Path: "/actions?asset_id=x", ReadOnly: true, Status: 400},
		{Name: "list by status_ok=1", Method: "GET", Path: "/actions?status_ok=1", ReadOnly: true, Status: 400},
		{Name: "list by a date that does not exist", Method: "GET", Path: "/actions?valid_through_before=2025-13-01", ReadOnly: true, Status: 422, Fields: []string{"valid_through_before"}},
		{Name: "list by a range that ends before it starts", Method: "GET", Path: "/actions?performed_from=2025-02-01&performed_to=2025-01-31", ReadOnly: true, Status: 422, Fields: []string{"performed_to"}},
		{Name: "source_reference without source_system", Method: "GET", Path: "/actions?source_reference=1", ReadOnly: true, Status: 422, Fields: []string{"source_system"}},

		{Name: "link to an unknown action", Method: "POST", Path: "/actions/" + missing + "/action_documents", Body: `{"action_id":"` + missing + `","document_id":"` + report + `","source_system":"a","source_reference":"b"}`, Status: 404},
		{Name: "link a document that does not exist", Method: "POST", Path: path + "/action_documents", Body: `{"action_id":"` + id + `","document_id":"` + missing + `","source_system":"a","source_reference":"b"}`, Status: 422, Fields: []string{"document_id"}},
		{Name: "link with another action_id", Method: "POST", Path: path + "/action_documents", Body: `{"action_id":"` + other + `","document_id":"` + report + `","source_system":"a","source_reference":"b"}`, Status: 422, Fields: []string{"action_id"}},
		{Name: "link without members", Method: "POST", Path: path + "/action_documents", Body: `{}`, Status: 422, Fields: []string{"action_id", "document_id", "source_system", "source_reference"}},
		{Name: "link an already linked document", Method: "POST", Path: path + "/action_documents", Body: link(""), Status: 409, Problem: "duplicate"},
		{Name: "link with an unknown member", Method: "POST", Path: path + "/action_documents", Body: link(`,"note":"x"`), Status: 422, Fields: []string{"note"}},
		{Name: "action document of another action", Method: "PATCH", Path: "/actions/" + other + "/action_documents/" + ad, Body: `{"source_system":"x"}`, Status: 404},
		{Name: "move an action document", Method: "PATCH", Path: adPath, Body: `{"action_id":"` + other + `"}`, Status: 422, Fields: []string{"action_id"}},
		{Name: "remove source_system", Method: "PATCH", Path: adPath, Body: `{"source_system":null}`, Status: 422, Fields: []string{"source_system"}},
		{Name: "relink to a document that does not exist", Method: "PATCH", Path: adPath, Body: `{"document_id":"` + missing + `"}`, Status: 422, Fields: []string{"document_id"}},
		{Name: "delete an action document of another action", Method: "DELETE", Path: "/actions/" + other + "/action_documents/" + ad, Status: 404},
		{Name: "action documents have no GET", Method: "GET", Path: adPath, ReadOnly: true, Status: 405},
	})
	// None of the above changed anything.
	if list := w.Call(200, "GET", "/actions", w.RO, nil).List(); len(list) != 2 {
		t.Errorf("actions after the failed calls: %v", list)
	}
	got := w.Call(200, "GET", path, w.RO, nil).JSON()
	if docs := got["action_documents"].([]any); len(docs) != 1 || docs[0].(map[string]any)["source_system"] != "a" || got["asset_id"] != w.asset {
		t.Errorf("action after the failed calls: %v", got)
	}
}

// A peer that cannot answer makes the write that needs it a 503 with
// Retry-After, never a 500 or a hang, and the write leaves nothing.
func TestHTTPPeerDown(t *testing.T) {
	t.Parallel()
	dead := "http://" + servicetest.Unreachable(t)
	s := servicetest.Start(t, Spec(), func(c *servicekit.Config) {
		c.Peers = peer.Config{URLs: map[string]*string{"assets": &dead, "parties": &dead, "documents": &dead}, Timeout: 2 * time.Second,
			TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "x"})}
	})
	r := s.Call(503, "POST", "/actions", s.RW, map[string]any{"asset_id": uuid.NewString(), "action_type": "repair", "performed_at": "2025-01-01"})
	if r.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if list := s.Call(200, "GET", "/actions", s.RO, nil).List(); len(list) != 0 {
		t.Errorf("actions = %v", list)
	}
	// A batch of links cannot ask the documents service either.
	link := map[string]any{"action_id": uuid.NewString(), "document_id": uuid.NewString(), "source_system": "a", "source_reference": "b"}
	if r := s.Call(503, "POST", "/actions/action_documents/batch", s.RW, map[string]any{"items": []any{link}}); r.Header.Get("Retry-After") == "" {
		t.Error("a batch of links: 503 without Retry-After")
	}
}

// A database that goes away is a 503 with Retry-After, never a 500, and
// the service recovers when it returns; nothing half-written stays behind.
func TestHTTPDatabaseDown(t *testing.T) {
	t.Parallel()
	asset := uuid.New()
	servicetest.DatabaseDown(t, Spec(), servicetest.Outage{
		Before: func(s *servicetest.Service) {
			s.StandIn("assets").Add("asset", asset, nil)
			s.Call(201, "POST", "/actions", s.RW, map[string]any{"asset_id": asset, "action_type": "repair", "performed_at": "2025-01-01"})
		},
		During: []servicetest.Request{
			{Method: "GET", Path: "/actions?asset_id=" + asset.String()},
			{Method: "POST", Path: "/actions", Body: map[string]any{"asset_id": asset, "action_type": "repair", "performed_at": "2025-01-02"}},
		},
		After: func(s *servicetest.Service) {
			if got := len(s.Call(200, "GET", "/actions", s.RO, nil).List()); got != 1 {
				t.Errorf("after the outage /actions lists %d, want 1", got)
			}
		},
	})
}

// Single-resource answers carry a strong ETag; writes whose If-Match names
// another one are a 412 and change nothing; linking a document changes the
// action's ETag (its action_documents); an action document's own ETag is
// what its create and update answered.
func TestHTTPValidators(t *testing.T) {
	w := newWorld(t)
	created := w.Call(201, "POST", "/actions", w.RW, w.action(nil))
	path := created.Header.Get("Location")
	first := created.Header.Get("ETag")
	w.Call(304, "GET", path, w.RO, nil, "If-None-Match", first)
	link := w.Call(201, "POST", path+"/action_documents", w.RW, map[string]any{"action_id": strings.TrimPrefix(path, "/actions/"),
		"document_id": w.document(), "source_system": "a", "source_reference": "b"})
	adPath, adTag := link.Header.Get("Location"), link.Header.Get("ETag")
	second := w.Call(200, "GET", path, w.RO, nil).Header.Get("ETag")
	if second == first {
		t.Fatal("linking a document left the action's ETag")
	}
	w.Call(412, "PATCH", path, w.RW, `{"status":"x"}`, "If-Match", first)
	w.Call(412, "DELETE", path, w.RW, nil, "If-Match", first)
	w.Call(412, "PATCH", adPath, w.RW, `{"source_system":"c"}`, "If-Match", second)
	w.Call(412, "DELETE", adPath, w.RW, nil, "If-Match", `"stale"`)
	updated := w.Call(200, "PATCH", adPath, w.RW, `{"source_system":"c"}`, "If-Match", adTag)
	w.Call(204, "DELETE", adPath, w.RW, nil, "If-Match", updated.Header.Get("ETag"))
	third := w.Call(200, "GET", path, w.RO, nil).Header.Get("ETag")
	w.Call(200, "PATCH", path, w.RW, `{"status":"x"}`, "If-Match", third)
	w.Call(204, "DELETE", path, w.RW, nil, "If-Match", "*")
}

// Creates retried with their Idempotency-Key are answered once.
func TestHTTPIdempotencyKey(t *testing.T) {
	w := newWorld(t)
	first := w.Call(201, "POST", "/actions", w.RW, w.action(nil), "Idempotency-Key", "a-1")
	again := w.Call(201, "POST", "/actions", w.RW, w.action(nil), "Idempotency-Key", "a-1")
	if string(again.Raw) != string(first.Raw) || again.Header.Get("Location") != first.Header.Get("Location") {
		t.Errorf("replay: %s", again.Raw)
	}
	w.Call(422, "POST", "/actions", w.RW, w.action(map[string]any{"status": "other"}), "Idempotency-Key", "a-1")
	id := first.JSON()["id"].(string)
	body := map[string]any{"action_id": id, "document_id": w.document(), "source_system": "a", "source_reference": "b"}
	linked := w.Call(201, "POST", "/actions/"+id+"/action_documents", w.RW, body, "Idempotency-Key", "d-1")
	if replayed := w.Call(201, "POST", "/actions/"+id+"/action_documents", w.RW, body, "Idempotency-Key", "d-1"); replayed.JSON()["id"] != linked.JSON()["id"] {
		t.Error("a replayed link answered another action document")
	}
	if n := len(w.Call(200, "GET", "/actions", w.RO, nil).List()); n != 1 {
		t.Errorf("%d actions, want 1", n)
	}
}

// The document and the common error rows, as every service checks them.
func TestConformance(t *testing.T) { servicetest.Conformance(t, Spec(), ownership) }

// Only the client that created an action or an action document (or an
// admin) changes or deletes it; linking a document to an action is the
// action's owner's.
func ownership(t *testing.T, s *servicetest.Service) []servicetest.OwnerCase {
	w := worldOn(s)
	id := w.Call(201, "POST", "/actions", w.RW, w.action(nil)).JSON()["id"].(string)
	action := "/actions/" + id
	link := func() map[string]any {
		return map[string]any{"action_id": id, "document_id": w.document(), "source_system": "app", "source_reference": uuid.NewString()}
	}
	actionDocument := action + "/action_documents/" + w.Call(201, "POST", action+"/action_documents", w.RW, link()).JSON()["id"].(string)
	return []servicetest.OwnerCase{
		{Name: "patch action", Method: "PATCH", Path: action, Body: map[string]any{"reference": "TAKEN"}, Read: action, AdminStatus: 200},
		{Name: "patch actions in a batch", Method: "PATCH", Path: "/actions/batch", Read: action, AdminStatus: 200, Batch: true,
			Body: map[string]any{"items": []any{map[string]any{"id": id, "patch": map[string]any{"reference": "BATCH"}}}}},
		{Name: "link a document", Method: "POST", Path: action + "/action_documents", Body: link(), Read: action, AdminStatus: 201},
		{Name: "link documents in a batch", Method: "POST", Path: "/actions/action_documents/batch", Body: map[string]any{"items": []any{link()}},
			Read: action, AdminStatus: 200, Batch: true},
		{Name: "patch action document", Method: "PATCH", Path: actionDocument, Body: map[string]any{"source_reference": "taken"},
			Read: action, AdminStatus: 200},
		{Name: "delete action document", Method: "DELETE", Path: actionDocument, Read: action, AdminStatus: 204},
		{Name: "delete action", Method: "DELETE", Path: action, Read: action, AdminStatus: 204},
	}
}

// A batch answers each item as its own create would, in order; a bad item
// fails alone; the references of the whole batch are asked about once per
// owner; one Idempotency-Key covers the batch.
func TestHTTPActionsBatch(t *testing.T) {
	w := newWorld(t)
	missing := uuid.NewString()
	otherAsset := uuid.New()
	w.StandIn("assets").Add("asset", otherAsset, nil)
	items := []any{
		w.action(nil),
		map[string]any{"asset_id": missing, "action_type": "repair", "performed_at": "2025-01-01"},
		map[string]any{"asset_id": w.asset, "action_type": "repair"},
		map[string]any{"asset_id": otherAsset.String(), "action_type": "maintenance", "performed_at": "2025-01-02", "person_id": w.person},
		map[string]any{"asset_id": w.asset, "action_type": "repair", "performed_at": "2025-01-01", "id": uuid.NewString()},
		map[string]any{"asset_id": w.asset, "action_type": "repair", "performed_at": "2025-01-01", "organization_id": w.person},
	}
	assetsAsked, partiesAsked := w.StandIn("assets").Asked(), w.StandIn("parties").Asked()
	results := w.Call(200, "POST", "/actions/batch", w.RW, map[string]any{"items": items}, "Idempotency-Key", "batch-1").List()
	if got := w.StandIn("assets").Asked() - assetsAsked; got != 1 {
		t.Errorf("assets was asked %d times for the batch", got)
	}
	if got := w.StandIn("parties").Asked() - partiesAsked; got != 1 {
		t.Errorf("parties was asked %d times for the batch", got)
	}
	want := []testkit.ItemWant{{Status: 201}, {Status: 422, Mark: "asset_id"}, {Status: 422, Mark: "performed_at"}, {Status: 201},
		{Status: 422, Mark: "id"}, {Status: 422, Mark: "organization_id"}}
	testkit.CheckItems(t, results, want, func(i int, r map[string]any) {
		got := w.Call(200, "GET", "/actions/"+r["id"].(string), w.RO, nil).JSON()
		if got["asset_id"] != items[i].(map[string]any)["asset_id"] {
			t.Errorf("item %d created %v", i, got)
		}
	})
	for i, r := range results {
		if problem, ok := r["problem"].(map[string]any); ok && problem["instance"] != "/actions/batch" {
			t.Errorf("item %d: problem %v", i, problem)
		}
	}
	// The key replays the whole answer; nothing is recorded twice.
	again := w.Call(200, "POST", "/actions/batch", w.RW, map[string]any{"items": items}, "Idempotency-Key", "batch-1")
	if again.Header.Get("Idempotent-Replayed") != "true" || len(again.List()) != len(want) || again.List()[0]["id"] != results[0]["id"] {
		t.Errorf("replay: %s", again.Raw)
	}
	if list := w.Call(200, "GET", "/actions?asset_id="+otherAsset.String(), w.RO, nil).List(); len(list) != 1 {
		t.Errorf("the batch's action on the other asset: %d", len(list))
	}
	// The batch's own limits.
	w.Call(422, "POST", "/actions/batch", w.RW, map[string]any{"items": []any{}})
	many := make([]any, 1001)
	for i := range many {
		many[i] = map[string]any{}
	}
	if got := w.Call(422, "POST", "/actions/batch", w.RW, map[string]any{"items": many}).Fields(); len(got) != 1 || got[0] != "items" {
		t.Errorf("1,001 items: %v", got)
	}
}

// A batch of links answers each item as its single create would, for the
// action the item names; the documents of the whole batch are asked about
// once; one Idempotency-Key covers the batch.
func TestHTTPActionDocumentsBatch(t *testing.T) {
	w := newWorld(t)
	first := w.Call(201, "POST", "/actions", w.RW, w.action(nil)).JSON()["id"].(string)
	second := w.Call(201, "POST", "/actions", w.RW, w.action(map[string]any{"source_reference": "43"})).JSON()["id"].(string)
	theirs := w.Call(201, "POST", "/actions", w.Other, w.action(map[string]any{"source_reference": "44"})).JSON()["id"].(string)
	linked := w.document()
	w.Call(201, "POST", "/actions/"+first+"/action_documents", w.RW, map[string]any{"action_id": first, "document_id": linked,
		"source_system": "app", "source_reference": "0"})
	link := func(action, document, ref string) map[string]any {
		return map[string]any{"action_id": action, "document_id": document, "source_system": "app", "source_reference": ref}
	}
	missingDoc, missingAction := uuid.NewString(), uuid.NewString()
	items := []any{
		link(first, w.document(), "1"),
		link(second, w.document(), "2"),
		link(second, missingDoc, "3"),
		link(missingAction, w.document(), "4"),
		link(theirs, w.document(), "5"),
		link(first, linked, "6"),
		map[string]any{"action_id": first, "document_id": w.document()},
	}
	asked := w.StandIn("documents").Asked()
	results := w.Call(200, "POST", "/actions/action_documents/batch", w.RW, map[string]any{"items": items}, "Idempotency-Key", "links-1").List()
	if got := w.StandIn("documents").Asked() - asked; got != 1 {
		t.Errorf("documents was asked %d times for the batch", got)
	}
	want := []int{201, 201, 422, 404, 403, 409, 422}
	if len(results) != len(want) {
		t.Fatalf("results = %v", results)
	}
	for i, r := range results {
		if int(r["status"].(float64)) != want[i] {
			t.Errorf("item %d: %v, want status %d", i, r, want[i])
		}
	}
	if p := results[2]["problem"].(map[string]any); p["errors"].([]any)[0].(map[string]any)["field"] != "document_id" {
		t.Errorf("a missing document: %v", p)
	}
	for i, action := range map[int]string{0: first, 1: second} {
		docs := w.Call(200, "GET", "/actions/"+action, w.RO, nil).JSON()["action_documents"].([]any)
		if !slices.ContainsFunc(docs, func(d any) bool { return d.(map[string]any)["id"] == results[i]["id"] }) {
			t.Errorf("item %d's action document is not on its action: %v", i, docs)
		}
	}
	again := w.Call(200, "POST", "/actions/action_documents/batch", w.RW, map[string]any{"items": items}, "Idempotency-Key", "links-1")
	if again.Header.Get("Idempotent-Replayed") != "true" || again.List()[0]["id"] != results[0]["id"] {
		t.Errorf("replay: %s", again.Raw)
	}
}

// When the database refuses one item of a batch, the batch is written item
// by item: that item gets the answer it alone would have got, and the
// others are kept, each with its event.
func TestHTTPActionsBatchItemRefused(t *testing.T) {
	w := newWorld(t)
	if _, err := w.Built.Store.Pool.Exec(t.Context(), `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.source_reference = 'refuse' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON actions FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	item := func(ref string) map[string]any {
		return map[string]any{"asset_id": w.asset, "action_type": "repair", "performed_at": "2025-01-01",
			"source_system": "batch", "source_reference": ref}
	}
	results := w.Call(200, "POST", "/actions/batch", w.RW, map[string]any{"items": []any{item("a"), item("refuse"), item("b")}}).List()
	if len(results) != 3 || results[0]["status"] != float64(201) || results[1]["status"] != float64(500) || results[2]["status"] != float64(201) {
		t.Fatalf("results = %v", results)
	}
	var events int
	if err := w.Built.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox WHERE kind = 'action' AND subject_id = ANY($1)`,
		[]string{results[0]["id"].(string), results[2]["id"].(string)}).Scan(&events); err != nil || events != 2 {
		t.Errorf("events of the two actions: %d (%v)", events, err)
	}
	if list := w.Call(200, "GET", "/actions?source_system=batch&source_reference=refuse", w.RO, nil).List(); len(list) != 0 {
		t.Errorf("the refused item was written: %v", list)
	}
}

// fieldsAt is n field paths made from an index format.
func fieldsAt(format string, n int) []string {
	fields := make([]string, n)
	for i := range fields {
		fields[i] = fmt.Sprintf(format, i)
	}
	return fields
}

// An action's answer embeds its first model.MaxEmbedded action
// documents in creation order and says it has more; its list pages
// through them all.
func TestHTTPActionDocumentsCappedAndListed(t *testing.T) {
	w := newWorld(t)
	id := w.Call(201, "POST", "/actions", w.RW, w.action(nil)).JSON()["id"].(string)
	path := "/actions/" + id
	if one := w.Call(200, "GET", path, w.RO, nil).JSON(); one["action_documents_truncated"] != false {
		t.Errorf("an action without documents: action_documents_truncated = %v", one["action_documents_truncated"])
	}
	total := model.MaxEmbedded + 5
	items := make([]any, total)
	for i := range items {
		items[i] = map[string]any{"action_id": id, "document_id": w.document(), "source_system": "app", "source_reference": fmt.Sprint(i)}
	}
	results := w.Call(200, "POST", "/actions/action_documents/batch", w.RW, map[string]any{"items": items}).List()
	var want []string
	for i, r := range results {
		if r["status"] != float64(201) {
			t.Fatalf("item %d: %v", i, r)
		}
		want = append(want, r["id"].(string))
	}
	slices.Sort(want) // creation order: the ids are UUIDv7

	got := w.Call(200, "GET", path, w.RO, nil).JSON()
	embedded := got["action_documents"].([]any)
	if len(embedded) != model.MaxEmbedded || got["action_documents_truncated"] != true {
		t.Fatalf("GET %s: %d action documents, action_documents_truncated %v; want %d and true",
			path, len(embedded), got["action_documents_truncated"], model.MaxEmbedded)
	}
	for i, d := range embedded {
		if d.(map[string]any)["id"] != want[i] {
			t.Fatalf("embedded action document %d is %v, want %s", i, d.(map[string]any)["id"], want[i])
		}
	}

	var listed []string
	next := path + "/action_documents?limit=40"
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("more pages than 105 action documents by 40 make")
		}
		r := w.Call(200, "GET", next, w.RO, nil)
		for _, d := range r.List() {
			if d["action_id"] != id {
				t.Errorf("listed %v, not of the action", d)
			}
			listed = append(listed, d["id"].(string))
		}
		next = strings.TrimSuffix(strings.TrimPrefix(r.Header.Get("Link"), "<"), `>; rel="next"`)
	}
	if !slices.Equal(listed, want) {
		t.Errorf("listed %d action documents %v, want %d %v", len(listed), listed, len(want), want)
	}
	if first := w.Call(200, "GET", path+"/action_documents?limit=1", w.RO, nil).List()[0]; fmt.Sprint(first) != fmt.Sprint(embedded[0]) {
		t.Errorf("listed %v, embedded %v", first, embedded[0])
	}
	w.Call(404, "GET", "/actions/"+uuid.NewString()+"/action_documents", w.RO, nil)
	w.Call(400, "GET", "/actions/nope/action_documents", w.RO, nil)
}
