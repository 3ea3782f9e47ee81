//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/assetregistry/registry/idp"
	"github.com/assetregistry/registry/pkg/store"
)

// The identity provider and its database stopped under the usual load: no
// token can be issued, and every verifier (the gateway, each service) keeps
// the last token validity list it read. The row holds the registry to: 0
// calls refused whose token was valid when the outage began (every call of
// the load, whose token was issued just before, must succeed, the actions
// that ask a peer with the service's own token included), and 0 calls
// accepted with a token revoked before it (a deleted client's, and one of a
// secret rotated with --window 0). First the identity provider's database
// goes (its role may no longer log in and its sessions end), so the
// identity provider serves the list from memory, saying how old it is; a
// little later (a third of the way through, 10 s at most) the identity
// provider is killed too. Both come back at the end.
//
// Under `make faults` (FULL=1) the outage lasts 15 minutes: past the
// minute after which verifiers used to refuse every call with 503 once the
// list could not be read, so the row fails if they do again. Inside `make
// test` it lasts 15 s, 10 of them with the identity provider killed: every
// kind of failure the long row meets (the database gone, the process
// gone, the list served from memory, the verifiers on their last list)
// within seconds of the outage's start, each phase still long enough for
// several of the one-second reads of the list (the identity provider's
// from its database, the verifiers' from it) and of the revoked tokens'
// 2 s probes; that the verifiers' defaults trust
// the last list as long as any token lives is held by pkg/auth's
// TestDefaultValidityListOutlivesEveryToken.

// idpOutageHold is how long the identity provider and its database stay
// stopped.
func idpOutageHold() time.Duration {
	if fullFaults() {
		return 15 * time.Minute
	}
	return 15 * time.Second
}

// revokedProbeEvery is how often each revoked token is tried during the
// outage.
const revokedProbeEvery = 2 * time.Second

func TestIdentityProviderOutage(t *testing.T) {
	skipOnClusters(t)
	hold := idpOutageHold()
	revoked := revokedTokens(t)

	// The load's token is issued now: valid when the outage begins. Under
	// make faults it expires about when the outage ends (the bundled
	// identity provider's 15 minutes); the verifiers' leeway covers the
	// rest, and the load stops when the outage ends.
	c := newClient(t)
	holdServiceTokens(t, c)
	l := newLoad(c, tag(70))
	stopLoad := l.run(loadClients, loadPause())
	time.Sleep(time.Second) // the load reaches its stride before the fault

	began := time.Now()
	restoreDatabase := cutIdPDatabase(t)
	killAt := began.Add(min(hold/3, 10*time.Second))
	var probes []call
	killed := false
	for time.Since(began) < hold {
		if !killed && time.Now().After(killAt) {
			kill("idp")(t)
			killed = true
		}
		probes = append(probes, tryRevoked(c, revoked)...)
		time.Sleep(revokedProbeEvery)
	}
	calls := stopLoad()
	restoreDatabase()
	restart("idp")(t)

	// A token issued after the outage for what follows: the load's may have
	// expired under make faults.
	after := newClient(t)
	recovered := waitRecovered(t, after, l.tag)
	r := checkRow(t, fault{name: fmt.Sprintf("idp and its database: stopped %s", hold)}, after, l, calls, nil, recovered)
	accepted, other := 0, 0
	for _, p := range probes {
		switch {
		case p.ok():
			accepted++
		case p.status != http.StatusUnauthorized:
			other++
		default:
			continue
		}
		t.Errorf("a token revoked before the outage (%s): %d at %s into it, want 401", p.op, p.status, p.at.Sub(began).Round(time.Second))
	}
	if len(probes) == 0 {
		t.Error("no revoked token was tried during the outage: nothing checked")
	}
	r.unaffected = fmt.Sprintf("tokens revoked before the outage: %d calls, %d accepted, %d answered otherwise than 401", len(probes), accepted, other)
	var first, last time.Duration = -1, -1
	for _, c := range calls {
		if c.status == http.StatusServiceUnavailable {
			if at := c.at.Sub(began); first < 0 || at < first {
				first = at
			}
			if at := c.at.Sub(began); at > last {
				last = at
			}
		}
	}
	if first >= 0 {
		r.unaffected += fmt.Sprintf("; the load's 503s came from %s to %s into the outage", first.Round(time.Second), last.Round(time.Second))
	}
	record(r)
}

