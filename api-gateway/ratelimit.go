package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/go-redis/redis_rate/v10"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/redis/go-redis/v9"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/httpx"
)

// RateLimitConfig is the gateway's request budgets. They are kept in
// Redis, so every replica of the gateway draws on one budget per client
// (adding replicas does not multiply it).
type RateLimitConfig struct {
	Enabled bool
	// Redis keeps the budgets: one server, or the primary Sentinel names
	// (followed through failovers).
	Redis cache.Connection
	// KeyPrefix starts every key of the budgets (after redis_rate's own
	// "rate:"); installations sharing a Redis use different prefixes.
	KeyPrefix string
	// Default is every client's budget but those in Clients.
	Default Budget
	Clients Budgets
	// Items is every client's budget of batch items (ClientItems: of
	// particular clients): a batch costs one request of the client's
	// budget and as many items as it carries of this one.
	Items       Budget
	ClientItems Budgets
	// Unauthenticated is the budget per source address of calls without a
	// valid token, drawn on before any signature is checked.
	Unauthenticated Budget
	// Probes is the budget per source address of calls to /readyz, which
	// needs no token.
	Probes Budget
	// TrustedProxies may say who the client is in X-Forwarded-For.
	TrustedProxies Prefixes
	// Timeout bounds each call to Redis; a slower Redis is taken as down
	// and the replica's share of the budget answers.
	Timeout time.Duration
	// Backoff is how long Redis is left alone after it failed: requests are
	// checked against the replica's share alone.
	Backoff time.Duration
	// Replicas is how many replicas of the gateway share the budgets: while
	// Redis cannot answer, each keeps a client to its budget divided by
	// this (localBudgets).
	Replicas int
}

// RegisterFlags adds the rate-limit.* flags (env RATE_LIMIT_*) and the
// redis.* connection flags (env REDIS_URL, REDIS_MASTER_NAME, ...: the
// services' own names for their Redis).
func (c *RateLimitConfig) RegisterFlags(fs *flag.FlagSet) {
	c.Default, c.Unauthenticated, c.Probes, c.Items = DefaultBudget, DefaultUnauthenticatedBudget, DefaultProbesBudget, DefaultItemBudget
	fs.BoolVar(&c.Enabled, "rate-limit.enabled", true, "limit each client's requests (needs redis.url); false turns every limit off")
	c.Redis.RegisterFlags(fs, "Redis URL where the rate-limit budgets are kept, shared by every gateway replica")
	fs.StringVar(&c.KeyPrefix, "rate-limit.key-prefix", "api-gateway:", "start of the budgets' Redis keys (after \"rate:\"); installations sharing a Redis need different ones")
	fs.Var(budgetValue{&c.Default}, "rate-limit.default", "each client's budget, <quota>/<window>: quota requests in any window, all usable at once")
	fs.Var(&c.Clients, "rate-limit.clients", "budgets of particular clients (token sub), <client>=<quota>/<window>,...; the policy name in the headers is the client")
	fs.Var(budgetValue{&c.Items}, "rate-limit.items", "each client's budget of batch items, <quota>/<window>: a batch (POST or PATCH .../batch) costs one request and as many of these as it has items")
	fs.Var(&c.ClientItems, "rate-limit.client-items", "batch item budgets of particular clients (token sub), <client>=<quota>/<window>,...; the policy name in the headers is <client>:items")
	fs.Var(budgetValue{&c.Unauthenticated}, "rate-limit.unauthenticated", "budget per source address of calls with a missing or invalid token, drawn on before any signature is checked")
	fs.Var(budgetValue{&c.Probes}, "rate-limit.probes", "budget per source address of calls to /readyz (no token needed); a kubelet probing every few seconds stays far within it")
	fs.Var(&c.TrustedProxies, "rate-limit.trusted-proxies", "addresses and networks (10.0.0.0/8,...) of proxies whose X-Forwarded-For names the caller; otherwise the caller is the TCP peer")
	fs.DurationVar(&c.Timeout, "rate-limit.timeout", 25*time.Millisecond, "longest wait for Redis per request; a slower Redis is taken as down and the replica's share of the budget (rate-limit.replicas) answers instead")
	fs.DurationVar(&c.Backoff, "rate-limit.backoff", time.Second, "after a Redis failure, how long Redis is left alone: requests are checked against the replica's share of their budget only")
	fs.IntVar(&c.Replicas, "rate-limit.replicas", 1, "replicas of the gateway sharing the budgets: while Redis cannot answer, each replica keeps a client to its budget divided by this")
}

