package e2e

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
)

// A person's event, through the gateway, carries the person's values and
// a salt for each: the SDK recomputes its leaf from them (the logged form,
// commitments in place of the values) and proves it against a checkpoint
// signed with the published key; the log's entry for the leaf is that
// logged form, which holds none of the values.
func TestPersonEventProvedThroughItsCommitments(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	name := unique("Saltvik")
	person := gw.Do(t, "POST", "/people", rw, map[string]any{"first_name": "Kari", "last_name": name, "date_of_birth": "1980-02-03"})
	if person.Status != 201 {
		t.Fatalf("create a person: %d %s", person.Status, person.Raw)
	}
	id := person.JSON()["id"].(string)
	var history []json.RawMessage
	eventually(t, "the person's event in its history", func() string {
		r := gw.Do(t, "GET", "/people/"+id+"/history", ro, nil)
		history = nil
		if r.Status != 200 || json.Unmarshal(r.Raw, &history) != nil || len(history) != 1 {
			return string(r.Raw)
		}
		return ""
	})
	raw := history[0]
	logged, err := registry.LoggedEvent(raw)
	if err != nil || !bytes.Contains(raw, []byte(`"commitments":{`)) || !bytes.Contains(raw, []byte(name)) || bytes.Contains(logged, []byte(name)) {
		t.Fatalf("the served event %s, logged as %s (%v)", raw, logged, err)
	}
	var event registry.Event
	if err := json.Unmarshal(raw, &event); err != nil {
		t.Fatal(err)
	}
	var p registry.InclusionProof
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) { // a checkpoint within 10 s
		r := gw.Do(t, "GET", "/log/inclusion?event_id="+event.ID, ro, nil)
		if r.Status == 200 && json.Unmarshal(r.Raw, &p) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint holds the person's event within 30 s: %s", r.Raw)
		}
	}
	var keys registry.LogKeys
	if err := json.Unmarshal(gw.Do(t, "GET", "/log/keys", "", nil).Raw, &keys); err != nil {
		t.Fatal(err)
	}
	var latest registry.Checkpoint
	if err := json.Unmarshal(gw.Do(t, "GET", "/log/checkpoint", "", nil).Raw, &latest); err != nil {
		t.Fatal(err)
	}
	cp, err := registry.VerifyCheckpoint(latest.Note, keys.Keys...)
	if err != nil {
		t.Fatal(err)
	}
	if p.TreeSize != cp.TreeSize {
		r := gw.Do(t, "GET", "/log/inclusion?event_id="+event.ID+"&tree_size="+itoa(cp.TreeSize), ro, nil)
		if err := json.Unmarshal(r.Raw, &p); err != nil {
			t.Fatal(err)
		}
	}
	if err := registry.VerifyInclusion(cp, raw, p); err != nil {
		t.Errorf("the person's event as served: %v", err)
	}
	var entry registry.LogEntry
	if r := gw.Do(t, "GET", "/log/entry?leaf_index="+itoa(p.LeafIndex), ro, nil); r.Status != 200 || json.Unmarshal(r.Raw, &entry) != nil || !bytes.Equal(entry.Entry, logged) {
		t.Errorf("the leaf's entry %s, want the logged form %s", r.Raw, logged)
	}
}
