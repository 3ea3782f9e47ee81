package auth_test

import (
	"errors"
	"flag"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/tools/testkit"
)

// newVerifier is a test issuer and a verifier of its tokens with the
// default settings, until the test ends.
func newVerifier(t testing.TB) (*testkit.Issuer, *auth.Verifier) {
	t.Helper()
	iss := testkit.NewIssuer(t, audience)
	return iss, following(t, auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway})
}

// following is a verifier of cfg, following its issuer's token validity
// list (if it has one) until the test ends.
func following(t testing.TB, cfg auth.Config) *auth.Verifier {
	t.Helper()
	v, err := auth.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}

// followingUnpolled is a verifier of iss that reads the token validity
// list only when a test makes it: its background read comes after a
// minute, and the list it read stays usable for two.
func followingUnpolled(t *testing.T, iss *testkit.Issuer) *auth.Verifier {
	t.Helper()
	cfg := auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway}
	cfg.TokenValidityInterval, cfg.TokenValidityMaxAge = time.Minute, 2*time.Minute
	return following(t, cfg)
}

// With an issuer that publishes a token validity list, a token stands only
// while its client is listed and its generation is at least the listed
// one.
func TestTokenValidityList(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	iss.PublishValidity(map[string]int64{"client-1": 5, "client-2": 1})
	v := following(t, auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway})
	token := func(sub string, generation int64) string {
		return iss.Sign(t, testkit.Generation(iss.Claims(sub, auth.ScopeRead), generation))
	}
	tests := []struct {
		name  string
		token string
		why   string // "" when it stands
	}{
		{"the listed generation", token("client-1", 5), ""},
		{"a later generation", token("client-1", 6), ""},
		{"an earlier generation", token("client-1", 4), "its client's secret or scopes changed after it was issued"},
		{"a client not listed", token("client-3", 9), "its client no longer exists"},
		{"no generation", iss.Token(t, "client-2", auth.ScopeRead), "carries no credential_generation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(t.Context(), tt.token)
			if tt.why == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("err = %v, want invalid token saying %q", err, tt.why)
			}
		})
	}
}

// A token verified and remembered is refused once the list, read again,
// voids it: the verified-token cache answers nothing the list voids, and
// the token is not remembered again.
func TestRevokedTokenLeavesTheCache(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	iss.PublishValidity(map[string]int64{"client-1": 1, "client-2": 1})
	v := following(t, auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway})
	first := iss.Sign(t, testkit.Generation(iss.Claims("client-1", auth.ScopeRead), 1))
	other := iss.Sign(t, testkit.Generation(iss.Claims("client-2", auth.ScopeRead), 1))
	for _, tok := range []string{first, other} {
		if _, err := v.Verify(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.Remembered(t.Context(), tok); !ok {
			t.Fatal("a verified token is not remembered")
		}
	}

	iss.PublishValidity(map[string]int64{"client-1": 2, "client-2": 1}) // client-1's secret rotated, say
	if err := auth.ReadValidity(v); err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Remembered(t.Context(), first); ok {
		t.Error("a revoked token is answered from memory")
	}
	if _, err := v.Verify(t.Context(), first); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("the revoked token: err = %v, want invalid token", err)
	}
	if _, ok := v.Remembered(t.Context(), other); !ok {
		t.Error("another client's token is no longer remembered")
	}
	second := iss.Sign(t, testkit.Generation(iss.Claims("client-1", auth.ScopeRead), 2))
	if _, err := v.Verify(t.Context(), second); err != nil {
		t.Errorf("a token of the new generation: %v", err)
	}

	iss.PublishValidity(map[string]int64{"client-2": 1}) // client-1 deleted
	if err := auth.ReadValidity(v); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), second); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("a token of a deleted client: err = %v, want invalid token", err)
	}
}