// Validate says what is wrong with the configuration, at start.
func (c RateLimitConfig) Validate() error {
	if !c.Enabled {
		return nil
	}
	if !c.Redis.Enabled() {
		return errors.New("gateway: rate limits are on but redis.url (REDIS_URL) is empty: the budgets are kept in Redis; set rate-limit.enabled=false to run without limits")
	}
	if c.Default.Quota < 1 || c.Unauthenticated.Quota < 1 || c.Probes.Quota < 1 {
		return errors.New("gateway: rate-limit.default, rate-limit.unauthenticated and rate-limit.probes need a quota of at least 1")
	}
	// A budget smaller than the largest batch would never let one through.
	if c.Items.Quota < maxBatchItems {
		return fmt.Errorf("gateway: rate-limit.items %s: the quota must hold the largest batch, %d items", c.Items, maxBatchItems)
	}
	for sub, b := range c.ClientItems {
		if b.Quota < maxBatchItems {
			return fmt.Errorf("gateway: rate-limit.client-items of %q, %s: the quota must hold the largest batch, %d items", sub, b, maxBatchItems)
		}
	}
	if c.Timeout <= 0 {
		return errors.New("gateway: rate-limit.timeout must be positive")
	}
	if c.Replicas < 0 {
		return errors.New("gateway: rate-limit.replicas must not be negative")
	}
	return nil
}

var (
	failOpenTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_ratelimit_fail_open_total",
		Help: "Requests whose budget Redis did not check because it failed, was slow or is in back-off: the replica's own share of the budget (rate-limit.replicas) answered them instead.",
	}, []string{"budget"})
	localLimitedTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_ratelimit_local_limited_total",
		Help: "Requests answered 429 while Redis could not check their budget, because they were over the replica's own share of it (also counted in gateway_ratelimit_limited_total).",
	}, []string{"budget"})
	limitedTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_ratelimit_limited_total",
		Help: "Requests answered 429 because their budget was spent: per client (client), a client's batch items (items) or per source address without a valid token (unauthenticated).",
	}, []string{"budget"})
)

// Metric label values of the kinds of budget.
const (
	budgetClient          = "client"
	budgetItems           = "items"
	budgetUnauthenticated = "unauthenticated"
	budgetProbes          = "probes"
)

// rateLimiter draws on the budgets in Redis with go-redis/redis_rate: GCRA
// in one Lua script, one round trip per request, Redis's own clock, so
// every replica sees the same budget.
type rateLimiter struct {
	cfg     RateLimitConfig
	client  *redis.Client
	limiter *redis_rate.Limiter
	logger  log.Logger

	mu     sync.Mutex
	downAt time.Time // last failure; Redis is left alone for cfg.Backoff

	// leases are the requests a replica has already charged to a busy
	// client's budget in Redis and not yet served (see lease).
	leases *lru.Cache[string, *lease]
	// now is the leases' clock: time.Now, but where a test drives it so
	// that how fast its calls come cannot lapse a lease (Redis keeps its
	// own clock for the budgets).
	now func() time.Time
	// calls counts the round trips to Redis (for tests of the batching).
	calls atomic.Int64
	// shares answer while Redis cannot.
	shares *localBudgets
	// policies are the RateLimit-Policy fields of the client budgets.
	policies map[string][]string
}

