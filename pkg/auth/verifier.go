// Package auth verifies OAuth 2.0 access tokens (signed JWTs) against an
// OIDC issuer's JWKS and enforces the registry's scopes. The gateway and
// every service use this same code, so a service reached around the gateway
// is no back door.
package auth

import (
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Scopes of the registry. The internal scope is held only by the services'
// own machine clients, for their calls to each other; the admin scope, given
// only by the operator, lets a client change and delete what other clients
// created.
const (
	ScopeRead     = "registry:read"
	ScopeWrite    = "registry:write"
	ScopeInternal = "registry:internal"
	ScopeAdmin    = "registry:admin"
)

// AllowedAlgorithms are the signature algorithms a token may use. All are
// asymmetric: "none" and HMAC are never accepted, so a public key can never
// be abused as a shared secret.
var AllowedAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Config says which issuer and audience to trust.
type Config struct {
	Issuer   string        // iss, and where discovery starts
	Audience string        // the registry's base address; must be in aud
	JWKSURL  string        // optional: skips discovery
	Leeway   time.Duration // clock skew allowed on exp/nbf/iat (at most 60s)
	// MaxTokenLifetime bounds exp − iat; 0 means DefaultMaxTokenLifetime.
	MaxTokenLifetime time.Duration
	// TokenValidityURL is the issuer's token validity list (validity.go);
	// empty: the one its discovery document names, if any.
	TokenValidityURL string
	// TokenValidityInterval is how often the list is read (0: the
	// default); TokenValidityMaxAge how old it may get, while the issuer
	// cannot be reached, before every token is refused with 503 (0: the
	// default, DefaultTokenValidityMaxAge).
	TokenValidityInterval time.Duration
	TokenValidityMaxAge   time.Duration
	// OrganizationClaim names the claim that binds a client to an
	// organization (its id); empty means DefaultOrganizationClaim.
	OrganizationClaim string
}

// DefaultOrganizationClaim is the claim the registry's own identity
// provider puts a bound client's organization id in.
const DefaultOrganizationClaim = "org"

// DefaultMaxTokenLifetime is the longest lifetime (exp − iat) a token may
// have unless configured. Machine tokens live minutes to an hour; a token
// valid for days is a misconfigured issuer or a leaked long-lived
// credential, and nothing the registry can revoke.
const DefaultMaxTokenLifetime = 24 * time.Hour

// RegisterFlags adds the oidc.* flags (env OIDC_ISSUER, OIDC_AUDIENCE, ...).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Issuer, "oidc.issuer", "", "OIDC issuer URL whose tokens are accepted, exactly as the issuer's discovery document spells it (required)")
	fs.StringVar(&c.Audience, "oidc.audience", "", "audience a token must carry: the registry's base address (required)")
	fs.StringVar(&c.JWKSURL, "oidc.jwks-url", "", "JWKS URL; discovered from the issuer when empty")
	fs.DurationVar(&c.Leeway, "oidc.leeway", 30*time.Second, "clock skew tolerated on exp and nbf (max 60s)")
	fs.DurationVar(&c.MaxTokenLifetime, "oidc.max-token-lifetime", DefaultMaxTokenLifetime,
		"longest lifetime (exp - iat) a token may have; longer ones, and tokens without iat, are refused")
	fs.StringVar(&c.TokenValidityURL, "oidc.token-validity-url", "",
		"the issuer's token validity list (revoked clients, secrets and scopes); empty: the one its discovery document names ("+TokenValidityMember+"), if any")
	fs.DurationVar(&c.TokenValidityInterval, "oidc.token-validity-interval", DefaultTokenValidityInterval,
		"how often the token validity list is read: a revoked token is refused this long after the issuer publishes it, at most")
	fs.DurationVar(&c.TokenValidityMaxAge, "oidc.token-validity-max-age", DefaultTokenValidityMaxAge,
		"how old the token validity list may get while the issuer cannot be reached (by default as long as the longest token lives: an older list lets no revoked token stand past its expiry); older, every call is refused with 503 until it is read again")
	fs.StringVar(&c.OrganizationClaim, "oidc.organization-claim", DefaultOrganizationClaim,
		"the token claim that holds the organization id a client is bound to (an external issuer may name it otherwise)")
}

// Principal is the verified caller.
type Principal struct {
	Subject string
	Scopes  []string
	Expiry  time.Time
	// OnBehalfOf is the original caller's subject when a service calls a
	// peer for it; believed only from a token with the internal scope.
	OnBehalfOf string
	// Organization is the id of the organization the client is bound to
	// (the organization claim), empty for a client bound to none. On a
	// call between services it is the original caller's, carried in
	// OnBehalfOfOrganizationHeader.
	Organization string
}

