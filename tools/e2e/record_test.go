package e2e

import (
	"encoding/json"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
	"github.com/assetregistry/registry/tools/testkit"
)

// A resource as it was, through the gateway (a GET with as_of goes to the
// events service), and the log's proof of its events, checked with the
// SDK and the key the registry publishes.
func TestRecordThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	call := func(status int, method, path, token string, body any) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, method, path, token, body), status)
	}
	assetType := call(201, "POST", "/asset_types", rw, map[string]any{"brand": unique("Recordlift"), "model": "R-1"}).JSON()["id"].(string)
	first, second := unique("SN"), unique("SN")
	asset := call(201, "POST", "/assets", rw, map[string]any{"serial_number": first, "asset_type_id": assetType}).JSON()["id"].(string)
	call(200, "PATCH", "/assets/"+asset, rw, map[string]any{"serial_number": second})

	var history []json.RawMessage
	eventually(t, "the asset's two events in its history", func() string {
		r := gw.Do(t, "GET", "/assets/"+asset+"/history", ro, nil)
		history = nil
		if r.Status != 200 || json.Unmarshal(r.Raw, &history) != nil || len(history) != 2 {
			return string(r.Raw)
		}
		return ""
	})
	var created, updated registry.Event
	if err := json.Unmarshal(history[0], &created); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(history[1], &updated); err != nil {
		t.Fatal(err)
	}
	at := func(tm time.Time) string { return tm.UTC().Format(time.RFC3339Nano) }
	if got := call(200, "GET", "/assets/"+asset+"?as_of="+at(created.Time), ro, nil).JSON()["serial_number"]; got != first {
		t.Errorf("as of its creation: serial %v, want %s", got, first)
	}
	if got := call(200, "GET", "/assets/"+asset+"?as_of="+at(updated.Time.Add(time.Millisecond)), ro, nil).JSON()["serial_number"]; got != second {
		t.Errorf("as of its update: serial %v, want %s", got, second)
	}
	call(404, "GET", "/assets/"+asset+"?as_of="+at(created.Time.Add(-time.Millisecond)), ro, nil)
	call(400, "GET", "/assets/"+asset+"?as_of=yesterday", ro, nil)
	call(422, "GET", "/assets/"+asset+"?as_of=2025-02-30T00:00:00Z", ro, nil)
	// Without as_of the owner answers, as always.
	if got := call(200, "GET", "/assets/"+asset, ro, nil).JSON()["serial_number"]; got != second {
		t.Errorf("the asset now: serial %v", got)
	}

	// Both events are in the log: proved against a checkpoint signed with
	// the published key (one is signed within seconds of an event). The
	// keys and the checkpoint answer a stranger without a token; the
	// proofs and entries stay behind one.
	keys := call(200, "GET", "/log/keys", "", nil)
	if r := call(200, "GET", "/log/keys", ro, nil); string(r.Raw) != string(keys.Raw) {
		t.Errorf("log keys with a token %s, without %s", r.Raw, keys.Raw)
	}
	call(401, "GET", "/log/inclusion?event_id="+created.ID, "", nil)
	var published registry.LogKeys
	if err := json.Unmarshal(keys.Raw, &published); err != nil || len(published.Keys) == 0 {
		t.Fatalf("log keys %s", keys.Raw)
	}
	var proofs [2]registry.InclusionProof
	proved := func() string {
		for i, e := range []registry.Event{created, updated} {
			r := gw.Do(t, "GET", "/log/inclusion?event_id="+e.ID, ro, nil)
			if r.Status != 200 || json.Unmarshal(r.Raw, &proofs[i]) != nil {
				return string(r.Raw)
			}
		}
		return ""
	}
	// A checkpoint is signed at most 10 s after an event.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		complaint := proved()
		if complaint == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint holds the asset's events within 30 s: %s", complaint)
		}
	}
	var latest registry.Checkpoint
	if err := json.Unmarshal(call(200, "GET", "/log/checkpoint", "", nil).Raw, &latest); err != nil {
		t.Fatal(err)
	}
	cp, err := registry.VerifyCheckpoint(latest.Note, published.Keys...)
	if err != nil {
		t.Fatal(err)
	}
	for i, raw := range history {
		if proofs[i].TreeSize != cp.TreeSize {
			r := call(200, "GET", "/log/inclusion?event_id="+[]registry.Event{created, updated}[i].ID+"&tree_size="+itoa(cp.TreeSize), ro, nil)
			if err := json.Unmarshal(r.Raw, &proofs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := registry.VerifyInclusion(cp, raw, proofs[i]); err != nil {
			t.Errorf("event %d of the asset: %v", i, err)
		}
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }
