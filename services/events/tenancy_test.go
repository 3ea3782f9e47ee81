package events

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// bound is a token of a client bound to organization org.
func bound(s *servicetest.Service, t *testing.T, sub, org string, scopes ...string) string {
	claims := s.Issuer.Claims(sub, scopes...)
	claims[auth.DefaultOrganizationClaim] = org
	return s.Issuer.Sign(t, claims)
}

// recorded is an event of kind and op about id whose data is data.
func recorded(kind, op, id, data string) outbox.Event {
	e := event(kind, op, id)
	e.Data = json.RawMessage(data)
	return e
}

// tenancyCast is who reads in the tenancy tests: the owner's client, a
// read grantee's, an inspect grantee's, another organization's, a client
// bound to none, and an admin bound to the other organization (who sees
// every row all the same).
type tenancyCast struct {
	owner, reader, inspector, other string // organizations
	tokens                          map[string]string
}

func newCast(t *testing.T, s *servicetest.Service) tenancyCast {
	c := tenancyCast{owner: uuid.NewString(), reader: uuid.NewString(), inspector: uuid.NewString(), other: uuid.NewString()}
	c.tokens = map[string]string{
		"owner":     bound(s, t, "owner-client", c.owner, auth.ScopeRead, auth.ScopeWrite),
		"reader":    bound(s, t, "reader-client", c.reader, auth.ScopeRead, auth.ScopeWrite),
		"inspector": bound(s, t, "inspector-client", c.inspector, auth.ScopeRead, auth.ScopeWrite),
		"other":     bound(s, t, "other-client", c.other, auth.ScopeRead, auth.ScopeWrite),
		"unbound":   s.RW,
		"admin":     bound(s, t, "admin-client", c.other, auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin),
	}
	return c
}

// feedIDs reads the whole feed as token sees it.
func feedIDs(t *testing.T, s *servicetest.Service, token string) []string {
	t.Helper()
	return ids(s.Call(200, "GET", "/events?limit=1000", token, nil).List())
}

// Everything recorded on an asset is seen with it, by the clients of its
// owner and of the organizations holding a grant on it, and by clients
// bound to none and admins; another organization's clients are answered
// as if none of it existed: absent from /events, 404 by id for histories,
// as_of reads and passports. Organizations, documents and the other
// records of no asset are seen by every reader; a transfer by both its
// parties.
func TestTenancyWhoSeesWhat(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	c := newCast(t, s)
	asset, shared, othersAsset := uuid.NewString(), uuid.NewString(), uuid.NewString()
	action, link, document, org, transfer := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	assetType := uuid.NewString()
	// The owner grants read and inspect: a change the assets service logs.
	s.StandIn("assets").ChangeAccess(model.Access{AssetID: asset, OwnerOrganizationID: c.owner, Grants: []model.AssetGrant{
		{OrganizationID: c.reader, Role: model.GrantRead}, {OrganizationID: c.inspector, Role: model.GrantInspect}}})
	created := recorded("asset", "created", asset, `{"id":"`+asset+`","asset_type_id":"`+assetType+`","owner_organization_id":"`+c.owner+`"}`)
	events := map[string]outbox.Event{
		"asset":         created,
		"action":        recorded("action", "created", action, `{"id":"`+action+`","asset_id":"`+asset+`"}`),
		"link":          recorded("action_document", "created", link, `{"id":"`+link+`","action_id":"`+action+`","document_id":"`+document+`"}`),
		"compliance":    recorded("compliance", "updated", asset, `{"asset_id":"`+asset+`"}`),
		"grant":         recorded("asset_grant", "created", asset+":"+c.reader, `{"asset_id":"`+asset+`","organization_id":"`+c.reader+`","role":"read"}`),
		"shared":        recorded("asset", "created", shared, `{"id":"`+shared+`","owner_organization_id":null}`),
		"others asset":  recorded("asset", "created", othersAsset, `{"id":"`+othersAsset+`","owner_organization_id":"`+c.other+`"}`),
		"organization":  recorded("organization", "created", org, `{"id":"`+org+`"}`),
		"document":      recorded("document", "created", document, `{"id":"`+document+`"}`),
		"transfer":      recorded("transfer", "created", transfer, `{"id":"`+transfer+`","asset_id":"`+othersAsset+`","from_organization_id":"`+c.other+`","to_organization_id":"`+c.owner+`","state":"pending"}`),
		"asset updated": recorded("asset", "updated", asset, `{"id":"`+asset+`","owner_organization_id":"`+c.owner+`"}`),
	}
	order := []string{"asset", "action", "link", "compliance", "grant", "shared", "others asset", "organization", "document", "transfer", "asset updated"}
	for _, name := range order {
		publish(t, s, events[name]) // one batch each, as they may arrive
	}
	sign(t, s, keys)
	everything := order
	ofAsset := []string{"asset", "action", "link", "compliance", "grant", "asset updated"}
	ofAll := []string{"shared", "organization", "document"}
	sees := map[string][]string{
		"owner":     append(append(slices.Clone(ofAsset), ofAll...), "transfer"),
		"reader":    append(slices.Clone(ofAsset), ofAll...),
		"inspector": append(slices.Clone(ofAsset), ofAll...),
		"other":     append(slices.Clone(ofAll), "others asset", "transfer"),
		"unbound":   everything,
		"admin":     everything,
	}
	asOf := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	for _, who := range []string{"owner", "reader", "inspector", "other", "unbound", "admin"} {
		t.Run(who, func(t *testing.T) {
			token := c.tokens[who]
			var want []string
			for _, name := range order {
				if slices.Contains(sees[who], name) {
					want = append(want, events[name].ID)
				}
			}
			if got := feedIDs(t, s, token); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("/events: %v, want %v", got, want)
			}
			seesAsset := slices.Contains(sees[who], "asset")
			status := map[bool]int{true: 200, false: 404}[seesAsset]
			history := s.Call(status, "GET", "/assets/"+asset+"/history", token, nil)
			if seesAsset && len(history.List()) != 3 { // created, compliance, updated
				t.Errorf("the asset's history: %s", history.Raw)
			}
			s.Call(status, "GET", "/actions/"+action+"/history", token, nil)
			s.Call(status, "GET", "/assets/"+asset+"?as_of="+asOf, token, nil)
			s.Call(status, "GET", "/actions/"+action+"?as_of="+asOf, token, nil)
			s.Call(status, "GET", "/assets/"+asset+"/passport", token, nil)
			// What every reader sees.
			s.Call(200, "GET", "/organizations/"+org+"/history", token, nil)
			s.Call(200, "GET", "/documents/"+document+"?as_of="+asOf, token, nil)
			s.Call(200, "GET", "/assets/"+shared+"/history", token, nil)
		})
	}
}