// HasScope reports whether the token grants scope.
func (p Principal) HasScope(scope string) bool { return slices.Contains(p.Scopes, scope) }

// Errors of Verify. ErrUnavailable means the keys could not be fetched: the
// caller answers 503, not 401, because the token may well be valid.
// ErrIssuerMismatch (always with ErrUnavailable) means the issuer's
// discovery document names another issuer than the configured one: every
// token would fail the iss check, so Start refuses to start the process.
var (
	ErrInvalidToken   = errors.New("invalid token")
	ErrUnavailable    = errors.New("token keys are unavailable")
	ErrIssuerMismatch = errors.New("the issuer's discovery document names another issuer")
)

// Verifier checks access tokens. Keys are fetched lazily, so a process can
// start before its issuer and become ready once the issuer answers.
type Verifier struct {
	cfg    Config
	client *http.Client
	parser *jwt.Parser

	keys atomic.Pointer[loadedKeys]
	// verified remembers tokens whose signature and claims checked out, so
	// the signature (most of the cost) is checked once per token and not
	// once per request and hop. See cachedPrincipal for when an entry
	// stands.
	verified *lru.Cache[[sha256.Size]byte, verifiedToken]
	// decisions answer for the tokens in use without the cache's check,
	// for about a second at a time (decisions.go).
	decisions decisions
	now       func() time.Time // the clock of the claims checks and the cache

	initMu      sync.Mutex // one key fetch at a time
	lastFailure time.Time  // guarded by initMu; fail fast right after a failed fetch
	lastErr     error      // guarded by initMu; why the last fetch failed
	logger      log.Logger // guarded by initMu; set by Start
}

type loadedKeys struct {
	keys     keyfunc.Keyfunc
	validity *validity // nil: the issuer publishes no token validity list
	stop     context.CancelFunc
}

// NewVerifier validates cfg; no network call is made until the first Verify
// or Ready.
func NewVerifier(cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("auth: oidc.issuer and oidc.audience are required")
	}
	if cfg.Leeway < 0 || cfg.Leeway > time.Minute {
		return nil, fmt.Errorf("auth: oidc.leeway %s is outside 0..60s", cfg.Leeway)
	}
	if cfg.MaxTokenLifetime < 0 {
		return nil, fmt.Errorf("auth: oidc.max-token-lifetime %s is negative", cfg.MaxTokenLifetime)
	}
	if cfg.MaxTokenLifetime == 0 {
		cfg.MaxTokenLifetime = DefaultMaxTokenLifetime
	}
	if cfg.TokenValidityInterval < 0 || cfg.TokenValidityMaxAge < 0 {
		return nil, errors.New("auth: oidc.token-validity-interval and oidc.token-validity-max-age must not be negative")
	}
	cfg.TokenValidityInterval = cmp.Or(cfg.TokenValidityInterval, DefaultTokenValidityInterval)
	cfg.TokenValidityMaxAge = cmp.Or(cfg.TokenValidityMaxAge, DefaultTokenValidityMaxAge)
	if cfg.TokenValidityMaxAge < 2*cfg.TokenValidityInterval {
		return nil, fmt.Errorf("auth: oidc.token-validity-max-age %s must be at least twice oidc.token-validity-interval %s, or one slow read refuses every call",
			cfg.TokenValidityMaxAge, cfg.TokenValidityInterval)
	}
	verified, err := lru.New[[sha256.Size]byte, verifiedToken](VerifiedTokenCacheSize)
	if err != nil {
		return nil, fmt.Errorf("auth: token cache: %w", err)
	}
	v := &Verifier{cfg: cfg, client: &http.Client{Timeout: 5 * time.Second}, verified: verified, now: time.Now, logger: log.NewNopLogger()}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(AllowedAlgorithms),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return v.now() }),
	)
	return v, nil
}

// VerifiedTokenCacheSize bounds the verified-token cache. Machine clients
// reuse a token until it expires, so a few thousand entries (a few hundred
// bytes each) cover many more clients than the registry has.
const VerifiedTokenCacheSize = 4096

// verifiedToken is a cache entry: the principal, the key that verified
// the signature, by key id, and what the token validity list is asked.
type verifiedToken struct {
	principal  Principal
	kid        string
	key        crypto.PublicKey
	client     string // ClientKey of the subject
	generation *int64
	issued     time.Time // iat
}