// A lease lets a busy client's requests (or a busy address's calls without
// a token) be charged to Redis in small batches instead of one round trip
// each, which is most of what the
// limiter costs a request. A replica that sees a client call again within
// leaseWindow, with plenty of budget left (at least leaseFloor requests),
// charges leaseSize requests at once and serves the next ones from them
// for leaseWindow; requests left over when the window ends are not given
// back. So the shared budget is never exceeded (every request is charged
// in Redis before it is served); what the batching costs is that a busy
// client may pay for up to leaseSize-1 requests per replica it did not
// make, at the end of a burst, and that RateLimit's r is as of the last
// charge. Near the end of a budget (under leaseFloor) every request is
// charged alone, so the last requests and the 429 are exact.
type lease struct {
	mu        sync.Mutex
	left      int           // charged, not yet served
	until     time.Time     // when left lapses
	lastCall  time.Time     // the last charge in Redis
	remaining int           // r of the last charge
	reset     time.Duration // t of the last charge
}

const (
	leaseSize   = 8
	leaseWindow = 50 * time.Millisecond
	leaseFloor  = 100
)

func newRateLimiter(cfg RateLimitConfig, logger log.Logger) (*rateLimiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled {
		return nil, nil
	}
	opts, err := cfg.Redis.Options()
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Every wait is bounded by the request's own deadline (cfg.Timeout):
	// a hung Redis costs a request at most that, and then cfg.Backoff
	// spares the requests after it.
	opts.ContextTimeoutEnabled = true
	opts.DialTimeout = max(cfg.Timeout, 100*time.Millisecond)
	opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout
	opts.MaxRetries, opts.DialerRetries = -1, 1
	client := cfg.Redis.NewClient(opts)
	leases, err := lru.New[string, *lease](leaseClients)
	if err != nil {
		return nil, err
	}
	return &rateLimiter{cfg: cfg, client: client, limiter: redis_rate.NewLimiter(client), logger: logger, leases: leases, now: time.Now,
		shares: newLocalBudgets(cfg.Replicas), policies: policies(cfg)}, nil
}

func (l *rateLimiter) Close() error { return l.client.Close() }

// Ready reports whether Redis answers, for /readyz; the check is optional
// there, because the limit fails open: without Redis each replica's share
// of the budgets answers, and no call is refused for Redis's sake.
func (l *rateLimiter) Ready(ctx context.Context) error {
	if err := l.client.Ping(ctx).Err(); err != nil {
		return errors.New("the rate limits' Redis cannot be reached (each replica keeps clients to its share of their budgets)")
	}
	return nil
}

// draw takes n requests (0: only looks) from budget b under key: in
// Redis, or, when Redis cannot answer, from this replica's share of it
// (localBudgets), and the metric says so.
func (l *rateLimiter) draw(ctx context.Context, kind, key string, b Budget, n int) *redis_rate.Result {
	return l.take(ctx, kind, key, b, n, false)
}

// take asks Redis for n requests of budget b under key (atMost: as many of
// them as it holds); when Redis is down, slow or resting, this replica's
// share answers instead.
func (l *rateLimiter) take(ctx context.Context, kind, key string, b Budget, n int, atMost bool) *redis_rate.Result {
	if l.resting() {
		return l.local(kind, key, b, n, atMost)
	}
	allow := l.limiter.AllowN
	if atMost {
		allow = l.limiter.AllowAtMost
	}
	l.calls.Add(1)
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	limit := redis_rate.Limit{Rate: b.Quota, Burst: b.Quota, Period: b.Window}
	if owed := l.shares.settle(key); owed > 0 {
		// What this replica's share served while Redis was away, before
		// anything new: as much of it as the budget still holds.
		if _, err := l.limiter.AllowAtMost(ctx, l.cfg.KeyPrefix+key, limit, owed); err != nil {
			l.shares.owe(key, b, owed)
			l.fail(err)
			return l.local(kind, key, b, n, atMost)
		}
	}
	res, err := allow(ctx, l.cfg.KeyPrefix+key, limit, n)
	if err != nil {
		l.fail(err)
		return l.local(kind, key, b, n, atMost)
	}
	l.shares.follow(key, b, res.Remaining)
	return res
}

