package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/assetregistry/registry/pkg/job"
)

// Revocation. A signed token cannot be taken back, so an issuer that lets
// a client be deleted, its secret rotated or a scope removed publishes what
// still stands, and every verifier follows it: the token validity list.
// The registry's identity provider issues each token with the generation of
// the secret it was issued for (the private claim credential_generation)
// and publishes, for every client it has, the lowest generation whose
// tokens stand. A change that voids tokens gives the client's secrets new
// generations (a rotation's new secret voids the old one's tokens when the
// old one expires), and a deleted client leaves the list. A verifier polls
// the list in the background (no call per request) and refuses a token of
// a client not listed, or of a lower generation than listed.

// TokenValidityMember is the member of an issuer's discovery document
// that names its token validity list. It is the registry's own: no
// standard covers it, so other issuers have none, and their tokens stand
// until they expire.
const TokenValidityMember = "registry_token_validity_uri"

// CredentialGenerationClaim is the claim of the generation a token was
// issued under.
const CredentialGenerationClaim = "credential_generation"

// TokenValidity is the token validity list, as the issuer serves it.
type TokenValidity struct {
	// Clients maps ClientKey(client id) to the lowest generation of the
	// client's tokens that stand.
	Clients map[string]int64 `json:"clients"`
}

// ClientKey names a client in the list: the unpadded base64url SHA-256 of
// its id (the token's sub), so that the list, which the issuer serves to
// anyone who asks, does not hand out the ids of every integration.
func ClientKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Defaults of the oidc.token-validity-* settings.
//
// The list is kept, while the issuer cannot be reached, for as long as the
// longest token may live (DefaultMaxTokenLifetime). What an old list
// misses is a revocation made after it was read: the revoked token then
// stands until it expires, which the lifetime bounds, as it bounds every
// token of an issuer without a list. Tokens issued under a generation the
// list has not reached (a new client, a new secret, scopes changed) cannot
// be judged by it and are 503s until it is read again. So no age of the
// list lets anything through for longer than a token lives, while refusing
// every call at some age would turn an issuer outage into an outage of
// the registry.
const (
	DefaultTokenValidityInterval = time.Second
	DefaultTokenValidityMaxAge   = DefaultMaxTokenLifetime
)

var (
	validityAge = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "auth_token_validity_age_seconds",
		Help: "Age of the token validity list this process checks tokens against: how long ago the issuer read it from its database (0 when the issuer publishes none); over oidc.token-validity-max-age every call is refused with 503.",
	})
	validityRefusals = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "auth_tokens_revoked_total",
		Help: "Tokens refused because the token validity list voids them: their client deleted (client) or its secret or scopes changed since (generation).",
	}, []string{"reason"})
)

// validity follows one token validity list.
type validity struct {
	url      string
	interval time.Duration
	maxAge   time.Duration
	client   *http.Client
	now      func() time.Time
	logger   func() log.Logger

	list atomic.Pointer[map[string]int64]
	// fetched is when the list in use was read from the issuer's
	// database, in unix nanoseconds of this process's clock: when it was
	// asked for, less the Age the issuer answered with (a replica serving
	// from memory while its database is away says how old its list is).
	fetched atomic.Int64
	// reached is the highest generation the list was read after: the
	// highest it names, or a token's that made it be read early.
	reached atomic.Int64

	mu      sync.Mutex // guards the writes of list, fetched and reached, and etag and lastErr
	etag    string
	lastErr string

	early sync.Mutex // one read ahead of the poll at a time
}

// errNoGeneration is a token of an issuer with a validity list that carries
// no generation: issued before the issuer had one, or not by it.
var errNoGeneration = fmt.Errorf("%w: the token carries no %s, which this issuer's tokens must", ErrInvalidToken, CredentialGenerationClaim)

// stale is ErrUnavailable while the list is older than maxAge.
func (v *validity) stale() error {
	age := v.now().Sub(time.Unix(0, v.fetched.Load()))
	if age > v.maxAge {
		return unavailable(fmt.Errorf("token validity list %s: last read %s ago", v.url, age.Round(time.Second)),
			"the token validity list of the issuer has not been read for %s (over oidc.token-validity-max-age %s), so no token can be trusted", age.Round(time.Second), v.maxAge)
	}
	return nil
}

// check says whether a token of sub (ClientKey) issued under generation
// (nil when the token has none) still stands.
//
// A client the list does not name is deleted, or is newer than the list:
// a client just created whose first token arrives before the next poll.
// Generations only grow, across every client, so a token of a generation
// the list has not reached is newer than the list: the list is read again
// at once and asked again, and that generation is then reached, so each
// new generation costs one read at most. A deleted client's tokens, of
// generations reached, are refused without asking the issuer: no sender of
// tokens can make a verifier ask it faster.
func (v *validity) check(ctx context.Context, key string, generation *int64, issued time.Time) error {
	if err := v.stale(); err != nil {
		return err
	}
	lowest, listed := (*v.list.Load())[key]
	if newer := generation != nil && *generation > v.reached.Load(); !listed && generation != nil && (newer || v.readBefore(issued)) {
		l, ok, err := v.readEarly(ctx, key, *generation, issued)
		switch {
		case err == nil:
			lowest, listed = l, ok
		case newer:
			// Newer than the list, or of a deleted client: only the list
			// read again can tell, so the caller may try again (a 503),
			// as when the list is too old; a 401 would tell a new
			// integration its good token was revoked.
			return unavailable(fmt.Errorf("token validity list %s: %w", v.url, err),
				"the token validity list of the issuer could not be read for a token newer than the list")
		}
		// A generation the list reached, issued about when the list was
		// read, and the list cannot be read again (the issuer is down):
		// the list held answers, as it does for every other token through
		// an outage, rather than a 503 for as long as the outage lasts.
	}
	switch {
	case !listed:
		validityRefusals.WithLabelValues("client").Inc()
		return fmt.Errorf("%w: the token was revoked: its client no longer exists", ErrInvalidToken)
	case generation == nil:
		return errNoGeneration
	case *generation < lowest:
		validityRefusals.WithLabelValues("generation").Inc()
		return fmt.Errorf("%w: the token was revoked: its client's secret or scopes changed after it was issued", ErrInvalidToken)
	}
	return nil
}