type claims struct {
	jwt.RegisteredClaims
	Scope      string   `json:"scope"` // RFC 9068 / RFC 8693: space-separated
	Scp        []string `json:"scp"`   // the array form some issuers use instead
	Generation *int64   `json:"credential_generation"`
	Org        string   `json:"org"`
}

// Verify checks raw and returns its principal.
func (v *Verifier) Verify(ctx context.Context, raw string) (Principal, error) {
	loaded, err := v.keySet(ctx)
	if err != nil {
		return Principal{}, err
	}
	sum := sha256.Sum256([]byte(raw))
	if p, ok := v.cachedPrincipal(ctx, loaded, sum); ok {
		return p, nil
	}
	var c claims
	var used verifiedToken
	keyfunc := loaded.keys.KeyfuncCtx(ctx)
	_, err = v.parser.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		key, err := keyfunc(t)
		used.kid, _ = t.Header["kid"].(string)
		used.key = key
		return key, err
	})
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %s", ErrInvalidToken, describe(err))
	}
	if !audienceMatches(c.Audience, v.cfg.Audience) {
		return Principal{}, fmt.Errorf("%w: the token is not for audience %s", ErrInvalidToken, v.cfg.Audience)
	}
	if c.Subject == "" {
		return Principal{}, fmt.Errorf("%w: the token has no subject", ErrInvalidToken)
	}
	if len(c.Subject) > MaxSubjectLen {
		return Principal{}, fmt.Errorf("%w: the token's subject is longer than %d bytes", ErrInvalidToken, MaxSubjectLen)
	}
	if err := v.checkLifetime(c.RegisteredClaims); err != nil {
		return Principal{}, err
	}
	used.client, used.generation, used.issued = ClientKey(c.Subject), c.Generation, c.IssuedAt.Time
	if loaded.validity != nil {
		if err := loaded.validity.check(ctx, used.client, used.generation, used.issued); err != nil {
			return Principal{}, err
		}
	}
	scopes := strings.Fields(c.Scope)
	scopes = append(scopes, c.Scp...)
	org, err := v.organizationOf(raw, c)
	if err != nil {
		return Principal{}, err
	}
	p := Principal{Subject: c.Subject, Scopes: scopes, Expiry: c.ExpiresAt.Time, Organization: org}
	// Only a token verified by one named key is remembered (a token without
	// a kid is checked against the whole set), and only before its expiry
	// (a token accepted within the leeway is checked again every time).
	if _, isSet := used.key.(jwt.VerificationKeySet); used.kid != "" && used.key != nil && !isSet && v.now().Before(p.Expiry) {
		used.principal = p
		v.verified.Add(sum, used)
	}
	return p, nil
}

// organizationOf reads the organization claim of a token whose signature
// checked out: the claim the configuration names, which must be an
// organization id (a UUID) when present. A value that is not one is an
// issuer misconfigured, and the token is refused rather than read as
// bound to no organization (which would read every row).
func (v *Verifier) organizationOf(raw string, c claims) (string, error) {
	org := c.Org
	if name := cmp.Or(v.cfg.OrganizationClaim, DefaultOrganizationClaim); name != DefaultOrganizationClaim {
		org = ""
		parts := strings.Split(raw, ".")
		payload, err := jwt.NewParser().DecodeSegment(parts[1])
		if err != nil {
			return "", fmt.Errorf("%w: the token's claims cannot be read", ErrInvalidToken)
		}
		var all map[string]any
		if err := json.Unmarshal(payload, &all); err != nil {
			return "", fmt.Errorf("%w: the token's claims cannot be read", ErrInvalidToken)
		}
		switch value := all[name].(type) {
		case nil:
		case string:
			org = value
		default:
			return "", fmt.Errorf("%w: the token's %s claim is not a string", ErrInvalidToken, name)
		}
	}
	if org == "" {
		return "", nil
	}
	if !isUUID(org) {
		return "", fmt.Errorf("%w: the token's organization claim is not an organization id", ErrInvalidToken)
	}
	return strings.ToLower(org), nil
}

// isUUID reports whether s is a UUID in its canonical 36-character form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}

// MaxSubjectLen bounds a token's sub, as OpenID Connect does (255 ASCII
// characters): it is every write's actor and its resources' created_by
// and updated_by, so the size of the largest event depends on it
// (outbox.MaxEventSize).
const MaxSubjectLen = 255

