package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/testkit"
)

// eventTenant is one of the suite's two organizations and a token of a
// client bound to it.
type eventTenant struct{ id, token string }

// eventTenants are the harness's two bound clients, A and B.
func eventTenants(t *testing.T) (a, b eventTenant) {
	t.Helper()
	return eventTenant{creds.OrgA.ID, orgA(t)}, eventTenant{creds.OrgB.ID, orgB(t)}
}

// What the events service answers is the record of the assets the
// caller's organization sees, through the gateway with real tokens: the
// feed, histories, as_of reads, passports and webhook deliveries of A's
// asset are A's alone (B is answered as if it did not exist), until A
// hands the asset over to B; then B sees its whole record, the actions
// recorded before included, and A none of it.
func TestTenancyEventsThroughGateway(t *testing.T) {
	t.Parallel()
	a, b := eventTenants(t)
	gw := gateway()
	call := func(status int, method, path, token string, body any) testkit.Response {
		t.Helper()
		return testkit.Expect(t, gw.Do(t, method, path, token, body), status)
	}
	types := []string{"asset.*", "action.*", "transfer.*"}
	receivers := map[string]*webhookReceiver{}
	for name, who := range map[string]eventTenant{"A": a, "B": b} {
		r := newWebhookReceiver(t)
		hook := call(201, "POST", "/webhooks", who.token, map[string]any{"url": r.URL + "/registry", "types": types}).JSON()
		r.mu.Lock()
		r.secret = hook["secret"].(string)
		r.mu.Unlock()
		receivers[name] = r
	}
	feedA := linkNext.FindStringSubmatch(call(200, "GET", "/events?after=now", a.token, nil).Header.Get("Link"))[1]
	feedB := linkNext.FindStringSubmatch(call(200, "GET", "/events?after=now", b.token, nil).Header.Get("Link"))[1]

	assetType := call(201, "POST", "/asset_types", a.token, map[string]any{"brand": unique("Tenantlift"), "model": "T-1"}).JSON()["id"].(string)
	asset := call(201, "POST", "/assets", a.token, map[string]any{"serial_number": unique("SN"), "asset_type_id": assetType}).JSON()["id"].(string)
	action := call(201, "POST", "/actions", a.token, map[string]any{"asset_id": asset, "action_type": "expert_control",
		"performed_at": "2025-03-14", "status_ok": true}).JSON()["id"].(string)

	// follow reads a feed from next until it holds want's events of the
	// asset (or 30 s passed) and returns them and where it stopped.
	follow := func(next, token string, want int) ([]string, string) {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			r := call(200, "GET", next, token, nil)
			for _, e := range r.List() {
				if s := e["subject"].(map[string]any); s["id"] == asset || s["id"] == action {
					got = append(got, e["type"].(string))
				}
			}
			next = linkNext.FindStringSubmatch(r.Header.Get("Link"))[1]
			if len(got) >= want || time.Now().After(deadline) {
				return got, next
			}
		}
	}
	// The two services' relays publish apart: the feed may hold the
	// action's event before its asset's.
	got, feedA := follow(feedA, a.token, 2)
	if slices.Sort(got); !slices.Equal(got, []string{"action.created", "asset.created"}) {
		t.Fatalf("A's feed: %v", got)
	}
	delivered := func(r *webhookReceiver, subject string) []string {
		r.mu.Lock()
		defer r.mu.Unlock()
		var out []string
		for _, e := range r.got {
			if s, _ := e["subject"].(map[string]any); s != nil && s["id"] == subject {
				out = append(out, e["type"].(string))
			}
		}
		slices.Sort(out)
		return out
	}
	asOf := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	sees := func(who eventTenant, seen bool) {
		t.Helper()
		status := map[bool]int{true: 200, false: 404}[seen]
		call(status, "GET", "/assets/"+asset+"/history", who.token, nil)
		call(status, "GET", "/actions/"+action+"/history", who.token, nil)
		call(status, "GET", "/assets/"+asset+"?as_of="+asOf, who.token, nil)
		call(status, "GET", "/actions/"+action+"?as_of="+asOf, who.token, nil)
		if !seen {
			call(404, "GET", "/assets/"+asset+"/passport", who.token, nil)
			return
		}
		// The passport waits for a checkpoint holding the asset (seconds).
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			r := gw.Do(t, "GET", "/assets/"+asset+"/passport", who.token, nil)
			if r.Status == 200 || time.Now().After(deadline) {
				testkit.Expect(t, r, 200)
				break
			}
		}
	}
	sees(a, true)
	sees(b, false)
	for deadline := time.Now().Add(30 * time.Second); len(delivered(receivers["A"], action)) == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if got, _ := follow(feedB, b.token, 0); len(got) != 0 {
		t.Errorf("B's feed holds A's asset: %v", got)
	}

	// A hands the asset over; B accepts.
	transfer := call(201, "POST", "/assets/"+asset+"/transfers", a.token, map[string]any{"to_organization_id": b.id}).JSON()["id"].(string)
	call(200, "POST", "/transfers/"+transfer+"/accept", b.token, nil)
	sees(b, true)
	sees(a, false)
	history := call(200, "GET", "/actions/"+action+"/history", b.token, nil).List()
	if len(history) != 1 || history[0]["type"] != "action.created" {
		t.Errorf("the action recorded before the transfer, as B reads it: %v", history)
	}
	// B's feed has the transfer's events and the asset's from now on; A's
	// feed no longer has the asset's.
	later := call(201, "POST", "/actions", b.token, map[string]any{"asset_id": asset, "action_type": "repair",
		"performed_at": "2025-03-15", "status_ok": true}).JSON()["id"].(string)
	// Read from B's cursor of before: the asset's earlier events are B's
	// now too.
	got, _ = follow(feedB, b.token, 3)
	if !slices.Contains(got, "asset.updated") || !slices.Contains(got, "action.created") {
		t.Errorf("B's feed after the transfer: %v, want the asset's update that made B its owner", got)
	}
	if got, _ := follow(feedA, a.token, 0); slices.Contains(got, "asset.updated") {
		t.Errorf("A's feed after the transfer still holds the asset: %v", got)
	}

	// Deliveries: A's subscription got the asset's events before the
	// transfer and not the action after it; B's the other way round.
	// Deliveries: A's subscription got the asset's events before the
	// transfer and not the action after it; B's the other way round.
	for deadline := time.Now().Add(30 * time.Second); len(delivered(receivers["B"], later)) == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct {
		who, subject string
		want         []string
	}{
		{"A", action, []string{"action.created"}}, {"A", later, nil},
		{"B", action, nil}, {"B", later, []string{"action.created"}},
	} {
		if got := delivered(receivers[c.who], c.subject); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s's deliveries of %s: %v, want %v", c.who, c.subject, got, c.want)
		}
	}
}
