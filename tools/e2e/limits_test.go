package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/tools/testkit"
)

// largestAction is an action's body with every member at its largest:
// data and meta_data of model.MaxJSONObject bytes as stored, filled with
// fill, and every text member at its longest in a character JSON writes
// as six bytes (U+0001, \u0001), ending in tag so that two are unique.
func largestAction(fill byte, tag string) map[string]any {
	text := func(n int) string { return strings.Repeat("\x01", n-len(tag)) + tag }
	object := func(key string) json.RawMessage {
		return json.RawMessage(`{"` + key + `":"` + strings.Repeat(string(fill), model.MaxJSONObject-len(`{"`+key+`":""}`)) + `"}`)
	}
	return map[string]any{
		"action_subtype": text(100), "performed_by_person": text(300), "performed_by_organization": text(300),
		"reference": text(100), "status": text(1000), "source_system": text(100), "source_reference": text(300),
		"status_ok": fill == 'a', "status_finalized": false, "data": object("data"), "meta_data": object("meta"),
	}
}

// The largest update the limits allow, an action's data and
// meta_data of 256 KiB each replaced with every other member, makes an
// event that the relay publishes and the feed serves, within the size
// NATS and the stream are set for (outbox.MaxEventSize).
func TestTheLargestUpdateReachesTheFeed(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	next := linkNext.FindStringSubmatch(testkit.Expect(t, gw.Do(t, "GET", "/events?after=now", ro, nil), 200).Header.Get("Link"))[1]
	create := largestAction('a', randomHex())
	create["asset_id"], create["action_type"], create["performed_at"] = newAsset(t, rw)[len("/assets/"):], "repair", "2025-01-01"
	action := testkit.Expect(t, gw.Do(t, "POST", "/actions", rw, create), 201).JSON()["id"].(string)
	updated := testkit.Expect(t, gw.Do(t, "PATCH", "/actions/"+action, rw, largestAction('b', randomHex())), 200)
	if !strings.Contains(string(updated.Raw), strings.Repeat("b", 1000)) {
		t.Fatal("the update's answer does not hold the new data")
	}

	var event json.RawMessage
	for deadline := time.Now().Add(60 * time.Second); event == nil && time.Now().Before(deadline); {
		r := testkit.Expect(t, gw.Do(t, "GET", next, ro, nil), 200)
		var page []json.RawMessage
		if err := json.Unmarshal(r.Raw, &page); err != nil {
			t.Fatal(err)
		}
		for _, raw := range page {
			var e outbox.Event
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			if e.Subject.ID == action && e.Type == "action.updated" {
				event = raw
			}
		}
		next = linkNext.FindStringSubmatch(r.Header.Get("Link"))[1]
		if len(page) == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if event == nil {
		t.Fatal("the largest update's event did not reach the feed within 60 s")
	}
	var e outbox.Event
	if err := json.Unmarshal(event, &e); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"data", "meta_data", "status", "source_reference", "status_ok"} {
		if _, ok := e.Changes[field]; !ok {
			t.Errorf("the event's changes lack %s", field)
		}
	}
	if len(event) < 3*2*model.MaxJSONObject || len(event) > outbox.MaxEventSize {
		t.Errorf("the largest update's event is %d bytes, want from %d (three copies of both objects) to the bound %d",
			len(event), 3*2*model.MaxJSONObject, outbox.MaxEventSize)
	}
}

// What a body says is stored and answered as it says, or
// refused with a 422 naming the field; never a 500, and never many times
// what was sent.
func TestCanonicalInputThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	asset := newAsset(t, rw)[len("/assets/"):]
	action := func(extra string) string {
		return `{"asset_id":"` + asset + `","action_type":"repair","performed_at":"2025-01-01"` + extra + `}`
	}
	for _, c := range []struct {
		name, method, path, token, body string
		fields                          []string
	}{
		{"the 13 MB action: 100 numbers PostgreSQL prints in full", "POST", "/actions", rw,
			action(`,"data":{"readings":[` + strings.TrimSuffix(strings.Repeat("1e131071,", 100), ",") + `]}`), nil},
		{"a number past what PostgreSQL stores", "POST", "/actions", rw, action(`,"data":{"x":1e131072}`), []string{"data.x"}},
		{"a number past PostgreSQL's decimals", "POST", "/actions", rw, action(`,"meta_data":{"x":[0,1e-16384]}`), []string{"meta_data.x[1]"}},
		{"a number past float64's range", "POST", "/actions", rw, action(`,"data":{"x":1e400}`), []string{"data.x"}},
		{"a date of the year 0 in a body", "POST", "/actions", rw, action(`,"status_valid_through":"0000-01-01"`), []string{"status_valid_through"}},
		{"a birth in the year 0", "POST", "/people", rw, `{"first_name":"Null","last_name":"Year","date_of_birth":"0000-06-01"}`, []string{"date_of_birth"}},
		{"a list filter in the year 0", "GET", "/actions?performed_from=0000-01-01", ro, "", []string{"performed_from"}},
		{"compliance due before the year 0", "GET", "/compliance?due_before=0000-01-01", ro, "", []string{"due_before"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.body != "" {
				body = c.body
			}
			r := testkit.Expect(t, gw.Do(t, c.method, c.path, c.token, body), 422)
			if c.fields == nil { // the 13 MB action: each number named, the first 50
				if len(r.Fields()) != httpx.MaxFieldErrors || r.Fields()[3] != "data.readings[3]" || r.JSON()["errors_omitted"] != float64(100-httpx.MaxFieldErrors) {
					t.Errorf("fields %v, errors_omitted %v", r.Fields(), r.JSON()["errors_omitted"])
				}
				if len(r.Raw) > 16<<10 {
					t.Errorf("the problem is %d bytes for a 1 KB body", len(r.Raw))
				}
				return
			}
			if strings.Join(r.Fields(), ",") != strings.Join(c.fields, ",") {
				t.Errorf("fields %v, want %v", r.Fields(), c.fields)
			}
		})
	}
	if n := len(testkit.Expect(t, gw.Do(t, "GET", "/actions?asset_id="+asset, ro, nil), 200).List()); n != 0 {
		t.Errorf("the refused calls recorded %d actions", n)
	}

	// Numbers within the rule come back as PostgreSQL writes them, in
	// full; text comes back as sent, not HTML-escaped six times larger.
	name := strings.Repeat("<Ørsted & Sønner>", 10)
	created := testkit.Expect(t, gw.Do(t, "POST", "/actions", rw, action(`,"data":{"load":1e6,"ratio":1.5e-3},"status":"`+name+`"`)), 201)
	if !strings.Contains(string(created.Raw), `"load":1000000`) || !strings.Contains(string(created.Raw), `"ratio":0.0015`) {
		t.Errorf("data answered as %s", created.Raw)
	}
	if !strings.Contains(string(created.Raw), name) {
		t.Errorf("status answered HTML-escaped: %.200s", created.Raw)
	}
	if got := testkit.Expect(t, gw.Do(t, "GET", "/actions/"+created.JSON()["id"].(string), ro, nil), 200); !strings.Contains(string(got.Raw), name) {
		t.Errorf("GET answers status HTML-escaped: %.200s", got.Raw)
	}
}