// holdServiceTokens makes an action on a new asset, so that the actions
// service holds its own token, with which it asks the assets service,
// before the outage: the row is about tokens issued before it (a service
// that starts, or first needs a token, during an outage answers 503; see
// docs/auth.md), whatever the load's first second reached.
func holdServiceTokens(t *testing.T, c *client) {
	t.Helper()
	name := "idp-outage-" + randomHex()
	created := func(path string, body map[string]string) string {
		raw, _ := json.Marshal(body)
		a := c.do(t.Context(), request{method: "POST", path: path, body: raw, contentType: "application/json", key: "k-" + name + path, create: true})
		if a.status != http.StatusCreated || a.id == "" {
			t.Fatalf("POST %s before the outage: %d %v", path, a.status, a.err)
		}
		return a.id
	}
	typeID := created("/asset_types", map[string]string{"brand": "Outage", "model": name})
	assetID := created("/assets", map[string]string{"serial_number": name, "asset_type_id": typeID})
	created("/actions", map[string]string{"asset_id": assetID, "action_type": "repair", "performed_at": "2025-01-01",
		"source_system": "fault", "source_reference": name})
}

// revokedTokens makes two clients, takes a token of each, revokes them
// (one client deleted, the other's secret rotated with --window 0) and
// waits until the gateway refuses both tokens: the revocations were made,
// and reached the verifiers, before the outage. It returns the tokens by
// what was done.
func revokedTokens(t *testing.T) map[string]string {
	t.Helper()
	ctx := t.Context()
	pool, err := store.Open(ctx, store.Config{URL: stack.DatabaseURL, Schema: "idp", MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	clients := idp.NewClients(pool)
	tokens := map[string]string{}
	for _, how := range []string{"deleted", "rotated"} {
		id := "fault-" + how + "-" + randomHex()
		secret, err := clients.CreateClient(ctx, id, []string{idp.ScopeRead}, []string{creds.Resource})
		if err != nil {
			t.Fatal(err)
		}
		tokens[how] = tokenOf(t, id, secret)
		if how == "deleted" {
			err = clients.DeleteClient(ctx, id)
		} else {
			_, err = clients.RotateSecret(ctx, id, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, token := range tokens {
		for {
			a := (&client{http: http.DefaultClient, token: token}).do(ctx, request{method: "GET", path: "/organizations?limit=1"})
			if a.status == http.StatusUnauthorized {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a revoked token still answered %d after 30 s", a.status)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return tokens
}

// tokenOf asks the identity provider for a token of id.
func tokenOf(t *testing.T, id, secret string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "resource": {creds.Resource}}
	resp, err := http.PostForm(creds.AuthURL+"/oidc/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.AccessToken == "" {
		t.Fatalf("token of %s: %d %v", id, resp.StatusCode, err)
	}
	return body.AccessToken
}

// tryRevoked calls the gateway once with each revoked token.
func tryRevoked(c *client, revoked map[string]string) []call {
	var out []call
	for how, token := range revoked {
		r := request{op: "revoked token (" + how + ")", method: "GET", path: "/organizations?limit=1"}
		a := (&client{http: c.http, token: token}).do(context.Background(), r)
		out = append(out, call{r, a})
	}
	return out
}

// cutIdPDatabase stops the identity provider's database as far as the
// identity provider can tell (the suite's PostgreSQL serves every service,
// which must not notice): its role may no longer log in and its sessions
// end. The returned function lets it log in again; it also runs when the
// test ends, whatever fails.
func cutIdPDatabase(t *testing.T) (restore func()) {
	t.Helper()
	u, err := url.Parse(stack.RoleURLs["idp"])
	if err != nil || u.User.Username() == "" {
		t.Fatalf("the identity provider's database role: %q (%v)", stack.RoleURLs["idp"], err)
	}
	role := u.User.Username()
	conn := admin(t)
	quoted := `"` + strings.ReplaceAll(role, `"`, `""`) + `"`
	if _, err := conn.Exec(t.Context(), "ALTER ROLE "+quoted+" NOLOGIN"); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		if _, err := conn.Exec(context.Background(), "ALTER ROLE "+quoted+" LOGIN"); err != nil {
			t.Errorf("letting the identity provider's role log in again: %v", err)
		}
	}
	t.Cleanup(restore)
	if _, err := conn.Exec(t.Context(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role); err != nil {
		t.Fatal(err)
	}
	return restore
}
