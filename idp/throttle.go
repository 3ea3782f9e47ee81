package idp

import (
	"context"
	"crypto/subtle"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/assetregistry/registry/pkg/httpx"
)

// ThrottleConfig limits failed client authentications at the token
// endpoint, so that secrets cannot be guessed, nor the database queried, as
// fast as requests arrive. Only failures count: a client that authenticates
// uses up nothing, however often it asks.
//
// Refusing is done per client id at one true source address (behind the
// trusted proxies), and only so: an attacker hammering one client id from
// elsewhere cannot lock the real client out (the real client's own address
// has a bucket of its own), and wrong secrets from one address cannot lock
// out another client calling from that same address (a neighbour behind the
// same egress). What an address trying many client ids, or many addresses
// trying one client id, can do is slow those requests down, never make them
// fail. Even the refused pair lets through a secret that this replica saw
// authenticate the client before (the real client behind the attacker's
// NAT), checked against the database like any other.
type ThrottleConfig struct {
	// PerClientAddress is how many failed authentications one address may
	// make for one client id per minute (and at once); over it, that
	// client id from that address is refused with 429.
	PerClientAddress int
	// PerAddress is the same for one address whatever the client ids it
	// names (an address trying many ids); over it, every request from the
	// address waits Delay before it is answered, and is never refused.
	PerAddress int
	// PerClient is the same for one client id from every address; over it,
	// every request for the client waits Delay before it is answered, and
	// is never refused.
	PerClient int
	Delay     time.Duration
	// TrustedProxies are the networks of reverse proxies in front of the
	// IdP (the ingress) whose X-Forwarded-For is believed, for the token
	// endpoint's throttle and the token validity list's; otherwise the
	// source is the connection's peer.
	TrustedProxies httpx.Networks
}

// RegisterFlags adds the throttle.* flags (env THROTTLE_CLIENT_ADDRESS, ...).
func (c *ThrottleConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.PerClientAddress, "throttle.client-address", 10,
		"failed client authentications per minute allowed for one client id from one address, then that client id is refused (429) from that address (0: no limit)")
	fs.IntVar(&c.PerAddress, "throttle.address", 30,
		"failed client authentications per minute allowed from one address for any client ids before its requests are slowed by throttle.delay (never refused) (0: no limit)")
	fs.IntVar(&c.PerClient, "throttle.client", 60,
		"failed client authentications per minute for one client id from all addresses before its requests are slowed by throttle.delay (never refused) (0: no limit)")
	fs.DurationVar(&c.Delay, "throttle.delay", time.Second,
		"how long a request over throttle.address or throttle.client waits before it is answered")
	fs.DurationVar(&c.Delay, "throttle.client-delay", time.Second, "the former name of throttle.delay")
	const proxies = "addresses and networks (10.1.2.0/24,...) of reverse proxies (the ingress) whose X-Forwarded-For names the caller, for the throttles of the token endpoint and the token validity list; otherwise the caller is the TCP peer"
	fs.Var(&c.TrustedProxies, "trusted-proxies", proxies)
	fs.Var(&c.TrustedProxies, "throttle.trusted-proxies", "the former name of trusted-proxies")
}

func (c ThrottleConfig) validate() error {
	if c.PerClientAddress < 0 || c.PerAddress < 0 || c.PerClient < 0 || c.Delay < 0 {
		return fmt.Errorf("idp: the throttle.* settings must not be negative")
	}
	return nil
}

// throttleEntries bounds each of the throttle's maps. An entry is a rate
// limiter and its key, about 200 bytes, so the three maps stay under about
// 10 MB whatever arrives. Dropping the least recently used entry is
// harmless when it has refilled (a full bucket and no bucket are the same);
// only an attacker with more addresses than this could drop a bucket still
// in use, and it would gain a burst per address it already has.
const throttleEntries = 16384

// throttle keeps the buckets of failed authentications.
type throttle struct {
	cfg           ThrottleConfig
	now           func() time.Time
	clientAddress *lru.Cache[clientAtAddress, *rate.Limiter]
	address       *lru.Cache[netip.Prefix, *rate.Limiter]
	client        *lru.Cache[string, *rate.Limiter]
	// known holds, per client id, the digests of the last secrets that
	// authenticated it here: a refused pair still lets them be checked.
	known *lru.Cache[string, [][]byte]
}

type clientAtAddress struct {
	client string
	source netip.Prefix
}

func newThrottle(cfg ThrottleConfig) *throttle {
	t := &throttle{cfg: cfg, now: time.Now}
	// lru.New fails only for a size below 1.
	t.clientAddress, _ = lru.New[clientAtAddress, *rate.Limiter](throttleEntries)
	t.address, _ = lru.New[netip.Prefix, *rate.Limiter](throttleEntries)
	t.client, _ = lru.New[string, *rate.Limiter](throttleEntries)
	t.known, _ = lru.New[string, [][]byte](throttleEntries)
	return t
}

// verdict is what the throttle makes of a token request before its
// secret is looked at.
type verdict struct {
	// refusedFor, when positive, refuses the request (429): the client id
	// has failed too often from this address; retry after it.
	refusedFor time.Duration
	// slowed has the request wait Delay first: its address has failed too
	// often for any client ids, or its client id from any addresses.
	slowed bool
}