// local draws on this replica's share of the budget, Redis being away.
func (l *rateLimiter) local(kind, key string, b Budget, n int, atMost bool) *redis_rate.Result {
	failOpenTotal.WithLabelValues(kind).Inc()
	res := l.shares.take(key, b, n, atMost)
	if res.Allowed == 0 && n > 0 {
		localLimitedTotal.WithLabelValues(kind).Inc()
	}
	return res
}

func (l *rateLimiter) resting() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.downAt.IsZero() && time.Since(l.downAt) < l.cfg.Backoff
}

func (l *rateLimiter) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.downAt) >= l.cfg.Backoff {
		level.Warn(l.logger).Log("msg", "rate limits fail open to each replica's share of the budgets: Redis did not answer", "backoff", l.cfg.Backoff, "err", err)
	}
	l.downAt = time.Now()
}

// policyOf is the RateLimit-Policy field of the client with token subject
// sub, made once per budget: every answer carries it. (Shared by the
// answers; a second policy is appended to it, which copies it.)
func (l *rateLimiter) policyOf(sub string) []string {
	if p, ok := l.policies[sub]; ok {
		return p
	}
	return l.policies[""]
}

// policies is the RateLimit-Policy field of each budget of cfg: by client,
// and the default's under "".
func policies(cfg RateLimitConfig) map[string][]string {
	p := map[string][]string{"": {cfg.Default.policyHeader()}}
	for sub, b := range cfg.Clients {
		p[sub] = []string{b.policyHeader()}
	}
	return p
}

// budgetOf is the budget of the client with token subject sub.
func (l *rateLimiter) budgetOf(sub string) Budget {
	if b, ok := l.cfg.Clients[sub]; ok {
		return b
	}
	return l.cfg.Default
}

// Clients charges each authenticated request to its client's budget and
// says where it stands in the RateLimit-Policy and RateLimit headers of
// whatever answer follows; over the budget it answers 429.
func (l *rateLimiter) Clients(next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub := auth.Subject(r.Context())
		b := l.budgetOf(sub)
		h := w.Header()
		h["Ratelimit-Policy"] = l.policyOf(sub)
		key := "client:" + sub
		if remaining, reset, ok := l.fromLease(key); ok {
			h["Ratelimit"] = []string{b.stateHeader(remaining, reset)}
			next.ServeHTTP(l.costly(w, r, sub, b), r)
			return
		}
		res := l.charge(r.Context(), budgetClient, key, b)
		if res == nil {
			next.ServeHTTP(l.costly(w, r, sub, b), r)
			return
		}
		h["Ratelimit"] = []string{b.stateHeader(res.Remaining, res.ResetAfter)}
		if res.Allowed == 0 {
			limitedTotal.WithLabelValues(budgetClient).Inc()
			httpx.WriteProblem(r.Context(), tooMany(fmt.Sprintf("this client's budget of %d requests per %s is spent", b.Quota, b.Window), res.RetryAfter), w)
			return
		}
		next.ServeHTTP(l.costly(w, r, sub, b), r)
	})
}

