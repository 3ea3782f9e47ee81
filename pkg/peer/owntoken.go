package peer

import (
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// renewRetry is how long a service goes on with the token it holds after
// a renewal failed, before it tries again.
const renewRetry = 5 * time.Second

// expiryMargin is how long before its expiry a token is no longer sent: a
// peer must still find it valid when the call arrives (oauth2's own
// margin).
const expiryMargin = 10 * time.Second

// ownToken is the service's own token for its peer calls. It is fetched
// when first needed and again halfway through its life; while that fails
// (the identity provider down or slow), the token held is used until it
// expires and the renewal is tried again every renewRetry, by one call
// while the others go on. So an outage of the identity provider shorter
// than half a token's life (30 minutes of the bundled one's hour for the
// services' own clients) costs no peer call, where a token fetched only once it expired would fail every
// call that needs it for as long as the outage lasts. Only a service with
// no valid token (just started, or after a longer outage) waits for the
// fetch, and fails with it.
type ownToken struct {
	fetch func() (*oauth2.Token, error) // asks the issuer, every time
	now   func() time.Time

	mu      sync.Mutex // guards held and renewAt
	held    *oauth2.Token
	renewAt time.Time

	fetching sync.Mutex // one fetch at a time
}

func newOwnToken(fetch func() (*oauth2.Token, error)) *ownToken {
	return &ownToken{fetch: fetch, now: time.Now}
}

// Token implements oauth2.TokenSource.
func (o *ownToken) Token() (*oauth2.Token, error) {
	held, due := o.state()
	if held != nil {
		// A renewal that is due is made by the one call that finds no
		// other making it; every other call goes on with the held token.
		if due && o.fetching.TryLock() {
			defer o.fetching.Unlock()
			if held, due = o.state(); due { // not renewed meanwhile
				if t, err := o.fetch(); err == nil {
					return o.keep(t), nil
				}
				o.retryLater(held)
			}
		}
		return held, nil
	}
	// Nothing valid held: every call waits for the one fetch.
	o.fetching.Lock()
	defer o.fetching.Unlock()
	if held, _ := o.state(); held != nil {
		return held, nil
	}
	t, err := o.fetch()
	if err != nil {
		return nil, err
	}
	return o.keep(t), nil
}

// state is the token held, nil when there is none or it is too close to
// its expiry to send, and whether its renewal is due.
func (o *ownToken) state() (held *oauth2.Token, due bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	if o.held == nil || !o.held.Expiry.IsZero() && !now.Before(o.held.Expiry.Add(-expiryMargin)) {
		return nil, false
	}
	return o.held, !o.held.Expiry.IsZero() && !now.Before(o.renewAt)
}

// keep holds t and returns it; its renewal is due halfway to its expiry
// (a token without one is never renewed).
func (o *ownToken) keep(t *oauth2.Token) *oauth2.Token {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	o.held = t
	o.renewAt = now.Add(t.Expiry.Sub(now) / 2)
	return t
}

// retryLater puts the next renewal of held renewRetry away.
func (o *ownToken) retryLater(held *oauth2.Token) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.held == held {
		o.renewAt = o.now().Add(renewRetry)
	}
}
