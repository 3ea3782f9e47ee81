package idp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// from returns an HTTP client whose connections come from ip, an address
// of the loopback network other than 127.0.0.1: another machine, as the
// token endpoint sees it.
func from(t *testing.T, ip string) *http.Client {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	transport := &http.Transport{DialContext: dialer.DialContext}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport}
}

// tokenFrom asks for a token for id with secret over c.
func (ti *testIdP) tokenFrom(t *testing.T, c *http.Client, id, secret string) answer {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	req, err := http.NewRequest(http.MethodPost, ti.issuer+"/oidc/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return doWith(t, c, req)
}

var defaultThrottle = ThrottleConfig{PerClientAddress: 10, PerAddress: 30, PerClient: 60, Delay: 10 * time.Millisecond}

// One address guessing a client's secret is refused with 429 after ten
// failures, while the real client, from its own address, keeps getting
// tokens; the clock is frozen, so no bucket refills during the test.
func TestThrottleRefusesGuessesNotTheRealClient(t *testing.T) {
	t.Parallel()
	ti := newTestIdPWith(t, func(c *Config) { c.Throttle = defaultThrottle })
	secret := ti.createClient(t, "target", []string{ScopeRead}, []string{registry})
	otherSecret := ti.createClient(t, "other", []string{ScopeRead}, []string{registry})
	attacker, real := from(t, "127.0.0.2"), from(t, "127.0.0.1")

	counts := map[int]int{}
	var refused answer
	for i := range 1000 {
		a := ti.tokenFrom(t, attacker, "target", fmt.Sprintf("guess-%d", i))
		counts[a.status]++
		if a.status == http.StatusTooManyRequests {
			refused = a
		}
		if i%100 == 0 {
			if a := ti.tokenFrom(t, real, "target", secret); a.status != http.StatusOK {
				t.Fatalf("the real client during the attack (guess %d): %d %v", i, a.status, a.body)
			}
		}
	}
	if counts[401] != 10 || counts[429] != 990 {
		t.Fatalf("1000 wrong secrets from one address: %v, want 10 × 401 then 990 × 429", counts)
	}
	if refused.body["error"] != "slow_down" || refused.header.Get("Retry-After") != "6" ||
		refused.header.Get("Cache-Control") != "no-store" || refused.header.Get("WWW-Authenticate") != "" {
		t.Errorf("429: %v %v, want slow_down, Retry-After 6 (a tenth of a minute), no-store, no challenge", refused.body, refused.header)
	}
	if _, leaked := refused.body["access_token"]; leaked {
		t.Error("a 429 carries a token")
	}
	// The right secret from the attacking address (the real client behind
	// the attacker's NAT) is answered: it authenticated here before, which
	// no guess did. A secret never seen here is not looked at while the
	// pair is refused, the right one included.
	if a := ti.tokenFrom(t, attacker, "target", secret); a.status != http.StatusOK {
		t.Errorf("the right secret, seen before, from the throttled address: %d %v, want 200", a.status, a.body)
	}
	unseen := ti.createClient(t, "unseen", []string{ScopeRead}, []string{registry})
	for i := range 10 {
		if a := ti.tokenFrom(t, attacker, "unseen", fmt.Sprintf("guess-%d", i)); a.status != http.StatusUnauthorized {
			t.Fatalf("guess %d at a second client: %d, want 401", i, a.status)
		}
	}
	if a := ti.tokenFrom(t, attacker, "unseen", unseen); a.status != http.StatusTooManyRequests {
		t.Errorf("a right secret never seen here, from the throttled address: %d, want 429", a.status)
	}
	if a := ti.tokenFrom(t, real, "unseen", unseen); a.status != http.StatusOK {
		t.Errorf("the same secret from another address: %d %v, want 200", a.status, a.body)
	}
	// Another client from the same address has a bucket of its own.
	if a := ti.tokenFrom(t, attacker, "other", otherSecret); a.status != http.StatusOK {
		t.Errorf("another client from the attacking address: %d %v, want 200", a.status, a.body)
	}
	// After Retry-After one more guess is let through, and refused again.
	ti.clock.Advance(6 * time.Second)
	if a := ti.tokenFrom(t, attacker, "target", "one-more"); a.status != http.StatusUnauthorized {
		t.Errorf("a guess after Retry-After: %d, want 401", a.status)
	}
	if a := ti.tokenFrom(t, attacker, "target", "and-another"); a.status != http.StatusTooManyRequests {
		t.Errorf("the guess after that: %d, want 429", a.status)
	}
}

// forwarded asks for a token for id with secret through the proxy c,
// which reports the caller's address in X-Forwarded-For, as an ingress
// does.
func (ti *testIdP) forwarded(t *testing.T, c *http.Client, caller, id, secret string) answer {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	req, err := http.NewRequest(http.MethodPost, ti.issuer+"/oidc/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", caller)
	return doWith(t, c, req)
}

// Behind an ingress every caller comes from the ingress's address: with
// the ingress trusted, the attacker's guesses from one address are refused
// after its budget while the real client, from another address through the
// same ingress, gets its token with a secret it never used here before.
func TestThrottleBehindATrustedProxy(t *testing.T) {
	t.Parallel()
	cfg := defaultThrottle
	must(t, cfg.TrustedProxies.Set("127.0.0.2"))
	ti := newTestIdPWith(t, func(c *Config) { c.Throttle = cfg })
	secret := ti.createClient(t, "target", []string{ScopeRead}, []string{registry})
	ingress := from(t, "127.0.0.2")
	counts := map[int]int{}
	for i := range 50 {
		counts[ti.forwarded(t, ingress, "203.0.113.66", "target", fmt.Sprintf("guess-%d", i)).status]++
	}
	if counts[401] != 10 || counts[429] != 40 {
		t.Fatalf("50 wrong secrets from one address behind the ingress: %v, want 10 × 401 then 40 × 429", counts)
	}
	if a := ti.forwarded(t, ingress, "198.51.100.7", "target", secret); a.status != http.StatusOK {
		t.Errorf("the right secret from another address through the same ingress: %d %v, want 200", a.status, a.body)
	}
	if a := ti.forwarded(t, ingress, "203.0.113.66", "target", "guess-again"); a.status != http.StatusTooManyRequests {
		t.Errorf("the attacker again: %d, want 429", a.status)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// One address trying many client ids is slowed down after thirty
// failures, never refused: another client calling from the same address
// (behind the same egress) still gets its token.
func TestThrottleSlowsAnAddressTryingManyClients(t *testing.T) {
	t.Parallel()
	ti := newTestIdPWith(t, func(c *Config) { c.Throttle = defaultThrottle })
	secret := ti.createClient(t, "target", []string{ScopeRead}, []string{registry})
	sprayer := from(t, "127.0.0.3")
	for i := range 30 {
		if a := ti.tokenFrom(t, sprayer, fmt.Sprintf("client-%d", i), "guess"); a.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, a.status)
		}
	}
	if v := ti.throttle.judge("client-new", netip.MustParsePrefix("127.0.0.3/32"), ti.clock.Now()); v.refusedFor != 0 || !v.slowed {
		t.Errorf("after 30 failures for 30 ids, a new id from the address: %+v, want slowed, not refused", v)
	}
	if a := ti.tokenFrom(t, sprayer, "client-new", "guess"); a.status != http.StatusUnauthorized {
		t.Errorf("failure 31: %d, want 401 (slowed, not refused)", a.status)
	}
	if a := ti.tokenFrom(t, sprayer, "target", secret); a.status != http.StatusOK {
		t.Errorf("a client with its right secret from the same address: %d %v, want 200", a.status, a.body)
	}
	if a := ti.tokenFrom(t, from(t, "127.0.0.1"), "target", secret); a.status != http.StatusOK {
		t.Errorf("a client elsewhere: %d, want 200", a.status)
	}
}

// Which failures count against which request: refusal is per client id
// and address only, so failures never refuse the same client from another
// address, nor another client from the same address; an address or a
// client id failing everywhere is only slowed.
func TestThrottleKeys(t *testing.T) {
	t.Parallel()
	const (
		here  = "198.51.100.7/32"
		there = "203.0.113.9/32"
	)
	type failure struct {
		client, source string
		times          int
	}
	tests := []struct {
		name           string
		failures       []failure
		client, source string
		refused        bool
		slowed         bool
	}{
		{"nothing failed", nil, "acme", here, false, false},
		{"nine wrong secrets, then the same client and address", []failure{{"acme", here, 9}}, "acme", here, false, false},
		{"ten wrong secrets, then the same client and address", []failure{{"acme", here, 10}}, "acme", here, true, false},
		{"ten wrong secrets, then the same client from another address", []failure{{"acme", here, 10}}, "acme", there, false, false},
		{"ten wrong secrets, then another client from the same address", []failure{{"acme", here, 10}}, "globex", here, false, false},
		{"thirty ids from one address, then another id from it", []failure{{"a1", here, 10}, {"a2", here, 10}, {"a3", here, 10}}, "globex", here, false, true},
		{"thirty ids from one address, then another id from elsewhere", []failure{{"a1", here, 10}, {"a2", here, 10}, {"a3", here, 10}}, "globex", there, false, false},
		{"thirty ids from one address, then one of them from it", []failure{{"a1", here, 10}, {"a2", here, 10}, {"a3", here, 10}}, "a1", here, true, true},
		{"sixty failures of one id from six addresses, then it from a seventh", []failure{
			{"acme", "192.0.2.1/32", 10}, {"acme", "192.0.2.2/32", 10}, {"acme", "192.0.2.3/32", 10},
			{"acme", "192.0.2.4/32", 10}, {"acme", "192.0.2.5/32", 10}, {"acme", "192.0.2.6/32", 10},
		}, "acme", there, false, true},
		{"sixty failures of one id, then another id", []failure{
			{"acme", "192.0.2.1/32", 10}, {"acme", "192.0.2.2/32", 10}, {"acme", "192.0.2.3/32", 10},
			{"acme", "192.0.2.4/32", 10}, {"acme", "192.0.2.5/32", 10}, {"acme", "192.0.2.6/32", 10},
		}, "globex", there, false, false},
		{"ids that cannot exist share one key", []failure{{"x", here, 5}, {strings.Repeat("y", 100), here, 5}}, "\x00", here, true, false},
		{"one IPv6 /64 is one address", []failure{{"acme", "2001:db8:1:2::/64", 10}}, "acme", "2001:db8:1:2::/64", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newThrottle(defaultThrottle)
			now := time.Now()
			th.now = func() time.Time { return now }
			for _, f := range tt.failures {
				for range f.times {
					th.failed(f.client, netip.MustParsePrefix(f.source))
				}
			}
			v := th.judge(tt.client, netip.MustParsePrefix(tt.source), now)
			if (v.refusedFor > 0) != tt.refused || v.slowed != tt.slowed {
				t.Errorf("verdict %+v, want refused %v, slowed %v", v, tt.refused, tt.slowed)
			}
		})
	}
}