// costly charges what a service declares an answer cost beyond the one
// request already charged (httpx.CostHeader: a passport, by its size),
// when the answer's header goes out, and keeps the declaration from the
// client. Only the answers of resources the catalog names ChargedBySize
// are watched (the proxy strips the declaration from every other): the
// watch is an allocation and a layer under every write. The answer is on its way by then, so it is not refused: the
// budget gives what it has, up to the cost (at most the whole quota, so
// that a large answer is possible at all), and the client's next calls
// wait for it to refill.
func (l *rateLimiter) costly(w http.ResponseWriter, r *http.Request, sub string, b Budget) http.ResponseWriter {
	if !chargedBySize(r) {
		return w
	}
	return &costWriter{ResponseWriter: w, charge: func(cost int) {
		res := l.drawAtMost(r.Context(), "client:"+sub, b, min(cost, b.Quota)-1)
		if res != nil {
			w.Header()["Ratelimit"] = []string{b.stateHeader(res.Remaining, res.ResetAfter)}
		}
	}}
}

// chargedBySize reports whether r's answer may declare its cost
// (catalog.Resource.ChargedBySize).
func chargedBySize(r *http.Request) bool {
	res, _, ok := resourceOf(r)
	return ok && res.ChargedBySize
}

// drawAtMost takes up to n requests from budget b under key, as many as
// it holds; nil when n is less than one.
func (l *rateLimiter) drawAtMost(ctx context.Context, key string, b Budget, n int) *redis_rate.Result {
	if n < 1 {
		return nil
	}
	return l.take(ctx, budgetClient, key, b, n, true)
}

// costWriter sees an answer's header before it goes out, for costly.
type costWriter struct {
	http.ResponseWriter
	charge func(cost int)
	sent   bool
}