// The record follows the asset: once it is handed over, the new owner's
// clients see its whole history and every action recorded before, in the
// feed and by id, and the previous owner's no longer do, even with a
// cursor of the history it read before.
func TestTenancyTransferMovesTheRecord(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	c := newCast(t, s)
	a, b := c.tokens["owner"], c.tokens["other"]
	asset, action := uuid.NewString(), uuid.NewString()
	before := []outbox.Event{
		recorded("asset", "created", asset, `{"id":"`+asset+`","owner_organization_id":"`+c.owner+`"}`),
		recorded("action", "created", action, `{"id":"`+action+`","asset_id":"`+asset+`"}`),
		recorded("action", "updated", action, `{"id":"`+action+`","asset_id":"`+asset+`"}`),
	}
	publish(t, s, before...)
	sign(t, s, keys)
	asOf := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	first := s.Call(200, "GET", "/actions/"+action+"/history?limit=1", a, nil)
	cursor := next(t, first.Header.Get("Link"))
	check := func(token string, seen bool) {
		t.Helper()
		status := map[bool]int{true: 200, false: 404}[seen]
		var want []string
		if seen {
			want = ids(eventMaps(t, before))
		}
		if got := feedIDs(t, s, token); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("/events: %v, want %v", got, want)
		}
		s.Call(status, "GET", "/assets/"+asset+"/history", token, nil)
		s.Call(status, "GET", "/actions/"+action+"/history", token, nil)
		s.Call(status, "GET", cursor, token, nil)
		s.Call(status, "GET", "/actions/"+action+"?as_of="+asOf, token, nil)
		s.Call(status, "GET", "/assets/"+asset+"/passport", token, nil)
	}
	check(a, true)
	check(b, false)
	// The transfer is accepted: the assets service logs the new owner.
	s.StandIn("assets").ChangeAccess(model.Access{AssetID: asset, OwnerOrganizationID: c.other})
	check(a, false)
	check(b, true)
}

func eventMaps(t *testing.T, events []outbox.Event) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(events))
	for i, e := range events {
		out[i] = map[string]any{"id": e.ID}
	}
	return out
}