// A client created after the verifier last read the list is not in it
// yet. Generations only grow, so a token of a generation the list has not
// reached makes the verifier read the list again at once: a new
// integration's first call is not refused. Each generation costs one read
// at most: the tokens of a deleted client, however many, cost none.
func TestTokenOfANewClientReadsTheListEarly(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	iss.PublishValidity(map[string]int64{"client-1": 4})
	v := followingUnpolled(t, iss)
	// A token issued an hour ago, before any list the verifier read: a
	// deleted client's (the issuer issues no new ones) or a forged one.
	token := func(sub string, generation int64, old bool) string {
		claims := testkit.Generation(iss.Claims(sub, auth.ScopeRead), generation)
		if old {
			claims["iat"] = time.Now().Add(-time.Hour).Unix()
		}
		return iss.Sign(t, claims)
	}
	if _, err := v.Verify(t.Context(), token("client-1", 4, false)); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name       string
		publish    map[string]int64 // the list from now on, when set
		sub        string
		generation int64
		old        bool
		stands     bool
		reads      int
	}{
		{"a deleted client's token of a generation reached", nil, "gone", 3, true, false, 0},
		{"the first token of a client newer than the list", map[string]int64{"client-1": 4, "new-client": 7}, "new-client", 7, false, true, 1},
		{"a deleted client's token, the generation reached early", nil, "gone", 6, true, false, 0},
		{"a token of a generation not reached, of no client", nil, "forged-or-deleted", 9, true, false, 1},
		{"the same generation again", nil, "forged-or-deleted", 9, true, false, 0},
		// Generations come from one sequence but commit in any order: a
		// client of generation 8 committed after the list that holds 9
		// was read. Its token, issued after that read, reads again.
		{"a client whose generation committed after a higher one", map[string]int64{"client-1": 4, "new-client": 7, "late-client": 8},
			"late-client", 8, false, true, 1},
	}
	for _, s := range steps {
		if s.publish != nil {
			iss.PublishValidity(s.publish)
		}
		before := iss.ValidityReads()
		_, err := v.Verify(t.Context(), token(s.sub, s.generation, s.old))
		if (err == nil) != s.stands || err != nil && !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("%s: %v, want it to stand: %v", s.name, err, s.stands)
		}
		if got := iss.ValidityReads() - before; got != s.reads {
			t.Errorf("%s: %d reads of the list, want %d", s.name, got, s.reads)
		}
	}
}

// A token newer than the list while the list cannot be read is neither
// good nor revoked as far as the verifier knows: it is refused with
// ErrUnavailable (a 503: try again), not as revoked, and stands once the
// list, read again, names its client.
func TestTokenOfANewClientWhileTheListCannotBeRead(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	iss.PublishValidity(map[string]int64{"client-1": 4})
	v := followingUnpolled(t, iss)
	if _, err := v.Verify(t.Context(), iss.Sign(t, testkit.Generation(iss.Claims("client-1", auth.ScopeRead), 4))); err != nil {
		t.Fatal(err) // the keys and the list read once
	}
	token := iss.Sign(t, testkit.Generation(iss.Claims("new-client", auth.ScopeRead), 7))

	iss.PublishValidity(map[string]int64{"client-1": 4, "new-client": 7})
	iss.ValidityDown(true)
	if _, err := v.Verify(t.Context(), token); !errors.Is(err, auth.ErrUnavailable) || errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("the list unreadable: err = %v, want unavailable, not invalid", err)
	}
	iss.ValidityDown(false)
	if _, err := v.Verify(t.Context(), token); err != nil {
		t.Errorf("the list readable again: %v, want the token to stand", err)
	}
}