// Remembered answers for a token verified before, without checking a
// signature (the verified-token cache; see cachedPrincipal). It never
// fetches keys: before the first key set is loaded nothing is remembered.
func (v *Verifier) Remembered(ctx context.Context, raw string) (Principal, bool) {
	k := v.keys.Load()
	if k == nil {
		return Principal{}, false
	}
	return v.remember(ctx, k, raw)
}

// checkLifetime refuses a token that was issued to live longer than the
// configured maximum. A token without iat is refused too: its lifetime
// cannot be known, and RFC 9068 requires iat in JWT access tokens. (The
// parser already refused an iat in the future, so exp − iat also bounds how
// long from now the token stays valid.) Such a token is never remembered,
// so the cache cannot answer for it either.
func (v *Verifier) checkLifetime(c jwt.RegisteredClaims) error {
	if c.IssuedAt == nil {
		return fmt.Errorf("%w: the token has no iat, so its lifetime cannot be checked", ErrInvalidToken)
	}
	if lifetime := c.ExpiresAt.Sub(c.IssuedAt.Time); lifetime > v.cfg.MaxTokenLifetime {
		return fmt.Errorf("%w: the token's lifetime (exp - iat) of %s exceeds the %s this registry accepts",
			ErrInvalidToken, lifetime, v.cfg.MaxTokenLifetime)
	}
	return nil
}

// cachedPrincipal answers for a token verified before. An entry stands
// only while the token has not expired (never past exp, whatever the
// leeway), while the key that verified it is still published, unchanged,
// under the same key id (when the key set changes, a rotation that retires
// the key or a refresh that replaces it, the entry is dropped and the token
// is verified again, and fails if its key is gone), and while the token
// validity list, as last read, does not void it. Otherwise it is not
// answered from memory, and Verify says why.
func (v *Verifier) cachedPrincipal(ctx context.Context, loaded *loadedKeys, sum [sha256.Size]byte) (Principal, bool) {
	e, ok := v.verified.Get(sum)
	if !ok {
		return Principal{}, false
	}
	if !v.now().Before(e.principal.Expiry) || !stillPublished(ctx, loaded.keys, e.kid, e.key) {
		v.verified.Remove(sum)
		return Principal{}, false
	}
	if loaded.validity != nil {
		if err := loaded.validity.check(ctx, e.client, e.generation, e.issued); err != nil {
			if !errors.Is(err, ErrUnavailable) {
				v.verified.Remove(sum)
			}
			return Principal{}, false
		}
	}
	return e.principal, true
}

// stillPublished reports whether the key set holds key under kid.
func stillPublished(ctx context.Context, keys keyfunc.Keyfunc, kid string, key crypto.PublicKey) bool {
	jwk, err := keys.Storage().KeyRead(ctx, kid)
	if err != nil {
		return false
	}
	current := jwk.Key()
	if pk, ok := current.(interface{ Public() crypto.PublicKey }); ok {
		current = pk.Public() // as keyfunc hands it to the parser
	}
	// Until the key set is refreshed, the key read is the very one that
	// verified the token: the same pointer, which is cheaper to compare
	// than the key's numbers (rsa.PublicKey.Equal allocates).
	if samePointer(current, key) {
		return true
	}
	same, ok := current.(interface{ Equal(crypto.PublicKey) bool })
	return ok && same.Equal(key)
}

// samePointer reports whether a and b are the same RSA or ECDSA key
// pointer. Other key types (ed25519's is a byte slice) are left to Equal.
func samePointer(a, b crypto.PublicKey) bool {
	switch x := a.(type) {
	case *rsa.PublicKey:
		y, ok := b.(*rsa.PublicKey)
		return ok && x == y
	case *ecdsa.PublicKey:
		y, ok := b.(*ecdsa.PublicKey)
		return ok && x == y
	}
	return false
}

// describe says briefly why a token failed, without echoing the token.
func describe(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the token is not valid yet"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the token is from another issuer"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "the signature does not verify"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the token cannot be verified (unknown key or disallowed algorithm)"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is malformed"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the token lacks a required claim"
	default:
		return "the token is not valid"
	}
}

// audienceMatches compares addresses ignoring one trailing slash, since
// "https://x" and "https://x/" name the same resource.
func audienceMatches(aud jwt.ClaimStrings, want string) bool {
	want = strings.TrimSuffix(want, "/")
	for _, a := range aud {
		if strings.TrimSuffix(a, "/") == want {
			return true
		}
	}
	return false
}

