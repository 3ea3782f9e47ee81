package auth

import (
	"context"
	"errors"
	"time"
)

// SetClock makes v read time from now: the claims checks and the cache.
func SetClock(v *Verifier, now func() time.Time) { v.now = now }

// CachedTokens is how many verified tokens v remembers.
func CachedTokens(v *Verifier) int { return v.verified.Len() }

// ReadValidity reads the token validity list now, as the background poll
// does every oidc.token-validity-interval.
func ReadValidity(v *Verifier) error {
	k := v.keys.Load()
	if k == nil || k.validity == nil {
		return errors.New("no token validity list is followed")
	}
	return k.validity.fetch(context.Background(), false)
}