// judge is the throttle's decision for client from source at now; it
// spends nothing.
func (t *throttle) judge(client string, source netip.Prefix, now time.Time) verdict {
	client = bucketName(client)
	var v verdict
	if lim, ok := t.clientAddress.Get(clientAtAddress{client, source}); ok {
		v.refusedFor = shortfall(lim, now)
	}
	if lim, ok := t.address.Get(source); ok && shortfall(lim, now) > 0 {
		v.slowed = true
	}
	if lim, ok := t.client.Get(client); ok && shortfall(lim, now) > 0 {
		v.slowed = true
	}
	return v
}

// admit is asked before a client's secret is looked at in the database.
// When the bucket of client at source is empty it refuses with a slow_down
// error saying when to retry, unless secret is one that authenticated the
// client here before (remembered by succeeded): a guesser cannot know it,
// and the real client sharing the guesser's address is not locked out.
// When the address's bucket (failures for any client ids) or the client's
// (failures from any addresses) is empty it admits after Delay. vouched
// says that the pair was over its budget and the secret let it through.
func (t *throttle) admit(ctx context.Context, client, secret string, source netip.Prefix) (vouched bool, err error) {
	v := t.judge(client, source, t.now())
	if v.refusedFor > 0 {
		if !t.knows(client, secret) {
			return false, slowDown(v.refusedFor)
		}
		vouched = true
	}
	if v.slowed && t.cfg.Delay > 0 {
		select {
		case <-time.After(t.cfg.Delay):
		case <-ctx.Done():
			return vouched, ctx.Err()
		}
	}
	return vouched, nil
}

// slowDown is the slow_down error of a refused pair.
func slowDown(retryIn time.Duration) error {
	seconds := max(int(math.Ceil(retryIn.Seconds())), 1)
	return &Error{Code: "slow_down", retryAfter: seconds,
		Description: fmt.Sprintf("too many failed authentications of this client from this address; retry in %d s", seconds)}
}

// refusal is the slow_down error of client at source, over its budget.
func (t *throttle) refusal(client string, source netip.Prefix) error {
	return slowDown(t.judge(client, source, t.now()).refusedFor)
}

// succeeded remembers that secret authenticated client: its digest, with
// the one before it (a rotation's handover has two valid secrets).
func (t *throttle) succeeded(client, secret string) {
	digest := hashSecret(secret)
	held, _ := t.known.Get(client)
	for _, d := range held {
		if subtle.ConstantTimeCompare(d, digest) == 1 {
			return
		}
	}
	next := [][]byte{digest}
	if len(held) > 0 {
		next = append(next, held[0])
	}
	t.known.Add(client, next)
}

// forget drops what is remembered of client's secrets: one of them failed
// (rotated out, or the client deleted), and a pair over its budget must
// not go on asking the database for it.
func (t *throttle) forget(client string) { t.known.Remove(client) }

// knows reports whether secret authenticated client here before.
func (t *throttle) knows(client, secret string) bool {
	held, ok := t.known.Get(client)
	if !ok || secret == "" {
		return false
	}
	digest, match := hashSecret(secret), 0
	for _, d := range held {
		match |= subtle.ConstantTimeCompare(d, digest)
	}
	return match == 1
}

// failed records a failed authentication of client from source. The
// bucket of the client at the address may go below empty: failures that
// were admitted at once, before any of them was recorded, are all paid for
// with waiting. The other two only slow, so they keep no such debt, which
// would outlast an attack.
func (t *throttle) failed(client string, source netip.Prefix) {
	client = bucketName(client)
	now := t.now()
	if t.cfg.PerClientAddress > 0 {
		bucket(t.clientAddress, clientAtAddress{client, source}, t.cfg.PerClientAddress).ReserveN(now, 1)
	}
	if t.cfg.PerAddress > 0 {
		bucket(t.address, source, t.cfg.PerAddress).AllowN(now, 1)
	}
	if t.cfg.PerClient > 0 {
		bucket(t.client, client, t.cfg.PerClient).AllowN(now, 1)
	}
}

// shortfall is how long until lim has a whole token again; 0 when it has.
func shortfall(lim *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - lim.TokensAt(now)
	if missing <= 0 {
		return 0
	}
	return time.Duration(missing / float64(lim.Limit()) * float64(time.Second))
}

// bucket returns the limiter of key, adding a full one if there is none:
// perMinute failures a minute, as many at once.
func bucket[K comparable](c *lru.Cache[K, *rate.Limiter], key K, perMinute int) *rate.Limiter {
	if lim, ok := c.Get(key); ok {
		return lim
	}
	lim := rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute)
	if prev, found, _ := c.PeekOrAdd(key, lim); found {
		return prev // added by a concurrent request
	}
	return lim
}

// bucketName is the client id as a key: ids that cannot exist (the pattern
// of newClient) share one, so that a key is never longer than an id.
func bucketName(id string) string {
	if !clientIDPattern.MatchString(id) {
		return "\x00malformed"
	}
	return id
}

// source is the network a request comes from (httpx.SourceNetwork, the
// rule the gateway's rate limits use too).
func (t *throttle) source(r *http.Request) netip.Prefix {
	return httpx.SourceNetwork(r, t.cfg.TrustedProxies)
}
