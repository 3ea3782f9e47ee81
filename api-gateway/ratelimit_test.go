package gateway

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	goredis "github.com/redis/go-redis/v9"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestParseBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Budget
		wantErr string
	}{
		{"6000/60s", Budget{"b", 6000, time.Minute}, ""},
		{"6000/60", Budget{"b", 6000, time.Minute}, ""},
		{" 10 / 1m ", Budget{"b", 10, time.Minute}, ""},
		{"1/1h", Budget{"b", 1, time.Hour}, ""},
		{"600", Budget{}, "want <quota>/<window>"},
		{"0/60s", Budget{}, "at least 1"},
		{"-5/60s", Budget{}, "at least 1"},
		{"ten/60s", Budget{}, "whole number"},
		{"10/500ms", Budget{}, "whole seconds"},
		{"10/1.5s", Budget{}, "whole seconds"},
		{"10/0", Budget{}, "whole seconds"},
		{"10/soon", Budget{}, "whole seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBudget("b", tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("= %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestClientBudgetsFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     Budgets
		wantErr  string
	}{
		{"empty", "", Budgets{}, ""},
		{"one", "importer=60000/60s", Budgets{"importer": {"importer", 60000, time.Minute}}, ""},
		{"several, spaces", " importer = 60000/1m , nightly=100/1s,", Budgets{
			"importer": {"importer", 60000, time.Minute}, "nightly": {"nightly", 100, time.Second}}, ""},
		{"a subject with odd characters", `ci|"x"=5/5`, Budgets{`ci|"x"`: {`ci|"x"`, 5, 5 * time.Second}}, ""},
		{"no budget", "importer", nil, "want <client>=<quota>/<window>"},
		{"no client", "=10/60s", nil, "want <client>=<quota>/<window>"},
		{"twice", "a=1/1s,a=2/1s", nil, "two budgets"},
		{"bad budget", "a=many/1s", nil, `client "a"`},
		{"not ASCII", "klïent=1/1s", nil, "printable ASCII"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Budgets
			err := got.Set(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("= %v, %v; want %v", got, err, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s: %+v, want %+v", k, got[k], v)
				}
			}
			var again Budgets // the flag's String reads back as the same budgets
			if err := again.Set(got.String()); err != nil || again.String() != got.String() {
				t.Errorf("String %q does not read back: %v", got.String(), err)
			}
		})
	}
}