// Start is the start-time check of the gateway and of every service. It
// loads the issuer's keys once, so that the first request does not wait for
// them, and it refuses to start (returns an error naming both values) when
// the issuer's discovery document names another issuer than oidc.issuer:
// every token would then fail the iss check, and a process that answered
// every call with 503 would only hide the mistake. An issuer that cannot be
// reached is not a reason to stop: the process starts, logs why, reports it
// in /readyz, and loads the keys on first use once the issuer answers.
func (v *Verifier) Start(ctx context.Context, logger log.Logger) error {
	v.initMu.Lock()
	v.logger = logger
	v.initMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	_, err := v.keySet(ctx)
	switch {
	case err == nil:
		level.Info(logger).Log("msg", "token issuer keys loaded", "issuer", v.cfg.Issuer)
	case errors.Is(err, ErrIssuerMismatch):
		var why *issuerError
		errors.As(err, &why)
		return fmt.Errorf("auth: refusing to start: %s: %w", why.reason, ErrIssuerMismatch)
	default:
		level.Warn(logger).Log("msg", "the token issuer cannot be used yet; calls answer 503 and /readyz fails until it can",
			"issuer", v.cfg.Issuer, "err", err)
	}
	return nil
}

// startTimeout bounds Start: discovery and the key set, each of which has
// the client's 5 s timeout.
const startTimeout = 10 * time.Second

// Ready fetches the keys (and the token validity list) if they are not
// loaded yet, and fails while the list is older than
// oidc.token-validity-max-age (calls are refused then); readiness probes
// call it. Its error carries a reason for /readyz (ReadinessReason) that
// names the configured issuer and the kind of failure, never another
// address: the gateway's /readyz is public.
func (v *Verifier) Ready(ctx context.Context) error {
	loaded, err := v.keySet(ctx)
	if err != nil || loaded.validity == nil {
		return err
	}
	return loaded.validity.stale()
}

// Close stops the background key refresh.
func (v *Verifier) Close() {
	if k := v.keys.Swap(nil); k != nil {
		k.stop()
	}
	v.verified.Purge()
	v.decisions.clear()
}

func (v *Verifier) keySet(ctx context.Context) (*loadedKeys, error) {
	if k := v.keys.Load(); k != nil {
		return k, nil
	}
	v.initMu.Lock()
	defer v.initMu.Unlock()
	if k := v.keys.Load(); k != nil {
		return k, nil
	}
	// Right after a failed fetch, fail fast with the same reason rather
	// than let every request wait for the issuer again.
	if time.Since(v.lastFailure) < time.Second && v.lastErr != nil {
		return nil, v.lastErr
	}
	k, err := v.load(ctx)
	if err != nil {
		// A new reason is logged once; the same one again is not news.
		if v.lastErr == nil || v.lastErr.Error() != err.Error() {
			lvl := level.Warn
			if errors.Is(err, ErrIssuerMismatch) {
				lvl = level.Error
			}
			lvl(v.logger).Log("msg", "token keys cannot be loaded", "issuer", v.cfg.Issuer, "err", err)
		}
		v.lastFailure, v.lastErr = time.Now(), err
		return nil, err
	}
	if v.lastErr != nil {
		level.Info(v.logger).Log("msg", "token issuer keys loaded", "issuer", v.cfg.Issuer)
		v.lastErr = nil
	}
	v.keys.Store(k)
	return k, nil
}

// issuerError says why the keys could not be loaded: a reason fit for a
// public /readyz (the configured issuer, which every token names anyway, and
// the kind of failure) and the full cause, for the log.
type issuerError struct {
	reason string
	err    error
}

func (e *issuerError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *issuerError) Unwrap() error { return e.err }

// ReadinessReason is what /readyz shows for the oidc check (pkg/server).
func (e *issuerError) ReadinessReason() string { return e.reason }

func unavailable(err error, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrUnavailable, &issuerError{reason: fmt.Sprintf(format, args...), err: err})
}