// A subscription made by a bound client delivers only what its
// organization sees when the delivery is queued: after a transfer, the
// new owner's subscription receives the asset's next events and the
// previous owner's no longer does, however late the fan-out runs.
func TestTenancyWebhookDeliveries(t *testing.T) {
	t.Parallel()
	w := startWithStream(t, fastConfig())
	c := newCast(t, w.Service)
	types := []string{"asset.*", "action.*", "action_document.*", "organization.*"}
	receivers := map[string]*receiver{}
	for _, who := range []string{"owner", "reader", "other", "unbound", "admin"} {
		r := newReceiver(t)
		hook := w.Call(201, "POST", "/webhooks", c.tokens[who], map[string]any{"url": r.URL + "/hook", "types": types}).JSON()
		r.secrets = []string{hook["secret"].(string)}
		receivers[who] = r
	}
	asset, othersAsset, action, link, org := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	w.StandIn("assets").ChangeAccess(model.Access{AssetID: asset, OwnerOrganizationID: c.owner,
		Grants: []model.AssetGrant{{OrganizationID: c.reader, Role: model.GrantRead}}})
	first := []outbox.Event{
		recorded("asset", "created", asset, `{"id":"`+asset+`","owner_organization_id":"`+c.owner+`"}`),
		recorded("action", "created", action, `{"id":"`+action+`","asset_id":"`+asset+`"}`),
		recorded("action_document", "created", link, `{"id":"`+link+`","action_id":"`+action+`","document_id":"`+uuid.NewString()+`"}`),
		recorded("asset", "created", othersAsset, `{"id":"`+othersAsset+`","owner_organization_id":"`+c.other+`"}`),
		recorded("organization", "created", org, `{"id":"`+org+`"}`),
	}
	w.publish(t, first...)
	all := func(n int) func() bool {
		return func() bool {
			return len(receivers["unbound"].succeeded()) == n && len(receivers["admin"].succeeded()) == n
		}
	}
	eventually(t, "every event delivered to the subscriptions that see everything", all(len(first)))
	// The asset is handed over to the other organization; then an action
	// is recorded on it.
	w.StandIn("assets").ChangeAccess(model.Access{AssetID: asset, OwnerOrganizationID: c.other})
	later := recorded("action", "updated", action, `{"id":"`+action+`","asset_id":"`+asset+`"}`)
	w.publish(t, later)
	eventually(t, "the later event delivered to the subscriptions that see everything", all(len(first)+1))
	time.Sleep(300 * time.Millisecond) // the fan-out of the others is the same step's
	want := map[string][]outbox.Event{
		"owner":   {first[0], first[1], first[2], first[4]},
		"reader":  {first[0], first[1], first[2], first[4]},
		"other":   {first[3], first[4], later},
		"unbound": append(slices.Clone(first), later),
		"admin":   append(slices.Clone(first), later),
	}
	for who, events := range want {
		var wantIDs []string
		for _, e := range events {
			wantIDs = append(wantIDs, e.ID)
		}
		var got []string
		for _, rc := range receivers[who].log() {
			got = append(got, rc.id)
		}
		slices.Sort(got)
		slices.Sort(wantIDs)
		if fmt.Sprint(got) != fmt.Sprint(wantIDs) {
			t.Errorf("%s's subscription received %v, want %v", who, got, wantIDs)
		}
	}
}

// While the assets service is away the registry cannot tell what an
// organization sees: the subscriptions of clients bound to none are
// delivered all the same, those of bound clients wait.
func TestTenancyWebhooksWithoutTheAssetsService(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler()) // the assets service, answering nothing it should
	gone.Close()
	w := startWithStream(t, fastConfig(), func(c *servicekit.Config) {
		c.Peers = peer.Config{URLs: map[string]*string{"assets": &gone.URL}, Timeout: time.Second,
			TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "test"})}
	})
	c := newCast(t, w.Service)
	receivers := map[string]*receiver{}
	for _, who := range []string{"unbound", "other"} {
		r := newReceiver(t)
		hook := w.Call(201, "POST", "/webhooks", c.tokens[who], map[string]any{"url": r.URL + "/hook", "types": []string{"organization.*"}}).JSON()
		r.secrets = []string{hook["secret"].(string)}
		receivers[who] = r
	}
	org := uuid.NewString()
	w.publish(t, recorded("organization", "created", org, `{"id":"`+org+`"}`))
	eventually(t, "the unbound client's delivery", func() bool { return len(receivers["unbound"].succeeded()) == 1 })
	time.Sleep(300 * time.Millisecond)
	if got := receivers["other"].log(); len(got) != 0 {
		t.Errorf("a bound client's subscription was delivered without a fresh copy: %v", got)
	}
}
