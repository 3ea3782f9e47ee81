package auth

import "time"

// SetClock makes v read time from now: the claims checks and the cache.
func SetClock(v *Verifier, now func() time.Time) { v.now = now }

// CachedTokens is how many verified tokens v remembers.
func CachedTokens(v *Verifier) int { return v.verified.Len() }