// Many addresses guessing one client's secret slow that client's requests
// down; they never make them fail.
func TestThrottleOnlySlowsAClientAttackedFromEverywhere(t *testing.T) {
	t.Parallel()
	ti := newTestIdPWith(t, func(c *Config) { c.Throttle = defaultThrottle })
	secret := ti.createClient(t, "target", []string{ScopeRead}, []string{registry})
	for host := 2; host < 10; host++ { // 8 addresses × 10 failures > 60
		attacker := from(t, fmt.Sprintf("127.0.1.%d", host))
		for range 10 {
			ti.tokenFrom(t, attacker, "target", "guess")
		}
	}
	if lim, ok := ti.throttle.client.Get("target"); !ok || shortfall(lim, ti.clock.Now()) == 0 {
		t.Fatal("80 failures from 8 addresses did not empty the client's bucket")
	}
	for range 3 {
		if a := ti.tokenFrom(t, from(t, "127.0.0.1"), "target", secret); a.status != http.StatusOK {
			t.Fatalf("the real client: %d %v, want 200 (slowed, not refused)", a.status, a.body)
		}
	}
}

// Successes cost nothing: a client asking again and again is never throttled.
func TestThrottleIgnoresSuccesses(t *testing.T) {
	t.Parallel()
	ti := newTestIdPWith(t, func(c *Config) { c.Throttle = ThrottleConfig{PerClientAddress: 1, PerAddress: 1, PerClient: 1} })
	secret := ti.createClient(t, "busy", []string{ScopeRead}, []string{registry})
	for i := range 50 {
		if a := ti.tokenFrom(t, http.DefaultClient, "busy", secret); a.status != http.StatusOK {
			t.Fatalf("request %d: %d %v", i+1, a.status, a.body)
		}
	}
}