func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		b                 Budget
		remaining         int
		reset             time.Duration
		policy, rateLimit string
	}{
		{"the default, one spent", DefaultBudget, 5999, 10 * time.Millisecond, `"default";q=6000;w=60`, `"default";r=5999;t=1`},
		{"full", Budget{"default", 600, time.Minute}, 600, 0, `"default";q=600;w=60`, `"default";r=600;t=0`},
		{"spent, seconds rounded up", Budget{"default", 600, time.Minute}, 0, 59100 * time.Millisecond, `"default";q=600;w=60`, `"default";r=0;t=60`},
		{"a client's own budget", Budget{"importer", 60000, time.Hour}, 12, 3 * time.Second, `"importer";q=60000;w=3600`, `"importer";r=12;t=3`},
		{"quotes and backslashes escaped", Budget{`a"b\c`, 1, time.Second}, 0, time.Second, `"a\"b\\c";q=1;w=1`, `"a\"b\\c";r=0;t=1`},
		{"never negative", Budget{"x", 1, time.Second}, -1, -time.Second, `"x";q=1;w=1`, `"x";r=0;t=0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.policyHeader(); got != tt.policy {
				t.Errorf("RateLimit-Policy %s, want %s", got, tt.policy)
			}
			if got := tt.b.stateHeader(tt.remaining, tt.reset); got != tt.rateLimit {
				t.Errorf("RateLimit %s, want %s", got, tt.rateLimit)
			}
		})
	}
}

func TestClientAddress(t *testing.T) {
	t.Parallel()
	var trusted Prefixes
	if err := trusted.Set("10.0.0.0/8, 192.168.1.7, fd00::/8"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, remote, xff string
		want              string
	}{
		{"the TCP peer", "203.0.113.5:4711", "", "203.0.113.5/32"},
		{"an untrusted peer's X-Forwarded-For is ignored", "203.0.113.5:4711", "198.51.100.1", "203.0.113.5/32"},
		{"a trusted proxy names the caller", "10.1.2.3:80", "198.51.100.1", "198.51.100.1/32"},
		{"the last untrusted hop, not a forged first one", "10.1.2.3:80", "1.1.1.1, 198.51.100.1, 192.168.1.7", "198.51.100.1/32"},
		{"a trusted proxy without the header", "192.168.1.7:80", "", "192.168.1.7/32"},
		{"garbage stops the walk", "10.1.2.3:80", "198.51.100.1, nonsense", "10.1.2.3/32"},
		{"IPv6 counted by its /64", "[2001:db8:1:2:3:4:5:6]:443", "", "2001:db8:1:2::/64"},
		{"IPv4 mapped in IPv6", "[::ffff:203.0.113.5]:1", "", "203.0.113.5/32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tt.remote, Header: http.Header{}}
			if tt.xff != "" {
				r.Header.Set("X-Forwarded-For", tt.xff)
			}
			if got := clientAddress(r, trusted); got != tt.want {
				t.Errorf("= %s, want %s", got, tt.want)
			}
		})
	}
	if err := new(Prefixes).Set("10.0.0.0/8,proxy.local"); err == nil {
		t.Error("a host name was taken as a trusted proxy")
	}
	if got := trusted.String(); got != "10.0.0.0/8,192.168.1.7/32,fd00::/8" {
		t.Errorf("trusted proxies read as %s", got)
	}
}

// limited returns a gateway configuration with limits on, kept in the
// Redis at url under a key prefix of this test alone.
func limited(url, prefix string, change func(*RateLimitConfig)) func(*Config) {
	return func(c *Config) {
		c.RateLimit = RateLimitConfig{Enabled: true, Redis: cache.Connection{URL: url}, KeyPrefix: prefix,
			Default: DefaultBudget, Unauthenticated: DefaultUnauthenticatedBudget, Timeout: time.Second, Backoff: time.Second}
		if change != nil {
			change(&c.RateLimit)
		}
	}
}

// Two gateways, each with its own Redis client, share one budget per
// client: the second cannot double it.
func TestBudgetSharedByReplicas(t *testing.T) {
	t.Parallel()
	url, prefix := testkit.RedisURL(t), testkit.RedisPrefix(t)
	small := limited(url, prefix, func(c *RateLimitConfig) { c.Default = Budget{"default", 10, time.Hour} })
	a := newGateway(t, small)
	b := a
	b.client.BaseURL = newGatewayServer(t, a.issuer, a.upstream, small)
	ro := a.issuer.ReadOnly(t)
	var ok, refused int
	for i := range 16 {
		gw := []fixture{a, b}[i%2]
		r := gw.client.Do(t, "GET", "/people", ro, nil)
		if got := r.Header.Get("RateLimit-Policy"); got != `"default";q=10;w=3600` {
			t.Errorf("call %d: RateLimit-Policy %q", i, got)
		}
		switch r.Status {
		case 200:
			ok++
			if want := `"default";r=` + strconv.Itoa(10-ok) + `;`; !strings.HasPrefix(r.Header.Get("RateLimit"), want) {
				t.Errorf("call %d: RateLimit %q, want it to start %s (the other replica's calls counted)", i, r.Header.Get("RateLimit"), want)
			}
		case 429:
			refused++
			if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 3600 {
				t.Errorf("429 with Retry-After %q", r.Header.Get("Retry-After"))
			}
			if p := r.JSON(); p["type"] != httpx.ProblemTypePrefix+"rate-limited" || p["status"] != float64(429) {
				t.Errorf("429 body %s", r.Raw)
			}
			if !strings.HasPrefix(r.Header.Get("RateLimit"), `"default";r=0;t=`) {
				t.Errorf("429 with RateLimit %q", r.Header.Get("RateLimit"))
			}
		default:
			t.Fatalf("call %d: %d %s", i, r.Status, r.Raw)
		}
	}
	if ok != 10 || refused != 6 {
		t.Errorf("%d calls let through and %d refused by two replicas, want the one budget of 10 and 6", ok, refused)
	}
	// Another client has a budget of its own.
	testkit.Expect(t, b.client.Do(t, "GET", "/people", a.issuer.ReadWrite(t), nil), 200)
}

// A busy client is charged in batches (leases): two replicas still never
// let through more than the budget, and lose little of it. The leases run
// on a clock the test moves a millisecond a call, as a busy client's calls
// come, so that a slow machine cannot lapse them; the budget in Redis runs
// on the wall's clock, and what it refilled meanwhile (a request every
// window/quota) may be served on top.
func TestBatchedChargesKeepTheSharedBudget(t *testing.T) {
	t.Parallel()
	url, prefix := testkit.RedisURL(t), testkit.RedisPrefix(t)
	const quota, window = 300, time.Hour
	budget := limited(url, prefix, func(c *RateLimitConfig) { c.Default = Budget{"default", quota, window} })
	clock := newLeaseClock()
	a := newGateway(t, budget, clock.drive)
	b := a
	b.client.BaseURL = newGatewayServer(t, a.issuer, a.upstream, budget, clock.drive)
	ro := a.issuer.ReadOnly(t)
	began := time.Now()
	testkit.Expect(t, b.client.Do(t, "GET", "/people", ro, nil), 200) // both replicas have verified the token
	served := 1
	for i := range quota + 60 {
		clock.advance(time.Millisecond)
		if r := []fixture{a, b}[i%2].client.Do(t, "GET", "/people", ro, nil); r.Status == 200 {
			served++
		} else if r.Status != 429 {
			t.Fatalf("call %d: %d", i, r.Status)
		}
	}
	refilled := int(time.Since(began) / (window / quota))
	if before := a.upstream.count(); served > quota+refilled || served < quota-2*(leaseSize-1) {
		t.Errorf("%d of %d calls served (%d reached the service) with a budget of %d (%d refilled meanwhile): want at most the budget, and at most %d lost to batches",
			served, quota+60, before, quota, refilled, 2*(leaseSize-1))
	}
	if calls := a.gateway.limiter.calls.Load(); calls > int64(served)/2 {
		t.Errorf("%d round trips to Redis for %d calls served: the busy client was not charged in batches", calls, served)
	}
}

// leaseClock is the leases' clock of the gateways of a test, which the
// test moves.
type leaseClock struct{ at atomic.Int64 }

func newLeaseClock() *leaseClock {
	c := &leaseClock{}
	c.at.Store(time.Now().UnixNano())
	return c
}

func (c *leaseClock) now() time.Time          { return time.Unix(0, c.at.Load()) }
func (c *leaseClock) advance(d time.Duration) { c.at.Add(int64(d)) }
func (c *leaseClock) drive(g *Gateway)        { g.limiter.now = c.now }

// A busy client's headers tell the truth across leases that lapse: what
// was left of a lapsed lease is not counted again, so the remaining
// requests r a client is told never grow while it keeps calling (the
// budget refills by one request every 3.6 s here, so at most once).
func TestRemainingAcrossLapsedLeases(t *testing.T) {
	t.Parallel()
	url, prefix := testkit.RedisURL(t), testkit.RedisPrefix(t)
	const quota = 1000
	a := newGateway(t, limited(url, prefix, func(c *RateLimitConfig) { c.Default = Budget{"default", quota, time.Hour} }))
	ro := a.issuer.ReadOnly(t)
	last, grew := quota, 0
	for round := range 6 {
		for call := range 3 { // a burst: its later calls are charged in a batch
			r := testkit.Expect(t, a.client.Do(t, "GET", "/people", ro, nil), 200)
			var remaining int
			if _, err := fmt.Sscanf(strings.TrimPrefix(r.Header.Get("RateLimit"), `"default";`), "r=%d", &remaining); err != nil {
				t.Fatalf("RateLimit %q: %v", r.Header.Get("RateLimit"), err)
			}
			if remaining > last {
				if grew++; grew > 1 || remaining > last+1 {
					t.Fatalf("round %d, call %d: r=%d after r=%d: the client is told of requests it does not have", round, call, remaining, last)
				}
			}
			last = remaining
		}
		time.Sleep(2 * leaseWindow) // the lease lapses with most of it unused
	}
}

// newGatewayServer starts another gateway (a replica) before the same
// issuer and upstream; it returns its URL.
func newGatewayServer(t *testing.T, issuer *testkit.Issuer, up *upstream, mutate func(*Config), prepare ...func(*Gateway)) string {
	t.Helper()
	parties := up.URL
	cfg := Config{OIDC: auth.Config{Issuer: issuer.URL, Audience: issuer.Audience, Leeway: testkit.Leeway}, Upstreams: map[string]*string{"parties": &parties}}
	mutate(&cfg)
	_, url := start(t, cfg, prepare...)
	return url
}

func mustKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestEveryAuthenticatedAnswerCarriesTheHeaders(t *testing.T) {
	t.Parallel()
	f := newGateway(t, limited(testkit.RedisURL(t), testkit.RedisPrefix(t), func(c *RateLimitConfig) {
		c.Clients = Budgets{"importer": {"importer", 60000, time.Minute}}
	}))
	ro := f.issuer.ReadOnly(t)
	for _, tt := range []struct {
		name, method, path, token string
		status                    int
		policy                    string
	}{
		{"a read", "GET", "/people", ro, 200, `"default";q=6000;w=60`},
		{"a path nobody owns", "GET", "/nowhere", ro, 404, `"default";q=6000;w=60`},
		{"a scope missing", "DELETE", "/people/1", ro, 403, `"default";q=6000;w=60`},
		{"a client with its own budget", "GET", "/people", f.issuer.Token(t, "importer", auth.ScopeRead), 200, `"importer";q=60000;w=60`},
		{"no token", "GET", "/people", "", 401, ""},
		{"a public path", "GET", "/healthz", ro, 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := testkit.Expect(t, f.client.Do(t, tt.method, tt.path, tt.token, nil), tt.status)
			if got := r.Header.Get("RateLimit-Policy"); got != tt.policy {
				t.Errorf("RateLimit-Policy %q, want %q", got, tt.policy)
			}
			name, _, _ := strings.Cut(tt.policy, ";")
			got := r.Header.Get("RateLimit")
			if (tt.policy == "" && got != "") || (tt.policy != "" && !strings.HasPrefix(got, name+";r=")) {
				t.Errorf("RateLimit %q beside the policy %q", got, tt.policy)
			}
		})
	}
}

// countingVerifier counts the tokens whose signature was checked.
type countingVerifier struct {
	auth.TokenVerifier
	verified atomic.Int64
}

func (c *countingVerifier) Verify(ctx context.Context, raw string) (auth.Principal, error) {
	c.verified.Add(1)
	return c.TokenVerifier.Verify(ctx, raw)
}

// A flood of forged tokens from one address is refused once the address's
// budget is spent, without a signature checked for each; a token verified
// before goes on working from the same address, and public paths are not
// limited.
func TestInvalidTokensLimitedPerAddressBeforeVerification(t *testing.T) {
	t.Parallel()
	counter := &countingVerifier{}
	f := newGateway(t, func(c *Config) {
		limited(testkit.RedisURL(t), testkit.RedisPrefix(t), func(c *RateLimitConfig) {
			c.Unauthenticated = Budget{"unauthenticated", 5, time.Hour}
		})(c)
		c.wrapVerifier = func(v auth.TokenVerifier) auth.TokenVerifier { counter.TokenVerifier = v; return counter }
	})
	good := f.issuer.ReadOnly(t)
	testkit.Expect(t, f.client.Do(t, "GET", "/people", good, nil), 200) // verified, remembered
	verifiedBefore := counter.verified.Load()
	forged := testkit.SignWith(t, mustKey(t), "kid-1", f.issuer.Claims("intruder", auth.ScopeRead))
	for i := range 5 {
		token := []string{forged, "", "not.a.token"}[i%3]
		testkit.Expect(t, f.client.Do(t, "GET", "/people", token, nil), 401)
	}
	for range 20 {
		r := testkit.Expect(t, f.client.Do(t, "GET", "/people", forged, nil), 429)
		if r.Header.Get("Retry-After") == "" || !strings.HasPrefix(r.Header.Get("RateLimit-Policy"), `"unauthenticated";q=5;w=3600`) {
			t.Fatalf("429 headers %v", r.Header)
		}
	}
	testkit.Expect(t, f.client.Do(t, "GET", "/people", "", nil), 429)
	// The first five: the forged tokens (twice) and the garbage were
	// verified (and failed); the missing ones had nothing to verify. After
	// them, nothing.
	if n := counter.verified.Load() - verifiedBefore; n != 3 {
		t.Errorf("%d tokens verified, want 3: the 20 after the budget was spent must be refused before verification", n)
	}
	testkit.Expect(t, f.client.Do(t, "GET", "/people", good, nil), 200)
	testkit.Expect(t, f.client.Do(t, "GET", "/healthz", "", nil), 200)
	testkit.Expect(t, f.client.Do(t, "GET", "/openapi.json", "", nil), 200)
	if n := upstreamCalls(f); n != 2 {
		t.Errorf("%d calls reached the service, want the two with the good token", n)
	}
}

func upstreamCalls(f fixture) int { return f.upstream.count() }

// Redis killed or hung: the limit fails open to the replica's share of
// each budget. A client within its budget is let through (no call is
// refused because Redis is away), one that had spent its budget stays
// refused, the metrics count both, /readyz stays 200 and says so; once
// Redis is back, it keeps the budgets again.
func TestRedisDownFailsOpen(t *testing.T) {
	// Not parallel: it wants exact rises of fail-open counters that every
	// gateway in the process adds to under the same client label.
	redis := testkit.StartRedis(t, t.TempDir())
	f := newGateway(t, limited(redis.URL, "t:", func(c *RateLimitConfig) {
		c.Default = Budget{"default", 2, time.Hour}
		// A second, not the production 25 ms: on a loaded machine a live
		// Redis can take longer than 50 ms, and the limit then fails open
		// before the fault is made. A hung Redis still costs a request at
		// most this, and the backoff lets the others through at once.
		c.Timeout, c.Backoff = time.Second, 200*time.Millisecond
	}))
	ro := f.issuer.ReadOnly(t)
	testkit.Expect(t, f.client.Do(t, "GET", "/people", ro, nil), 200)
	testkit.Expect(t, f.client.Do(t, "GET", "/people", ro, nil), 200)
	testkit.Expect(t, f.client.Do(t, "GET", "/people", ro, nil), 429)

	for _, fault := range []struct {
		name         string
		start, later func() error
	}{
		{"killed", redis.Kill, func() error { return redis.Restart(context.Background()) }},
		{"hung", func() error { return redis.Signal(syscall.SIGSTOP) }, func() error { return redis.Signal(syscall.SIGCONT) }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			before := testutil.ToFloat64(failOpenTotal.WithLabelValues(budgetClient))
			refusedBefore := testutil.ToFloat64(localLimitedTotal.WithLabelValues(budgetClient))
			if err := fault.start(); err != nil {
				t.Fatal(err)
			}
			// A client Redis never saw has its whole share (the budget, one
			// replica): the limit fails open for it.
			fresh := f.issuer.Token(t, "fresh-"+fault.name, "registry:read")
			for i := range 3 {
				r := f.client.Do(t, "GET", "/people", fresh, nil)
				want := 200
				if i == 2 {
					want = 429
				}
				if r.Status != want {
					t.Fatalf("a new client's call %d with Redis %s: %d, want %d", i, fault.name, r.Status, want)
				}
				if r.Header.Get("RateLimit-Policy") != `"default";q=2;w=3600` || !strings.HasPrefix(r.Header.Get("RateLimit"), `"default";r=`) {
					t.Errorf("RateLimit-Policy %q, RateLimit %q: the headers say what the replica's share holds",
						r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"))
				}
			}
			// The client that spent its budget before Redis went away is
			// still refused: its share started where Redis left it.
			for range 2 {
				testkit.Expect(t, f.client.Do(t, "GET", "/people", ro, nil), 429)
			}
			if after := testutil.ToFloat64(failOpenTotal.WithLabelValues(budgetClient)); after-before != 5 {
				t.Errorf("gateway_ratelimit_fail_open_total rose by %v, want 5", after-before)
			}
			if after := testutil.ToFloat64(localLimitedTotal.WithLabelValues(budgetClient)); after-refusedBefore != 3 {
				t.Errorf("gateway_ratelimit_local_limited_total rose by %v, want 3", after-refusedBefore)
			}
			ready := f.client.Do(t, "GET", "/readyz", "", nil)
			if ready.Status != 200 || ready.JSON()["checks"].(map[string]any)["rate-limit"] != "unavailable" {
				t.Errorf("readyz = %d %s: Redis down must be reported, not take the gateway out", ready.Status, ready.Raw)
			}
			if err := fault.later(); err != nil {
				t.Fatal(err)
			}
			// Back: after the back-off Redis keeps the budget again (a
			// restarted Redis is empty, so it starts over: a new client
			// gets its two calls and is refused by Redis).
			deadline := time.Now().Add(30 * time.Second)
			back := f.issuer.Token(t, "back-"+fault.name, "registry:read")
			for {
				calls := redisCalls(f)
				r := f.client.Do(t, "GET", "/people", back, nil)
				if r.Status == 429 && redisCalls(f) > calls {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the limit was not kept in Redis again after Redis came back: %d", r.Status)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

func redisCalls(f fixture) int64 { return f.gateway.limiter.calls.Load() }

// pauseRedis holds every client's commands to redis for d (CLIENT PAUSE, as an
// overloaded machine makes Redis slow) and says when the pause began.
func pauseRedis(t *testing.T, redis *testkit.Redis, d time.Duration) time.Time {
	t.Helper()
	admin := goredis.NewClient(&goredis.Options{Addr: redis.Addr, Password: redis.Password})
	t.Cleanup(func() { _ = admin.Close() })
	if err := admin.Do(t.Context(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// Redis slower than rate-limit.timeout (paused by CLIENT PAUSE, as an
// overloaded machine makes it): a client over its budget is still
// refused, each replica keeping it to its share of what Redis last said
// was left, and a client within its budget still gets its share.
func TestSlowRedisKeepsClientsToTheirShare(t *testing.T) {
	t.Parallel()
	redis := testkit.StartRedis(t, t.TempDir())
	const quota, replicas = 10, 2
	f := newGateway(t, limited(redis.URL, "t:", func(c *RateLimitConfig) {
		c.Default = Budget{"default", quota, time.Hour}
		c.Replicas = replicas
		c.Timeout, c.Backoff = 200*time.Millisecond, 300*time.Millisecond
	}))
	abusive := f.issuer.Token(t, "abusive", "registry:read")
	for range 6 {
		testkit.Expect(t, f.client.Do(t, "GET", "/people", abusive, nil), 200)
	}
	// Redis says 4 are left: this replica's share is 2.
	const pause = 5 * time.Second
	pausedAt := pauseRedis(t, redis, pause)
	before := testutil.ToFloat64(failOpenTotal.WithLabelValues(budgetClient))
	served := 0
	for range 10 {
		if r := f.client.Do(t, "GET", "/people", abusive, nil); r.Status == 200 {
			served++
		} else if r.Status != 429 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	}
	if served != 2 {
		t.Errorf("Redis slow: %d of the over-budget client's 10 calls served, want its replica's share of the 4 left, 2", served)
	}
	polite := f.issuer.Token(t, "polite", "registry:read")
	served = 0
	for range 7 {
		if r := f.client.Do(t, "GET", "/people", polite, nil); r.Status == 200 {
			served++
		}
	}
	if served != quota/replicas {
		t.Errorf("Redis slow: %d of a new client's 7 calls served, want its replica's share of its budget, %d", served, quota/replicas)
	}
	if elapsed := time.Since(pausedAt); elapsed >= pause {
		t.Fatalf("the calls took %s, longer than Redis was paused: they did not measure a slow Redis", elapsed)
	}
	if testutil.ToFloat64(failOpenTotal.WithLabelValues(budgetClient)) == before {
		t.Error("gateway_ratelimit_fail_open_total did not count the calls Redis did not check")
	}
}

// What a replica's share served while Redis was away is charged to Redis
// when it answers again: a client does not get a budget refilled while
// its calls went elsewhere (an overloaded Redis that came and went let a
// client at ten times its budget through at seven times it).
func TestRedisBackChargesWhatTheShareServed(t *testing.T) {
	t.Parallel()
	redis := testkit.StartRedis(t, t.TempDir())
	const quota, spentAway = 10, 6
	f := newGateway(t, limited(redis.URL, "t:", func(c *RateLimitConfig) {
		c.Default = Budget{"default", quota, time.Hour}
		c.Timeout, c.Backoff = 200*time.Millisecond, 300*time.Millisecond
	}))
	client := f.issuer.Token(t, "away", "registry:read")
	const pause = 2 * time.Second
	pausedAt := pauseRedis(t, redis, pause)
	asked := redisCalls(f)
	for range spentAway {
		testkit.Expect(t, f.client.Do(t, "GET", "/people", client, nil), 200)
	}
	// Each ask that timed out may still be counted by Redis once it
	// catches up: the client then pays for it twice.
	timedOut := int(redisCalls(f) - asked)
	if time.Since(pausedAt) >= pause {
		t.Fatalf("the calls took %s, longer than Redis was paused: they did not meet a slow Redis", time.Since(pausedAt))
	}
	time.Sleep(time.Until(pausedAt.Add(pause + 2*300*time.Millisecond)))
	served := 0
	for range quota {
		if r := f.client.Do(t, "GET", "/people", client, nil); r.Status == 200 {
			served++
		} else if r.Status != 429 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
	}
	if left := quota - spentAway; served > left || served < left-timedOut {
		t.Errorf("Redis back: %d of the client's next %d calls served, want what its budget had left after the %d served while Redis was away, %d (%d if the %d asks that timed out were counted too)",
			served, quota, spentAway, left, left-timedOut, timedOut)
	}
}

func TestRateLimitSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		cfg     RateLimitConfig
		wantErr string
	}{
		{"on without Redis", RateLimitConfig{Enabled: true, Default: DefaultBudget, Unauthenticated: DefaultUnauthenticatedBudget, Timeout: time.Millisecond}, "redis.url"},
		{"off without Redis", RateLimitConfig{}, ""},
		{"no timeout", RateLimitConfig{Enabled: true, Redis: cache.Connection{URL: "redis://127.0.0.1:1"}, Default: DefaultBudget, Unauthenticated: DefaultUnauthenticatedBudget, Probes: DefaultProbesBudget, Items: DefaultItemBudget}, "timeout"},
		{"on", RateLimitConfig{Enabled: true, Redis: cache.Connection{URL: "redis://127.0.0.1:1"}, Default: DefaultBudget, Unauthenticated: DefaultUnauthenticatedBudget, Probes: DefaultProbesBudget, Items: DefaultItemBudget, Timeout: time.Millisecond}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want an error saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestBatchItems(t *testing.T) {
	t.Parallel()
	items := func(n int, item string) string {
		return `{"items":[` + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + `]}`
	}
	tests := []struct {
		name, body string
		want       int
	}{
		{"one", items(1, `{}`), 1},
		{"a thousand", items(1000, `{"asset_id":"x"}`), 1000},
		{"items with nested arrays and strings that look like items", items(3, `{"data":{"items":[1,2,3]},"note":"],["}`), 3},
		{"other members first", `{"note":{"items":[1,2]},"items":[{},{}]}`, 2},
		{"whitespace", " {\n \"items\" : [ {} , {} ] } ", 2},
		{"over the largest batch: the service refuses it whole", items(1001, `{}`), 1},
		{"no items", `{"items":[]}`, 1},
		{"items not an array", `{"items":{}}`, 1},
		{"no items member", `{"actions":[{},{}]}`, 1},
		{"not an object", `[{},{}]`, 1},
		{"not JSON", `{"items":[{},`, 1},
		{"empty", ``, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := batchItems([]byte(tt.body)); got != tt.want {
				t.Errorf("= %d, want %d", got, tt.want)
			}
		})
	}
}

// The gateway's bound on a batch is the services' own.
func TestMaxBatchItemsIsTheServices(t *testing.T) {
	t.Parallel()
	if maxBatchItems != endpoints.MaxBatch {
		t.Errorf("maxBatchItems = %d, endpoints.MaxBatch = %d", maxBatchItems, endpoints.MaxBatch)
	}
}

// A batch costs one request of its client's budget and its items of the
// client's item budget; over the item budget it is refused (429) and not
// passed on, while the client's other calls go on. Both budgets are in the
// answer's headers, the request budget first.
func TestBatchItemsDrawOnTheirOwnBudget(t *testing.T) {
	t.Parallel()
	f := newGateway(t, func(c *Config) {
		limited(testkit.RedisURL(t), testkit.RedisPrefix(t), func(c *RateLimitConfig) {
			c.Default = Budget{"default", 100, time.Hour}
			c.Items = Budget{"items", 1000, time.Hour}
			c.ClientItems = Budgets{"importer": {"importer", 3000, time.Hour}}
		})(c)
		c.Upstreams["actions"], c.Upstreams["assets"] = c.Upstreams["parties"], c.Upstreams["parties"]
	})
	rw := f.issuer.ReadWrite(t)
	batch := func(n int) string {
		return `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"n":1},`, n), ",") + `]}`
	}
	post := func(path, token, body string) testkit.Response {
		return f.client.Do(t, "POST", path, token, body, "Content-Type", "application/json")
	}

	r := testkit.Expect(t, post("/actions/batch", rw, batch(600)), 200)
	if got := r.Header.Values("RateLimit-Policy"); !slices.Equal(got, []string{`"default";q=100;w=3600`, `"items";q=1000;w=3600`}) {
		t.Errorf("RateLimit-Policy %q, want the request budget, then the item budget", got)
	}
	if got := r.Header.Values("RateLimit"); len(got) != 2 || !strings.HasPrefix(got[0], `"default";r=99;`) || !strings.HasPrefix(got[1], `"items";r=400;`) {
		t.Errorf("RateLimit %q, want one request and 600 items spent", got)
	}
	if body := f.upstream.lastBody(t); body != batch(600) {
		t.Errorf("the service got %d bytes, not the batch", len(body))
	}

	forwarded := f.upstream.count()
	r = testkit.Expect(t, post("/assets/batch", rw, batch(600)), 429)
	if got := r.Header.Values("RateLimit"); len(got) != 2 || !strings.HasPrefix(got[1], `"items";r=400;`) {
		t.Errorf("429 with RateLimit %q, want the items left", got)
	}
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("429 with Retry-After %q", r.Header.Get("Retry-After"))
	}
	if p := r.JSON(); p["type"] != httpx.ProblemTypePrefix+"rate-limited" || !strings.Contains(p["detail"].(string), "600 items") {
		t.Errorf("429 body %s", r.Raw)
	}
	if f.upstream.count() != forwarded {
		t.Error("a batch over the item budget reached the service")
	}

	testkit.Expect(t, post("/actions/action_documents/batch", rw, batch(400)), 200)
	testkit.Expect(t, f.client.Do(t, "GET", "/people", rw, nil), 200) // not a batch: no items
	testkit.Expect(t, post("/people", rw, `{"first_name":"A"}`), 200)
	r = testkit.Expect(t, post("/actions/batch", rw, batch(1)), 429)
	if got := r.Header.Values("RateLimit"); len(got) != 2 || !strings.HasPrefix(got[0], `"default";r=94;`) {
		t.Errorf("RateLimit %q: want every call, the refused batches too, to have cost one request", got)
	}

	// A chunked batch is counted all the same, and reaches the service whole.
	importer := f.issuer.Token(t, "importer", auth.ScopeRead, auth.ScopeWrite)
	req, err := http.NewRequest("POST", f.client.BaseURL+"/actions/batch", io.MultiReader(strings.NewReader(batch(1000)), strings.NewReader("")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+importer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || req.ContentLength != 0 {
		t.Fatalf("a chunked batch: %d (sent with length %d)", resp.StatusCode, req.ContentLength)
	}
	if got := resp.Header.Values("RateLimit"); len(got) != 2 || !strings.HasPrefix(got[1], `"importer:items";r=2000;`) {
		t.Errorf("RateLimit %q, want the importer's own item budget with 1000 spent", got)
	}
	if body := f.upstream.lastBody(t); body != batch(1000) {
		t.Errorf("the service got %d bytes of the chunked batch, want %d", len(body), len(batch(1000)))
	}
}

// An answer that declares a cost (a passport, by its size) is charged it:
// the request and the rest when its header goes out, as much as the
// budget holds, and the declaration does not reach the client. Only the
// resources the catalog names charged by size may declare one: from any
// other the declaration is stripped and costs nothing.
func TestDeclaredCostIsCharged(t *testing.T) {
	t.Parallel()
	f := newGateway(t, func(c *Config) {
		limited(testkit.RedisURL(t), testkit.RedisPrefix(t), func(c *RateLimitConfig) {
			c.Default = Budget{"default", 100, time.Hour}
		})(c)
		events := *c.Upstreams["parties"] // the stand-in answers for the events service too
		c.Upstreams["events"] = &events
	})
	ro := f.issuer.ReadOnly(t)
	costing := func(path, cost string) testkit.Response {
		return f.client.Do(t, "GET", path, ro, nil, "Test-Cost", cost)
	}
	const passport = "/assets/0194c1a2-6f1e-7c3a-9d4b-5a6b7c8d9e0f/passport"
	r := testkit.Expect(t, costing(passport, "30"), 200)
	if r.Header.Get(httpx.CostHeader) != "" {
		t.Errorf("the client got the service's %s: %q", httpx.CostHeader, r.Header.Get(httpx.CostHeader))
	}
	if got := r.Header.Get("RateLimit"); !strings.HasPrefix(got, `"default";r=70;`) {
		t.Errorf("RateLimit %q after an answer of cost 30, want 70 left", got)
	}
	testkit.Expect(t, costing(passport, "1"), 200)
	r = testkit.Expect(t, f.client.Do(t, "GET", "/people", ro, nil), 200)
	if got := r.Header.Get("RateLimit"); !strings.HasPrefix(got, `"default";r=68;`) {
		t.Errorf("RateLimit %q, want a cost of 1 and no cost to be charged one request each", got)
	}
	// A resource not charged by size: its declaration is stripped, and the
	// call costs one request.
	r = testkit.Expect(t, costing("/people", "30"), 200)
	if r.Header.Get(httpx.CostHeader) != "" {
		t.Errorf("the client got the %s of a resource not charged by size: %q", httpx.CostHeader, r.Header.Get(httpx.CostHeader))
	}
	r = testkit.Expect(t, f.client.Do(t, "GET", "/people", ro, nil), 200)
	if got := r.Header.Get("RateLimit"); !strings.HasPrefix(got, `"default";r=66;`) {
		t.Errorf("RateLimit %q, want the declaration of a resource not charged by size to cost nothing", got)
	}
	// More than is left: the answer goes out, and takes what is left.
	testkit.Expect(t, costing(passport, "500"), 200)
	testkit.Expect(t, f.client.Do(t, "GET", "/people", ro, nil), 429)
}

// An answer without a token that declares a cost (a passport through its
// link) is charged it to the caller's address, and the declaration does
// not reach the caller; one of a resource not charged by size (the log's
// keys) costs its one call.
func TestDeclaredCostWithoutTokenIsChargedToTheAddress(t *testing.T) {
	t.Parallel()
	events := newUpstream(t)
	limit := limited(testkit.RedisURL(t), testkit.RedisPrefix(t), func(c *RateLimitConfig) {
		c.Unauthenticated = Budget{"unauthenticated", 20, time.Hour}
	})
	f := newGateway(t, func(c *Config) {
		limit(c)
		u := events.URL
		c.Upstreams["events"] = &u
	})
	r := testkit.Expect(t, f.client.Do(t, "GET", "/log/keys", "", nil, "Test-Cost", "20"), 200)
	if r.Header.Get(httpx.CostHeader) != "" {
		t.Errorf("the caller got the service's %s: %q", httpx.CostHeader, r.Header.Get(httpx.CostHeader))
	}
	r = testkit.Expect(t, f.client.Do(t, "GET", "/passports/capability-token", "", nil, "Test-Cost", "19"), 200)
	if r.Header.Get(httpx.CostHeader) != "" {
		t.Errorf("the caller got the service's %s: %q", httpx.CostHeader, r.Header.Get(httpx.CostHeader))
	}
	testkit.Expect(t, f.client.Do(t, "GET", "/log/keys", "", nil), 429)
}

func TestItemBudgetSettings(t *testing.T) {
	t.Parallel()
	base := RateLimitConfig{Enabled: true, Redis: cache.Connection{URL: "redis://127.0.0.1:1"}, Default: DefaultBudget,
		Unauthenticated: DefaultUnauthenticatedBudget, Probes: DefaultProbesBudget, Items: DefaultItemBudget, Timeout: time.Millisecond}
	for _, tt := range []struct {
		name    string
		change  func(*RateLimitConfig)
		wantErr string
	}{
		{"the default", func(*RateLimitConfig) {}, ""},
		{"exactly the largest batch", func(c *RateLimitConfig) { c.Items = Budget{"items", 1000, time.Minute} }, ""},
		{"under the largest batch", func(c *RateLimitConfig) { c.Items = Budget{"items", 999, time.Minute} }, "rate-limit.items"},
		{"a client's under the largest batch", func(c *RateLimitConfig) {
			c.ClientItems = Budgets{"importer": {"importer", 10, time.Second}}
		}, `rate-limit.client-items of "importer"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.change(&cfg)
			err := cfg.Validate()
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want an error saying %q", err, tt.wantErr)
			}
		})
	}
}
