// Package cache is the Redis cache in front of the find operations.
//
// Correctness first: a find after any write must see that write. Instead of
// guessing which cached finds a write affects, every write bumps one
// generation counter per service, and cache keys include the generation a
// reader saw *before* it read the database. A reader that raced a write thus
// stores its (possibly old) answer under the old generation, which nobody
// reads any more.
//
// Redis is optional: when it is down or slow, finds go to PostgreSQL and
// nothing fails. After any Redis error the cache stays off for a short
// back-off, and before it is used again the generation is bumped, because a
// write may have happened while its own bump could not reach Redis.
package cache

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
)

// Config of the Redis connection.
type Config struct {
	URL     string
	TTL     time.Duration
	Timeout time.Duration
	Backoff time.Duration
}

// RegisterFlags adds the redis.* flags (env REDIS_URL, REDIS_TTL, ...).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "redis.url", "", "Redis URL for the find cache; empty disables caching")
	fs.DurationVar(&c.TTL, "redis.ttl", 5*time.Minute, "lifetime of a cached find; also bounds staleness after a partitioned write")
	fs.DurationVar(&c.Timeout, "redis.timeout", 100*time.Millisecond, "per-operation timeout; a slower Redis is treated as down")
	fs.DurationVar(&c.Backoff, "redis.backoff", time.Second, "how long to bypass Redis after an error")
}

// Connect returns a traced client, or nil when no URL is configured.
func Connect(cfg Config) (*redis.Client, error) {
	if cfg.URL == "" {
		return nil, nil
	}
	opts, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("cache: parse redis.url: %w", err)
	}
	opts.DialTimeout = 2 * cfg.Timeout
	opts.ReadTimeout = cfg.Timeout
	opts.WriteTimeout = cfg.Timeout
	opts.MaxRetries = -1 // fail fast and fall back to the database instead
	client := redis.NewClient(opts)
	if err := redisotel.InstrumentTracing(client); err != nil {
		return nil, fmt.Errorf("cache: tracing: %w", err)
	}
	return client, nil
}

// metrics count cache outcomes: hit, miss, error and bypass (Redis is in
// back-off or not configured).
var metrics = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "find_cache_requests_total",
	Help: "Find cache lookups by result.",
}, []string{"namespace", "result"})

// Finds caches find results of one namespace (one service).
type Finds struct {
	client    *redis.Client
	namespace string
	cfg       Config
	logger    log.Logger

	mu       sync.Mutex
	downAt   time.Time // last error; the cache is bypassed for cfg.Backoff
	mustBump bool      // bump the generation before the next use
}

// NewFinds returns the cache; a nil client yields a cache that always misses.
func NewFinds(client *redis.Client, namespace string, cfg Config, logger log.Logger) *Finds {
	return &Finds{client: client, namespace: namespace, cfg: cfg, logger: logger}
}

// Entry is the result of a lookup. Store must be given the value read from
// the database after the lookup, so that it lands under the generation that
// was current before the read.
type Entry struct {
	f   *Finds
	key string // empty: do not store
}

// lookupScript reads the generation and the entry under it in one round trip.
var lookupScript = redis.NewScript(`
local gen = redis.call('GET', KEYS[1]) or '0'
return {gen, redis.call('GET', ARGV[1] .. gen .. ':' .. ARGV[2])}
`)

// Get looks key up and decodes a hit into dst.
func (f *Finds) Get(ctx context.Context, key string, dst any) (Entry, bool) {
	if !f.usable(ctx) {
		f.count("bypass")
		return Entry{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	res, err := lookupScript.Run(ctx, f.client, []string{f.genKey()}, f.entryPrefix(), key).Slice()
	if err != nil {
		f.fail(err)
		f.count("error")
		return Entry{}, false
	}
	gen, _ := res[0].(string)
	entry := Entry{f: f, key: f.entryPrefix() + gen + ":" + key}
	raw, ok := res[1].(string)
	if !ok {
		f.count("miss")
		return entry, false
	}
	if err := json.Unmarshal([]byte(raw), dst); err != nil {
		f.count("miss")
		return entry, false
	}
	f.count("hit")
	return entry, true
}

// Store caches v under the entry's generation. Failures only cost speed.
func (e Entry) Store(ctx context.Context, v any) {
	if e.key == "" {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.f.cfg.Timeout)
	defer cancel()
	if err := e.f.client.Set(ctx, e.key, raw, e.f.cfg.TTL).Err(); err != nil {
		e.f.fail(err)
	}
}

// Invalidate makes every cached find of the namespace stale. Writers call it
// after their transaction commits and before they answer.
func (f *Finds) Invalidate(ctx context.Context) {
	if f.client == nil {
		return
	}
	if err := f.bump(ctx); err != nil {
		f.mu.Lock()
		f.mustBump = true
		f.mu.Unlock()
		f.fail(err)
	}
}

// usable reports whether Redis may be used now, bumping the generation
// first when an earlier failure may have hidden a write.
func (f *Finds) usable(ctx context.Context) bool {
	if f.client == nil {
		return false
	}
	f.mu.Lock()
	inBackoff := time.Since(f.downAt) < f.cfg.Backoff
	mustBump := f.mustBump
	f.mu.Unlock()
	if inBackoff {
		return false
	}
	if mustBump {
		if err := f.bump(ctx); err != nil {
			f.fail(err)
			return false
		}
		f.mu.Lock()
		f.mustBump = false
		f.mu.Unlock()
	}
	return true
}

func (f *Finds) bump(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.Timeout)
	defer cancel()
	return f.client.Incr(ctx, f.genKey()).Err()
}

func (f *Finds) fail(err error) {
	f.mu.Lock()
	first := time.Since(f.downAt) >= f.cfg.Backoff
	f.downAt = time.Now()
	f.mustBump = true
	f.mu.Unlock()
	if first {
		level.Warn(f.logger).Log("msg", "find cache unavailable; serving finds from the database", "err", err)
	}
}

func (f *Finds) count(result string) { metrics.WithLabelValues(f.namespace, result).Inc() }

func (f *Finds) genKey() string      { return f.namespace + ":gen" }
func (f *Finds) entryPrefix() string { return f.namespace + ":find:" }
