package auth_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/tools/testkit"
)

// A verified token is remembered until its exp and no longer: after exp it
// is verified in full again (and the leeway rule decides, as without the
// cache), and it is not remembered again.
// clocked is a verifier of iss on a clock the test sets, and a token of
// client-1 that expires a minute (less a fraction) after the clock's start.
func clocked(t *testing.T, iss *testkit.Issuer) (v *auth.Verifier, now *atomic.Pointer[time.Time], start, exp time.Time, token string) {
	t.Helper()
	v = following(t, auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway})
	start = time.Now()
	now = &atomic.Pointer[time.Time]{}
	now.Store(&start)
	auth.SetClock(v, func() time.Time { return *now.Load() })
	claims := iss.Claims("client-1", auth.ScopeRead)
	exp = start.Add(time.Minute).Truncate(time.Second)
	claims["exp"] = exp.Unix()
	return v, now, start, exp, iss.Sign(t, claims)
}

func TestVerifiedTokenCacheNeverServesPastExpiry(t *testing.T) {
	v, now, start, exp, token := clocked(t, testkit.NewIssuer(t, audience))

	steps := []struct {
		at     time.Time
		ok     bool
		cached int // entries after the call
	}{
		{start, true, 1},
		{exp.Add(-time.Second), true, 1},     // from the cache
		{exp, true, 0},                       // past exp: verified again, accepted within the leeway, not kept
		{exp.Add(10 * time.Second), true, 0}, // still within the 30s leeway, still not kept
		{exp.Add(31 * time.Second), false, 0},
	}
	for _, s := range steps {
		now.Store(&s.at)
		p, err := v.Verify(t.Context(), token)
		if s.ok != (err == nil) || s.ok && p.Subject != "client-1" {
			t.Fatalf("at exp%+v: p = %+v, err = %v, want ok = %v", s.at.Sub(exp), p, err, s.ok)
		}
		if !s.ok && !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("at exp%+v: err = %v, want invalid token", s.at.Sub(exp), err)
		}
		if got := auth.CachedTokens(v); got != s.cached {
			t.Fatalf("at exp%+v: %d cached tokens, want %d", s.at.Sub(exp), got, s.cached)
		}
	}
}

// When the key that verified a remembered token leaves the key set (a
// rotation), the token fails like any token signed by an unknown key.
func TestVerifiedTokenCacheDropsTokensOfRetiredKeys(t *testing.T) {
	iss, v := newVerifier(t)
	old := iss.ReadWrite(t)
	if _, err := v.Verify(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), old); err != nil || auth.CachedTokens(v) != 1 {
		t.Fatalf("second verification: %v, %d cached", err, auth.CachedTokens(v))
	}
	iss.Rotate(t)
	// A token with the new key id makes the verifier refresh its keys.
	if _, err := v.Verify(t.Context(), iss.ReadWrite(t)); err != nil {
		t.Fatalf("token of the new key: %v", err)
	}
	if _, err := v.Verify(t.Context(), old); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("token of the retired key: err = %v, want invalid token", err)
	}
	if got := auth.CachedTokens(v); got != 1 {
		t.Fatalf("%d cached tokens, want only the new one", got)
	}
}

// Only tokens that verify are remembered, so bad tokens cannot fill the
// cache, and a token that differs in any byte is a different entry.
func TestVerifiedTokenCacheKeepsOnlyValidTokens(t *testing.T) {
	iss, v := newVerifier(t)
	valid := iss.ReadOnly(t)
	bad := []string{
		withSignatureChanged(t, valid),
		iss.Sign(t, jwt.MapClaims{"iss": iss.URL, "sub": "x", "aud": "https://elsewhere.example", "exp": time.Now().Add(time.Minute).Unix()}),
		testkit.Unsigned(t, iss.Claims("x", auth.ScopeWrite)),
		// correctly signed, but issued to live longer than allowed
		iss.Sign(t, jwt.MapClaims{"iss": iss.URL, "sub": "x", "aud": audience, "iat": time.Now().Unix(), "exp": time.Now().Add(48 * time.Hour).Unix()}),
	}
	for range 2 {
		for _, token := range bad {
			if _, err := v.Verify(t.Context(), token); !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("err = %v, want invalid token", err)
			}
		}
	}
	if got := auth.CachedTokens(v); got != 0 {
		t.Fatalf("%d cached tokens after only bad ones", got)
	}
	for range 3 {
		if p, err := v.Verify(t.Context(), valid); err != nil || p.HasScope(auth.ScopeWrite) {
			t.Fatalf("p = %+v, err = %v", p, err)
		}
	}
	if got := auth.CachedTokens(v); got != 1 {
		t.Fatalf("%d cached tokens, want 1", got)
	}
}

// A token answered from memory (Remembered, what every call's
// authentication asks first) is answered by its decision for at most a
// second: then the whole check runs again, and a token whose key left the
// key set is no longer remembered; past its exp it never is.
func TestRememberedTokensAreCheckedAgainEachSecond(t *testing.T) {
	iss := testkit.NewIssuer(t, audience)
	v, now, start, exp, short := clocked(t, iss)
	at := func(d time.Duration) { t := start.Add(d); now.Store(&t) }
	old := iss.ReadWrite(t)
	for _, tok := range []string{short, old} {
		if _, err := v.Verify(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.Remembered(t.Context(), tok); !ok {
			t.Fatal("a verified token is not remembered")
		}
	}
	at(exp.Sub(start))
	if _, ok := v.Remembered(t.Context(), short); ok {
		t.Error("a token is remembered at its exp")
	}

	at(0)
	iss.Rotate(t)
	if _, err := v.Verify(t.Context(), iss.ReadWrite(t)); err != nil { // the new key id refreshes the key set
		t.Fatalf("token of the new key: %v", err)
	}
	at(time.Second)
	if _, ok := v.Remembered(t.Context(), old); ok {
		t.Error("a token of a retired key is still remembered a second after the key set changed")
	}
}
