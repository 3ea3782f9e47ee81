package auth

import (
	"context"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"
)

// decisions remember, per token, what Remembered last answered for it, so
// that a token a client sends on every call costs a map read and a few
// comparisons, not a SHA-256 of the token, the verified-token cache's
// exclusive lock and the validity list's lookup each time. A decision
// stands only
//
//   - before the token's exp (never past it),
//   - while the key set is the one it was taken under and the token
//     validity list is the very list it was checked against (a new list
//     read from the issuer voids every decision at once, so a revocation
//     is enforced as soon as the list carries it, as before) and not
//     older than oidc.token-validity-max-age,
//   - and for at most decisionRecheck: then the whole check runs again,
//     the key that signed the token still published under its key id
//     included (the key set changes only when it is refreshed, every ten
//     minutes or on an unknown key id, so this delays the refusal of a
//     retired key's tokens by at most that second).
//
// The map holds at most VerifiedTokenCacheSize decisions; when it is full
// it is emptied, and the tokens in use take the whole check once more.
type decisions struct {
	m sync.Map // raw token → *decision
	n atomic.Int64
}

type decision struct {
	principal Principal
	keys      *loadedKeys
	list      *map[string]int64 // the validity list checked against (nil: none followed)
	checked   time.Time         // when the whole check ran
}

// decisionRecheck is how long a decision stands before the whole check
// (key still published, validity list) runs again.
const decisionRecheck = time.Second

func (d *decisions) get(raw string) *decision {
	if e, ok := d.m.Load(raw); ok {
		return e.(*decision)
	}
	return nil
}

func (d *decisions) put(raw string, e *decision) {
	if _, loaded := d.m.Swap(raw, e); !loaded {
		if d.n.Add(1) > VerifiedTokenCacheSize {
			d.clear()
		}
	}
}

func (d *decisions) drop(raw string) {
	if _, loaded := d.m.LoadAndDelete(raw); loaded {
		d.n.Add(-1)
	}
}

func (d *decisions) clear() {
	d.m.Clear()
	d.n.Store(0)
}

// currentList is the validity list loaded holds now (nil: none followed).
func currentList(loaded *loadedKeys) *map[string]int64 {
	if loaded.validity == nil {
		return nil
	}
	return loaded.validity.list.Load()
}

// standing reports whether e still answers for its token (see decisions).
func (v *Verifier) standing(e *decision, loaded *loadedKeys, now time.Time) bool {
	if e.keys != loaded || !now.Before(e.principal.Expiry) || now.Sub(e.checked) >= decisionRecheck {
		return false
	}
	if loaded.validity == nil {
		return true
	}
	return e.list == loaded.validity.list.Load() && loaded.validity.stale() == nil
}

// remember answers for raw from its decision, or runs the whole check of
// the verified-token cache (cachedPrincipal) and records its answer.
func (v *Verifier) remember(ctx context.Context, loaded *loadedKeys, raw string) (Principal, bool) {
	now := v.now()
	if e := v.decisions.get(raw); e != nil {
		if v.standing(e, loaded, now) {
			return e.principal, true
		}
		v.decisions.drop(raw)
	}
	// The list is read before the check, so that a list stored while the
	// check runs makes the decision stale at once.
	list := currentList(loaded)
	p, ok := v.cachedPrincipal(ctx, loaded, sha256.Sum256([]byte(raw)))
	if ok {
		v.decisions.put(raw, &decision{principal: p, keys: loaded, list: list, checked: now})
	}
	return p, ok
}