// The slowdown waits, and a caller that gives up stops waiting.
func TestThrottleSlowdownEndsWithTheRequest(t *testing.T) {
	t.Parallel()
	th := newThrottle(ThrottleConfig{PerClient: 1, Delay: time.Hour})
	source := netip.MustParsePrefix("192.0.2.1/32")
	th.failed("target", source)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := th.admit(ctx, "target", "", source); !errors.Is(err, context.Canceled) {
		t.Errorf("admit over the client's limit: %v, want it to wait until the request ends", err)
	}
	if _, err := th.admit(ctx, "someone-else", "", source); err != nil {
		t.Errorf("another client: %v, want no wait", err)
	}
}

// Memory stays bounded whatever the attacker sends: ids it makes up,
// addresses it has.
func TestThrottleMemoryIsBounded(t *testing.T) {
	t.Parallel()
	th := newThrottle(defaultThrottle)
	for i := range 3 * throttleEntries {
		source := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 32)
		th.failed(fmt.Sprintf("made-up-%d", i), source)
		th.failed(strings.Repeat("x", 10_000), source) // not an id: one shared key
	}
	for name, n := range map[string]int{"client-address": th.clientAddress.Len(), "address": th.address.Len(), "client": th.client.Len()} {
		if n > throttleEntries {
			t.Errorf("%s: %d entries, want at most %d", name, n, throttleEntries)
		}
	}
	if _, ok := th.client.Peek(strings.Repeat("x", 10_000)); ok {
		t.Error("a malformed client id is a key of its own")
	}
}