func (v *Verifier) load(ctx context.Context) (*loadedKeys, error) {
	jwksURL, validityURL := v.cfg.JWKSURL, v.cfg.TokenValidityURL
	if jwksURL == "" {
		doc, err := v.discover(ctx)
		if err != nil {
			return nil, err
		}
		jwksURL, validityURL = doc.JWKSURI, cmp.Or(validityURL, doc.TokenValidityURI)
	}
	// The refresh goroutine must outlive this request, hence its own context.
	bg, stop := context.WithCancel(context.Background())
	failFirst := false
	keys, err := keyfunc.NewDefaultOverrideCtx(bg, []string{jwksURL}, keyfunc.Override{
		Client:                    v.client,
		HTTPTimeout:               5 * time.Second,
		NoErrorReturnFirstHTTPReq: &failFirst,
		RefreshInterval:           10 * time.Minute,
		// A token with an unknown kid triggers a refresh (key rotation), but
		// at most every 30s so forged kids cannot hammer the issuer.
		RefreshUnknownKID:       rate.NewLimiter(rate.Every(30*time.Second), 1),
		RateLimitWaitMax:        time.Second,
		RefreshErrorHandlerFunc: func(string) func(context.Context, error) { return func(context.Context, error) {} },
	})
	if err != nil {
		stop()
		return nil, unavailable(fmt.Errorf("fetch %s: %w", jwksURL, err),
			"the key set of issuer %s (jwks_uri) cannot be fetched (%s)", v.cfg.Issuer, failureKind(err))
	}
	loaded := &loadedKeys{keys: keys, stop: stop}
	if validityURL == "" {
		level.Info(v.logger).Log("msg", "the issuer publishes no token validity list: a token stands until it expires, whatever happens to its client", "issuer", v.cfg.Issuer)
		return loaded, nil
	}
	// No token is trusted before the list is read: a revoked client's
	// token must not pass because a process just started.
	loaded.validity = &validity{url: validityURL, interval: v.cfg.TokenValidityInterval, maxAge: v.cfg.TokenValidityMaxAge,
		client: v.client, now: func() time.Time { return v.now() }, logger: func() log.Logger { return v.logger }}
	if err := loaded.validity.fetch(ctx, false); err != nil {
		stop()
		return nil, unavailable(fmt.Errorf("token validity list %s: %w", validityURL, err),
			"the token validity list of issuer %s cannot be read (%s)", v.cfg.Issuer, failureKind(err))
	}
	go loaded.validity.follow(bg)
	level.Info(v.logger).Log("msg", "following the token validity list: revoked tokens are refused", "url", validityURL, "interval", v.cfg.TokenValidityInterval)
	return loaded, nil
}

// discoveryDocument is what the verifier reads of an issuer's OpenID
// configuration.
type discoveryDocument struct {
	Issuer           string `json:"issuer"`
	JWKSURI          string `json:"jwks_uri"`
	TokenValidityURI string `json:"registry_token_validity_uri"`
}

// discover reads jwks_uri (and the token validity list, if the issuer has
// one) from the issuer's OpenID configuration, and checks that the issuer
// it names is the configured one, character for character: tokens carry
// that value in iss, so "https://idp.example" and "https://idp.example/"
// are different issuers (OpenID Connect Discovery 1.0 §4.3).
func (v *Verifier) discover(ctx context.Context) (discoveryDocument, error) {
	u := strings.TrimSuffix(v.cfg.Issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return discoveryDocument{}, unavailable(err, "oidc.issuer %q is not a URL", v.cfg.Issuer)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return discoveryDocument{}, unavailable(fmt.Errorf("discovery: %w", err), "the issuer %s cannot be reached (%s)", v.cfg.Issuer, failureKind(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return discoveryDocument{}, unavailable(fmt.Errorf("discovery: %s answered %d", u, resp.StatusCode),
			"the issuer %s answers its discovery document with status %d", v.cfg.Issuer, resp.StatusCode)
	}
	var doc discoveryDocument
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return discoveryDocument{}, unavailable(fmt.Errorf("discovery: %w", err), "the discovery document of issuer %s is not JSON", v.cfg.Issuer)
	}
	if doc.Issuer != v.cfg.Issuer {
		return discoveryDocument{}, unavailable(ErrIssuerMismatch,
			"the discovery document of %s names issuer %q, but oidc.issuer is %q; tokens carry the discovered value in iss, "+
				"so set oidc.issuer (OIDC_ISSUER) to exactly %q", u, doc.Issuer, v.cfg.Issuer, doc.Issuer)
	}
	if doc.JWKSURI == "" {
		return discoveryDocument{}, unavailable(errors.New("discovery: no jwks_uri"), "the discovery document of issuer %s has no jwks_uri", v.cfg.Issuer)
	}
	return doc, nil
}

// failureKind names what went wrong with a request briefly, without the
// addresses an error's text carries.
func failureKind(err error) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dnsErr):
		return "its host name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "no answer in time"
	case errors.As(err, &certErr):
		return "its TLS certificate is not trusted"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection was closed"
	default:
		return "the request failed; the log has the cause"
	}
}
