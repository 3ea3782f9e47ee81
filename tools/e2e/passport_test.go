package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	registry "github.com/assetregistry/registry/sdk"
	"github.com/assetregistry/registry/tools/testkit"
)

// A passport link through the gateway: made by a client, it answers the
// asset's passport to anyone without a token (the same bundle as the
// asset's own route), verifies with the published key, counts its
// fetches, and answers 404 once deleted or expired; and a passport with
// an action removed, however carefully, fails VerifyPassport.
func TestPassportLinksThroughGateway(t *testing.T) {
	t.Parallel()
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	call := func(status int, method, path, token string, body any) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, method, path, token, body), status)
	}
	assetType := call(201, "POST", "/asset_types", rw, map[string]any{"brand": unique("Passlift"), "model": "P-1"}).JSON()["id"].(string)
	asset := call(201, "POST", "/assets", rw, map[string]any{"serial_number": unique("SN"), "asset_type_id": assetType}).JSON()["id"].(string)
	var actions []string
	for _, kind := range []string{"repair", "maintenance"} {
		actions = append(actions, call(201, "POST", "/actions", rw, map[string]any{"asset_id": asset, "action_type": kind, "performed_at": "2025-01-01"}).JSON()["id"].(string))
	}
	passport := "/assets/" + asset + "/passport"
	// A checkpoint holds the asset's three events within seconds.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var p registry.Passport
		r := gw.Do(t, "GET", passport, ro, nil)
		if r.Status == 200 && json.Unmarshal(r.Raw, &p) == nil && len(p.Actions) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no passport with both actions within 30 s: %d %.300s", r.Status, r.Raw)
		}
	}
	var keys registry.LogKeys
	if err := json.Unmarshal(call(200, "GET", "/log/keys", "", nil).Raw, &keys); err != nil {
		t.Fatal(err)
	}

	created := call(201, "POST", "/assets/"+asset+"/passport_links", rw, map[string]any{})
	var link registry.PassportLink
	if err := json.Unmarshal(created.Raw, &link); err != nil {
		t.Fatal(err)
	}
	if created.Header.Get("Location") != link.URL || !strings.HasPrefix(link.URL, stack.RegistryURL+"/passports/") {
		t.Fatalf("link %s, Location %q", created.Raw, created.Header.Get("Location"))
	}
	path := strings.TrimPrefix(link.URL, stack.RegistryURL)
	// Without a token, the same bundle as the asset's own route at that
	// moment (other tests' events move the checkpoint: the link's answer
	// is the one before or the one after it).
	var bundle []byte
	for try := 0; ; try++ {
		before := call(200, "GET", passport, ro, nil).Raw
		bundle = call(200, "GET", path, "", nil).Raw
		after := call(200, "GET", passport, ro, nil).Raw
		if bytes.Equal(bundle, before) || bytes.Equal(bundle, after) {
			break
		}
		if try == 5 {
			t.Fatalf("the link's passport is neither the asset's before nor after it:\n%.400s", bundle)
		}
	}
	r, err := registry.VerifyPassport(bundle, keys.Keys, nil)
	if err != nil || !r.Complete || r.CompleteFrom != 0 {
		t.Fatalf("the link's passport: %+v, %v", r, err)
	}
	// The page that checks it in a browser answers without a token.
	if page := call(200, "GET", "/verify", "", nil); !strings.Contains(string(page.Raw), "verifyPassport") {
		t.Errorf("/verify: %.200s", page.Raw)
	}
	var fetched bytes.Buffer
	if err := registry.FetchPassport(t.Context(), link.URL, &fetched); err != nil {
		t.Fatal(err)
	}
	if _, err := registry.VerifyPassport(fetched.Bytes(), keys.Keys, nil); err != nil {
		t.Errorf("the passport the SDK fetched: %v", err)
	}

	// An action removed with its events, its record and its chain leaves:
	// what is left agrees with itself, but not with the signed head.
	var p registry.Passport
	if err := json.Unmarshal(bundle, &p); err != nil {
		t.Fatal(err)
	}
	gone := actions[1]
	var removed []uint64
	p.Events = slices.DeleteFunc(p.Events, func(e registry.PassportEvent) bool {
		var ev registry.Event
		if json.Unmarshal(e.Event, &ev) == nil && ev.Subject.ID == gone {
			removed = append(removed, e.LeafIndex)
			return true
		}
		return false
	})
	p.Actions = slices.DeleteFunc(p.Actions, func(a registry.PassportRecord) bool { return a.ID == gone })
	p.Completeness.Chain = slices.DeleteFunc(p.Completeness.Chain, func(l uint64) bool { return slices.Contains(removed, l) })
	if len(removed) == 0 || len(p.Actions) != 1 {
		t.Fatalf("removed leaves %v, actions left %d", removed, len(p.Actions))
	}
	tampered, _ := json.Marshal(p)
	if _, err := registry.VerifyPassport(tampered, keys.Keys, nil); !errors.Is(err, registry.ErrUnverified) {
		t.Errorf("a passport without an action verifies: %v", err)
	}

	var listed []registry.PassportLink
	if err := json.Unmarshal(call(200, "GET", "/assets/"+asset+"/passport_links", ro, nil).Raw, &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ID != link.ID || listed[0].FetchCount < 2 || listed[0].LastFetchedAt == nil || listed[0].URL != "" {
		t.Errorf("links %+v", listed)
	}
	call(204, "DELETE", "/assets/"+asset+"/passport_links/"+link.ID, rw, nil)
	call(404, "GET", path, "", nil)

	soon := time.Now().Add(2 * time.Second)
	expiring := call(201, "POST", "/assets/"+asset+"/passport_links", rw, map[string]any{"expires_at": soon.UTC().Format(time.RFC3339Nano)}).JSON()
	expired := strings.TrimPrefix(expiring["url"].(string), stack.RegistryURL)
	call(200, "GET", expired, "", nil)
	time.Sleep(time.Until(soon) + 100*time.Millisecond)
	call(404, "GET", expired, "", nil)
}