// While the list cannot be read, the last one is used until it is
// oidc.token-validity-max-age old; then every token is refused with
// ErrUnavailable (a 503, not a 401: the token may be good) and the
// readiness check fails with a reason, until the list is read again.
func TestTokenValidityListUnreachable(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	iss.PublishValidity(map[string]int64{"client-1": 1})
	v := followingUnpolled(t, iss)
	start := time.Now()
	var now atomic.Pointer[time.Time]
	now.Store(&start)
	auth.SetClock(v, func() time.Time { return *now.Load() })
	claims := testkit.Generation(iss.Claims("client-1", auth.ScopeRead), 1)
	claims["exp"] = start.Add(5 * time.Minute).Unix()
	token := iss.Sign(t, claims)
	if _, err := v.Verify(t.Context(), token); err != nil {
		t.Fatal(err)
	}

	iss.ValidityDown(true)
	if err := auth.ReadValidity(v); err == nil {
		t.Fatal("a list that answers 503 was read")
	}
	at := func(d time.Duration) { tm := start.Add(d); now.Store(&tm) }
	at(2 * time.Minute)
	if _, err := v.Verify(t.Context(), token); err != nil {
		t.Errorf("a list max-age old: %v, want the token to stand", err)
	}
	at(2*time.Minute + time.Second)
	if _, ok := v.Remembered(t.Context(), token); ok {
		t.Error("a stale list lets the cache answer")
	}
	if _, err := v.Verify(t.Context(), token); !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("a list older than max-age: err = %v, want unavailable", err)
	}
	err := v.Ready(t.Context())
	var reason interface{ ReadinessReason() string }
	if !errors.As(err, &reason) || !strings.Contains(reason.ReadinessReason(), "token validity list") {
		t.Errorf("Ready = %v, want a reason naming the token validity list", err)
	}

	iss.ValidityDown(false)
	if err := auth.ReadValidity(v); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), token); err != nil {
		t.Errorf("the list read again: %v", err)
	}
	if err := v.Ready(t.Context()); err != nil {
		t.Errorf("Ready with the list read again: %v", err)
	}
}

// No token is trusted before the list has been read once: a process that
// starts while the list cannot be read answers 503.
func TestTokenValidityListNeededFirst(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	iss.PublishValidity(map[string]int64{"client-1": 1})
	iss.ValidityDown(true)
	v := following(t, auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway})
	token := iss.Sign(t, testkit.Generation(iss.Claims("client-1", auth.ScopeRead), 1))
	if _, err := v.Verify(t.Context(), token); !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("err = %v, want unavailable", err)
	}
}

// An issuer without a list (any other issuer) is trusted as before: its
// tokens need no generation and stand until they expire; the list can
// also be named explicitly, when discovery is skipped.
func TestTokenValiditySources(t *testing.T) {
	plain := testkit.NewIssuer(t, audience)
	v := following(t, auth.Config{Issuer: plain.URL, Audience: plain.Audience, Leeway: testkit.Leeway})
	if _, err := v.Verify(t.Context(), plain.Token(t, "anyone", auth.ScopeRead)); err != nil {
		t.Errorf("an issuer without a list: %v", err)
	}

	listed := testkit.NewIssuer(t, audience)
	listed.PublishValidity(map[string]int64{"client-1": 3})
	cfg := auth.Config{Issuer: listed.URL, Audience: listed.Audience, Leeway: testkit.Leeway}
	cfg.JWKSURL, cfg.TokenValidityURL = listed.URL+"/jwks.json", listed.URL+"/token-validity"
	v = following(t, cfg)
	old := listed.Sign(t, testkit.Generation(listed.Claims("client-1", auth.ScopeRead), 2))
	if _, err := v.Verify(t.Context(), old); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("oidc.token-validity-url without discovery: err = %v, want the list to void the token", err)
	}
}

func TestTokenValidityConfig(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	for _, tt := range []struct {
		name             string
		interval, maxAge time.Duration
		ok               bool
	}{
		{"defaults", 0, 0, true},
		{"max-age twice the interval", time.Second, 2 * time.Second, true},
		{"max-age under twice the interval", time.Second, 1500 * time.Millisecond, false},
		{"a negative interval", -time.Second, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway}
			cfg.TokenValidityInterval, cfg.TokenValidityMaxAge = tt.interval, tt.maxAge
			v, err := auth.NewVerifier(cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
			if v != nil {
				v.Close()
			}
		})
	}
}