// readEarly reads the list ahead of the poll, for a token of generation,
// unless a read since has reached it, and looks key up in it.
func (v *validity) readEarly(ctx context.Context, key string, generation int64, issued time.Time) (int64, bool, error) {
	v.early.Lock()
	defer v.early.Unlock()
	if generation > v.reached.Load() || v.readBefore(issued) {
		// A failure leaves the list as it was (the poll reports it), and
		// the generation unreached: the next token of it reads again.
		if err := v.fetch(ctx, true); err != nil {
			return 0, false, err
		}
		v.reach(generation)
	}
	lowest, listed := (*v.list.Load())[key]
	return lowest, listed, nil
}

// readBefore reports whether the list held was read before a token issued
// at issued (iat counts whole seconds: up to a second later). Generations
// are handed out in one sequence but committed in any order, so a list
// can hold a newer client's generation and not yet an older one's: a
// token of a client the list lacks, issued after the list was read, is
// read again rather than refused as deleted. A deleted client's tokens,
// all issued before the list that left it out, never read again.
func (v *validity) readBefore(issued time.Time) bool {
	return !issued.IsZero() && v.fetched.Load() < issued.Add(time.Second).UnixNano()
}

// reach raises reached to generation.
func (v *validity) reach(generation int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if generation > v.reached.Load() {
		v.reached.Store(generation)
	}
}

// fetch reads the list once, conditionally on the last one's ETag; fresh
// asks for a list read from the issuer's database after the request
// (Cache-Control: no-cache), not one it holds in memory.
func (v *validity) fetch(ctx context.Context, fresh bool) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.url, nil)
	if err != nil {
		return err
	}
	v.mu.Lock()
	if v.etag != "" && v.list.Load() != nil {
		req.Header.Set("If-None-Match", v.etag)
	}
	v.mu.Unlock()
	if fresh {
		req.Header.Set("Cache-Control", "no-cache")
	}
	asked := v.now()
	resp, err := v.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// When the issuer read the list. A list asked for fresh was read after
	// the request was sent. One served from memory was read Age ago, and
	// RFC 9111's Age counts whole seconds, so up to a second earlier than
	// it says: it is taken as read at the earliest, so that it can never
	// pass for newer than a fresh read made for a token just issued (which
	// would then be dropped, and the token's new client refused as deleted).
	if age, err := strconv.Atoi(resp.Header.Get("Age")); err == nil && age >= 0 && !fresh {
		asked = asked.Add(-time.Duration(age+1) * time.Second)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		var doc TokenValidity
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&doc); err != nil {
			return fmt.Errorf("the list is not JSON: %w", err)
		}
		if doc.Clients == nil {
			return errors.New("the list has no clients member")
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		// A read ahead of the poll and the poll may cross, and replicas of
		// the issuer may serve lists read at different times: the list
		// read from the issuer's database last wins.
		if asked.UnixNano() >= v.fetched.Load() {
			v.list.Store(&doc.Clients)
			v.etag = resp.Header.Get("ETag")
			v.fetched.Store(asked.UnixNano())
			for _, g := range doc.Clients {
				if g > v.reached.Load() {
					v.reached.Store(g)
				}
			}
		}
	case http.StatusNotModified:
		v.mu.Lock()
		defer v.mu.Unlock()
		if asked.UnixNano() >= v.fetched.Load() {
			v.fetched.Store(asked.UnixNano()) // the list is as fresh as the issuer's read of it
		}
	default:
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	validityAge.Set(v.now().Sub(time.Unix(0, v.fetched.Load())).Seconds())
	return nil
}

// follow polls the list until ctx ends. A failure keeps the last list,
// which check trusts until it is maxAge old; each new reason is logged
// once, and so is the recovery.
func (v *validity) follow(ctx context.Context) {
	job.Ticks(ctx, v.interval, func(ctx context.Context) bool {
		err := v.fetch(ctx, false)
		if ctx.Err() != nil {
			return false
		}
		v.mu.Lock()
		switch {
		case err != nil && err.Error() != v.lastErr:
			level.Warn(v.logger()).Log("msg", "the token validity list cannot be read; the last one is used until it is oidc.token-validity-max-age old, then calls are refused",
				"url", v.url, "max_age", v.maxAge, "err", err)
			v.lastErr = err.Error()
		case err == nil && v.lastErr != "":
			level.Info(v.logger()).Log("msg", "the token validity list is read again", "url", v.url)
			v.lastErr = ""
		}
		v.mu.Unlock()
		validityAge.Set(v.now().Sub(time.Unix(0, v.fetched.Load())).Seconds())
		return true
	})
}