func TestThrottleSource(t *testing.T) {
	t.Parallel()
	var cfg ThrottleConfig
	fs := flag.NewFlagSet("idp", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"-throttle.trusted-proxies", "10.0.0.0/8, fd00::/8"}); err != nil {
		t.Fatal(err)
	}
	th := newThrottle(cfg)
	tests := []struct {
		name, peer, forwarded, want string
	}{
		{"a direct client", "198.51.100.7:5000", "", "198.51.100.7/32"},
		{"a direct client cannot claim another address", "198.51.100.7:5000", "203.0.113.9", "198.51.100.7/32"},
		{"behind a trusted proxy", "10.1.2.3:5000", "203.0.113.9", "203.0.113.9/32"},
		{"behind two trusted proxies", "10.1.2.3:5000", "203.0.113.9, 10.9.9.9", "203.0.113.9/32"},
		{"what the client put before the proxies is not believed", "10.1.2.3:5000", "192.0.2.1, 203.0.113.9", "203.0.113.9/32"},
		{"several headers read as one list", "10.1.2.3:5000", "203.0.113.9\n10.9.9.9", "203.0.113.9/32"},
		{"a malformed hop stops the walk", "10.1.2.3:5000", "203.0.113.9, junk", "10.1.2.3/32"},
		{"IPv6 counts by /64", "[2001:db8:1:2:3:4:5:6]:5000", "", "2001:db8:1:2::/64"},
		{"IPv4 in IPv6 is IPv4", "[::ffff:198.51.100.7]:5000", "", "198.51.100.7/32"},
		{"behind a trusted IPv6 proxy", "[fd00::1]:5000", "2001:db8::1", "2001:db8::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/oidc/token", nil)
			r.RemoteAddr = tt.peer
			for _, v := range strings.Split(tt.forwarded, "\n") {
				if v != "" {
					r.Header.Add("X-Forwarded-For", v)
				}
			}
			if got := th.source(r); got != netip.MustParsePrefix(tt.want) {
				t.Errorf("source = %s, want %s", got, tt.want)
			}
		})
	}
}

// A remembered secret that no longer holds (rotated out at once, as a
// leaked one is) is refused from a pair over its budget like a guess, and
// is no longer let through to the database.
func TestThrottleForgetsASecretThatNoLongerHolds(t *testing.T) {
	t.Parallel()
	ti := newTestIdPWith(t, func(c *Config) { c.Throttle = defaultThrottle })
	leaked := ti.createClient(t, "target", []string{ScopeRead}, []string{registry})
	attacker := from(t, "127.0.0.2")
	if a := ti.tokenFrom(t, attacker, "target", leaked); a.status != http.StatusOK {
		t.Fatalf("the secret before the rotation: %d", a.status)
	}
	for i := range 10 {
		ti.tokenFrom(t, attacker, "target", fmt.Sprintf("guess-%d", i))
	}
	if _, err := ti.Clients.RotateSecret(context.Background(), "target", 0); err != nil {
		t.Fatal(err)
	}
	if a := ti.tokenFrom(t, attacker, "target", leaked); a.status != http.StatusTooManyRequests {
		t.Errorf("the rotated-out secret from the refused pair: %d, want 429", a.status)
	}
	if ti.throttle.knows("target", leaked) {
		t.Error("the rotated-out secret is still remembered")
	}
}