// With the defaults, an issuer out of reach for 15 minutes costs no call:
// the last list is kept (for as long as the longest token lives), so a
// token valid when the outage began stands until it expires, a token
// revoked before the outage stays refused, and only a token of a client
// newer than the list is a 503.
func TestTokenValidityListOutlivesAnIssuerOutage(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	iss.PublishValidity(map[string]int64{"client-1": 5})
	v := following(t, auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway})
	start := time.Now()
	var now atomic.Pointer[time.Time]
	now.Store(&start)
	auth.SetClock(v, func() time.Time { return *now.Load() })
	sign := func(generation int64) string {
		claims := testkit.Generation(iss.Claims("client-1", auth.ScopeRead), generation)
		claims["exp"] = start.Add(20 * time.Minute).Unix()
		return iss.Sign(t, claims)
	}
	valid, revoked := sign(5), sign(4)
	if _, err := v.Verify(t.Context(), valid); err != nil {
		t.Fatal(err)
	}

	iss.ValidityDown(true)
	if err := auth.ReadValidity(v); err == nil {
		t.Fatal("a list that answers 503 was read")
	}
	later := start.Add(15 * time.Minute)
	now.Store(&later)
	if _, err := v.Verify(t.Context(), valid); err != nil {
		t.Errorf("a valid token 15 minutes into the outage: %v, want it to stand", err)
	}
	if _, err := v.Verify(t.Context(), revoked); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("a token revoked before the outage: %v, want it refused", err)
	}
	newClient := testkit.Generation(iss.Claims("client-2", auth.ScopeRead), 6)
	newClient["iat"], newClient["nbf"], newClient["exp"] = later.Unix(), later.Unix(), later.Add(15*time.Minute).Unix()
	if _, err := v.Verify(t.Context(), iss.Sign(t, newClient)); !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("a token of a client newer than the list, during the outage: %v, want a 503", err)
	}
	if err := v.Ready(t.Context()); err != nil {
		t.Errorf("Ready 15 minutes into the outage: %v", err)
	}
}

// An issuer serving its list from memory says in Age how long ago it read
// it from its database; the verifier counts the list's age from then, and
// keeps a list read later over one read earlier.
func TestTokenValidityListAgeComesFromTheIssuer(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	iss.PublishValidity(map[string]int64{"client-1": 1})
	v := followingUnpolled(t, iss) // max-age two minutes
	token := iss.Sign(t, testkit.Generation(iss.Claims("client-1", auth.ScopeRead), 1))
	if _, err := v.Verify(t.Context(), token); err != nil {
		t.Fatal(err)
	}
	iss.PublishValidity(map[string]int64{}) // deleted, but served by a replica that read it long ago
	iss.ValidityAge(600)
	if err := auth.ReadValidity(v); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), token); err != nil {
		t.Errorf("an older list replaced a newer one: %v", err)
	}
	iss.ValidityAge(0)
	if err := auth.ReadValidity(v); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), token); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("the newer list: %v, want the token refused", err)
	}

	stale := testkit.NewIssuer(t, audience)
	stale.PublishValidity(map[string]int64{"client-1": 1})
	stale.ValidityAge(300)
	v = followingUnpolled(t, stale)
	if _, err := v.Verify(t.Context(), stale.Sign(t, testkit.Generation(stale.Claims("client-1", auth.ScopeRead), 1))); !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("a list the issuer read five minutes ago, over a max-age of two: %v, want a 503", err)
	}
}

// An outage of the issuer must stop no call whose token is still valid:
// by default the last validity list read is trusted for as long as the
// longest token lives. The fault suite's outage row (TestIdentityProvider
// Outage) holds the whole stack to it for a minute inside make test and a
// quarter of an hour under make faults; this holds the defaults every
// process starts with, which once refused every call a minute into an
// outage.
func TestDefaultValidityListOutlivesEveryToken(t *testing.T) {
	var cfg auth.Config
	fs := flag.NewFlagSet("verifier", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.TokenValidityMaxAge < cfg.MaxTokenLifetime {
		t.Errorf("oidc.token-validity-max-age %s by default, shorter than oidc.max-token-lifetime %s: an outage of the issuer longer than it refuses valid tokens",
			cfg.TokenValidityMaxAge, cfg.MaxTokenLifetime)
	}
	if cfg.TokenValidityMaxAge < 2*cfg.TokenValidityInterval {
		t.Errorf("oidc.token-validity-max-age %s under twice oidc.token-validity-interval %s", cfg.TokenValidityMaxAge, cfg.TokenValidityInterval)
	}
}