func (c *costWriter) WriteHeader(status int) {
	if !c.sent {
		c.sent = true
		h := c.Header()
		if v := h.Get(httpx.CostHeader); v != "" {
			h.Del(httpx.CostHeader)
			if cost, err := strconv.Atoi(v); err == nil && cost > 1 && status < http.StatusMultipleChoices {
				c.charge(cost)
			}
		}
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *costWriter) Write(p []byte) (int, error) {
	if !c.sent {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (the proxy
// flushes a streamed answer through it).
func (c *costWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// itemBudgetOf is the batch item budget of the client with token subject
// sub; a client's own is named "<sub>:items" in the headers.
func (l *rateLimiter) itemBudgetOf(sub string) Budget {
	if b, ok := l.cfg.ClientItems[sub]; ok {
		b.Name = sub + ":items"
		return b
	}
	return l.cfg.Items
}

// Items charges a batch's items to its client's item budget, after
// Clients has charged the request: an item of a batch costs the services
// far less than a request, but a batch of 1,000 is not one request's
// work either, and without this a client could write a thousand times its
// request budget. The answer carries the item budget as a second
// RateLimit-Policy and RateLimit; over it, 429 and the batch is not passed
// on. It runs after limitBodies, which reads a batch's body whole.
func (l *rateLimiter) Items(next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := wholeBody(r)
		if !ok || !isBatch(r) {
			next.ServeHTTP(w, r)
			return
		}
		sub := auth.Subject(r.Context())
		b := l.itemBudgetOf(sub)
		items := batchItems(body)
		h := w.Header()
		h["Ratelimit-Policy"] = append(h["Ratelimit-Policy"], b.policyHeader())
		res := l.draw(r.Context(), budgetItems, "items:"+sub, b, items)
		if res == nil {
			next.ServeHTTP(w, r)
			return
		}
		remaining := res.Remaining
		if res.Allowed == 0 {
			// A refused draw says 0; items that a smaller batch could
			// still use are left, and the header says how many: the
			// quota less what has not yet refilled.
			remaining = int((b.Window - res.ResetAfter) / (b.Window / time.Duration(b.Quota)))
		}
		h["Ratelimit"] = append(h["Ratelimit"], b.stateHeader(remaining, res.ResetAfter))
		if res.Allowed == 0 {
			limitedTotal.WithLabelValues(budgetItems).Inc()
			httpx.WriteProblem(r.Context(), tooMany(fmt.Sprintf("this client's budget of %d batch items per %s cannot take this batch's %d items now",
				b.Quota, b.Window, items), res.RetryAfter), w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// maxBatchItems is the most items a batch may carry (endpoints.MaxBatch;
// a test holds the two equal: the gateway does not link the services' kit).
const maxBatchItems = 1000

// isBatch reports whether r is a batch: a create, POST /<resources>/batch
// (/actions/batch, /assets/batch, /actions/action_documents/batch), or
// an update, PATCH /<resources>/batch (/actions/batch, /assets/batch).
func isBatch(r *http.Request) bool {
	return (r.Method == http.MethodPost || r.Method == http.MethodPatch) && strings.HasSuffix(r.URL.Path, "/batch")
}

// batchItems counts the items of a batch body, {"items": [...]}, without
// decoding them. A body that is no batch the services accept (not such an
// object, no items, more than maxBatchItems) counts as 1: the service
// refuses it whole (400, 422) and writes nothing.
func batchItems(body []byte) int {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 1
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 1
		}
		if key != "items" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 1
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return 1
		}
		n := 0
		for dec.More() {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 1
			}
			n++
		}
		if n == 0 || n > maxBatchItems {
			return 1
		}
		return n
	}
	return 1
}

// leaseClients bounds the clients and addresses whose leases a replica
// remembers.
const leaseClients = 4096

// fromLease serves a request from the lease of key (a client's budget, or
// an address's), if it has one that has not lapsed; it returns the state
// the headers give.
func (l *rateLimiter) fromLease(key string) (int, time.Duration, bool) {
	ls, ok := l.leases.Get(key)
	if !ok {
		return 0, 0, false
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.left == 0 || !l.now().Before(ls.until) {
		return 0, 0, false
	}
	ls.left--
	return ls.remaining + ls.left, ls.reset, true
}

// charge takes this request from budget b under key (a client's, or an
// address's) in Redis: alone, or, for a busy caller well within its
// budget, with the next leaseSize-1.
func (l *rateLimiter) charge(ctx context.Context, kind, key string, b Budget) *redis_rate.Result {
	ls, ok := l.leases.Get(key)
	if !ok {
		ls = &lease{}
		if existing, found, _ := l.leases.PeekOrAdd(key, ls); found {
			ls = existing
		}
	}
	ls.mu.Lock()
	now := l.now()
	busy := now.Sub(ls.lastCall) < leaseWindow && ls.remaining >= leaseFloor && b.Quota >= leaseFloor
	ls.mu.Unlock()
	n := 1
	if busy {
		n = leaseSize
	}
	res := l.draw(ctx, kind, key, b, n)
	if res != nil && res.Allowed == 0 && n > 1 {
		res = l.draw(ctx, kind, key, b, 1) // not enough for a batch: this one alone
		n = 1
	}
	if res == nil {
		return nil
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.lastCall, ls.remaining, ls.reset = now, res.Remaining, res.ResetAfter
	if res.Allowed > 0 && n > 1 {
		// Concurrent charges of one client add up rather than overwrite;
		// what was left of a lapsed lease is gone (fromLease no longer
		// serves it), so it must not count again.
		if !now.Before(ls.until) {
			ls.left = 0
		}
		ls.left, ls.until = ls.left+n-1, now.Add(leaseWindow)
		return &redis_rate.Result{Limit: res.Limit, Allowed: 1, Remaining: res.Remaining + n - 1, ResetAfter: res.ResetAfter, RetryAfter: res.RetryAfter}
	}
	return res
}

// tooMany is the 429 problem, with the seconds to wait (at least 1).
func tooMany(detail string, wait time.Duration) *apperr.Error {
	return apperr.New(apperr.KindRateLimited, detail+"; retry after the time Retry-After gives").
		WithHeader("Retry-After", strconv.Itoa(max(ceilSeconds(wait), 1)))
}

// Probes limits the calls to what it wraps (/readyz) per source address:
// that endpoint answers without a token, so without a budget one address
// could call it as fast as it likes. Without Redis the replica's share of
// the budget answers, as for every budget; /readyz's snapshot still bounds
// what the calls cost.
func (l *rateLimiter) Probes(next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := l.cfg.Probes
		res := l.draw(r.Context(), budgetProbes, "probes:"+clientAddress(r, l.cfg.TrustedProxies), b, 1)
		if res != nil && res.Allowed == 0 {
			limitedTotal.WithLabelValues(budgetProbes).Inc()
			err := tooMany(fmt.Sprintf("too many calls of this probe from this address (%d per %s)", b.Quota, b.Window), res.RetryAfter).
				WithHeader("RateLimit-Policy", b.policyHeader()).WithHeader("RateLimit", b.stateHeader(0, res.ResetAfter))
			httpx.WriteProblem(r.Context(), err, w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// addressGate limits the calls without a valid token per source address
// (auth.Gate): before a signature is checked it looks at the address's
// budget, and a call that turns out to have no valid token is charged to
// it. So a flood of forged tokens is answered 429 once the address's
// budget is spent, without the gateway verifying each. Concurrent calls
// from one address that all look before any is charged may overshoot the
// budget by their number: the point is the flood, not an exact count.
type addressGate struct{ l *rateLimiter }

func (g addressGate) Admit(r *http.Request) error {
	b := g.l.cfg.Unauthenticated
	res := g.l.draw(r.Context(), budgetUnauthenticated, g.key(r), b, 0)
	// With n=0 the script charges nothing and always "allows"; the budget
	// is spent when less than one request remains.
	if res == nil || res.Remaining >= 1 {
		return nil
	}
	// Remaining < 1: ResetAfter (until the whole quota is back) less the
	// time of quota-1 requests is when the next one fits.
	wait := res.ResetAfter - time.Duration(b.Quota-1)*(b.Window/time.Duration(b.Quota))
	return g.limited(b, res, wait)
}

// Refused charges the call to its address's budget. A busy address well
// within it is charged in leases, as a busy client is (charge): a caller
// reading the log's tiles makes thousands of calls a second, and one
// round trip to Redis each was a third of what the gateway spent on them.
func (g addressGate) Refused(r *http.Request) error {
	b := g.l.cfg.Unauthenticated
	key := g.key(r)
	if _, _, ok := g.l.fromLease(key); ok {
		return nil
	}
	res := g.l.charge(r.Context(), budgetUnauthenticated, key, b)
	if res == nil || res.Allowed > 0 {
		return nil
	}
	return g.limited(b, res, res.RetryAfter)
}

func (g addressGate) limited(b Budget, res *redis_rate.Result, wait time.Duration) error {
	limitedTotal.WithLabelValues(budgetUnauthenticated).Inc()
	err := tooMany(fmt.Sprintf("too many calls without a valid token from this address (%d per %s)", b.Quota, b.Window), wait)
	return err.WithHeader("RateLimit-Policy", b.policyHeader()).
		WithHeader("RateLimit", b.stateHeader(0, res.ResetAfter))
}

// charge takes up to cost-1 more requests (the call itself was one) from
// the address's budget, as many as it holds (at most its whole quota).
func (g addressGate) charge(r *http.Request, cost int) {
	b := g.l.cfg.Unauthenticated
	if n := min(cost, b.Quota) - 1; n >= 1 {
		g.l.take(r.Context(), budgetUnauthenticated, g.key(r), b, n, true)
	}
}

func (g addressGate) key(r *http.Request) string {
	return "address:" + clientAddress(r, g.l.cfg.TrustedProxies)
}

// clientAddress is who sent r (httpx.SourceNetwork: the TCP peer, or
// the nearest untrusted address in X-Forwarded-For behind a trusted
// proxy; an IPv6 caller by its /64), the key of its address's budget.
func clientAddress(r *http.Request, trusted Prefixes) string {
	if source := httpx.SourceNetwork(r, trusted); source.IsValid() {
		return source.String()
	}
	return r.RemoteAddr
}
