// Package cache is the Redis cache in front of the find operations.
//
// Correctness first: a find after any write must see that write. Entries
// are keyed by generation counters that writes bump after they commit. A
// reader reads the generations *before* it reads the database and stores
// its answer under them, so a reader that raced a write stores under
// generations nobody reads any more.
//
// Generations are scoped, so a write only makes stale the finds it can
// change: a find names the scopes it depends on (say "every person find"
// and "finds for this name"), a write names the scopes it touches (a new
// person touches only finds for its own name). Every find also depends on
// one epoch per namespace.
//
// Redis is optional: when it is down or slow, finds go to PostgreSQL and
// nothing fails. After any Redis error the cache stays off for a short
// back-off, and before it is used again the epoch is bumped, because a
// write may have happened while its own bump could not reach Redis.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// Config of the find cache: where its Redis is (one server, or the primary
// Sentinel names) and how it is used.
type Config struct {
	Connection
	TTL     time.Duration
	Timeout time.Duration
	Backoff time.Duration
}

// RegisterFlags adds the redis.* flags (env REDIS_URL, REDIS_MASTER_NAME, REDIS_TTL, ...).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Connection.RegisterFlags(fs, "Redis URL for the find cache; empty disables caching")
	fs.DurationVar(&c.TTL, "redis.ttl", 5*time.Minute, "lifetime of a cached find; also bounds staleness after a partitioned write")
	fs.DurationVar(&c.Timeout, "redis.timeout", 100*time.Millisecond, "per-operation timeout; a slower Redis is treated as down")
	fs.DurationVar(&c.Backoff, "redis.backoff", time.Second, "how long to bypass Redis after an error")
}

// Connect returns a client (traced when telemetry.TracingEnabled), or nil
// when no URL is configured. With Sentinel it follows the primary through
// failovers.
func Connect(cfg Config) (*redis.Client, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	opts, err := cfg.Options()
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	opts.DialTimeout = 2 * cfg.Timeout
	opts.ReadTimeout = cfg.Timeout
	opts.WriteTimeout = cfg.Timeout
	opts.MaxRetries = -1 // fail fast and fall back to the database instead
	client := cfg.NewClient(opts)
	// Without an exporter the tracing hook only makes spans nobody sees,
	// and reads the caller's file and line for each command: a tenth of a
	// cached find's CPU. Call Connect after telemetry.SetupTracing.
	if telemetry.TracingEnabled() {
		if err := redisotel.InstrumentTracing(client); err != nil {
			return nil, fmt.Errorf("cache: tracing: %w", err)
		}
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
	client    redis.UniversalClient
	namespace string
	prefix    string // keyPrefix(namespace)
	cfg       Config
	logger    log.Logger

	mu       sync.Mutex
	downAt   time.Time // last error; the cache is bypassed for cfg.Backoff
	mustBump bool      // bump the generation before the next use

	bumps pendingBumps // Invalidate's scopes waiting for the next bump
}

// pendingBumps gathers the scopes of concurrent Invalidates, so that the
// writes of one moment share one round trip to Redis instead of each
// taking its own (a commit queue's trick): whoever finds no bump running
// starts one, which takes every scope gathered so far, and keeps going
// while more have gathered meanwhile.
type pendingBumps struct {
	mu      sync.Mutex
	scopes  map[string]struct{}
	waiters []chan error
	ctx     context.Context // the first waiter's, for the round trip's trace
	running bool
}

// NewFinds returns the cache; a nil client yields a cache that always misses.
// Its keys share one hash slot (the namespace's hash tag), so every script
// and pipeline of it runs on Redis Cluster too. A client of one primary
// (Connect's) bumps the epoch on each new primary it is moved to.
func NewFinds(client redis.UniversalClient, namespace string, cfg Config, logger log.Logger) *Finds {
	f := &Finds{namespace: namespace, cfg: cfg, logger: logger, prefix: keyPrefix(namespace)}
	switch c := client.(type) {
	case nil:
	case *redis.Client:
		if c == nil {
			break
		}
		f.client = c
		c.AddHook(&primaryWatch{bump: func(ctx context.Context, primary string) error {
			return incrAt(ctx, c, primary, f.genKey(epoch))
		}})
	default:
		f.client = client
	}
	return f
}

// keyPrefix starts every key of a namespace: the namespace itself (a
// service's Redis user may touch only keys that start with its name) and
// a hash tag of it, which puts them all in one hash slot.
func keyPrefix(namespace string) string {
	sum := sha256.Sum256([]byte(namespace))
	return namespace + ":{" + hex.EncodeToString(sum[:4]) + "}:"
}

// Entry is the result of a lookup. Store must be given the value read from
// the database after the lookup, so that it lands under the generation that
// was current before the read.
type Entry struct {
	f   *Finds
	key string // empty: do not store
	tag string // the generations the lookup read
}

// lookupScript reads the generations of every KEYS but the last and the
// entry, the last, in one round trip. An entry holds the generations it
// was stored under ("<tag>:<answer>"): it answers only while they are
// current. Every key the script touches is in KEYS, so it runs on Redis
// Cluster as well (the keys share a slot, see keyPrefix).
var lookupScript = redis.NewScript(`
local n = #KEYS - 1
local gens = {}
for i = 1, n do gens[i] = redis.call('GET', KEYS[i]) or '0' end
local tag = table.concat(gens, '.')
local entry = redis.call('GET', KEYS[n + 1])
if entry and string.sub(entry, 1, #tag + 1) == tag .. ':' then
	return {tag, string.sub(entry, #tag + 2)}
end
return {tag, false}
`)

// Get looks key up among the finds that depend on scopes and decodes a hit
// into dst.
func (f *Finds) Get(ctx context.Context, scopes []string, key string, dst any) (Entry, bool) {
	entry, raw, hit := f.lookup(ctx, scopes, key)
	if !hit {
		return entry, false
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		f.count("miss")
		return entry, false
	}
	f.count("hit")
	return entry, true
}

// GetJSON is Get for an answer that is sent as JSON: a hit is the JSON
// stored, as it is, for the caller to send without decoding and encoding
// it again. Its key must name the answer's shape (ShapeOf), so that
// entries a version with another shape stored are never sent as they are.
func (f *Finds) GetJSON(ctx context.Context, scopes []string, key string) (Entry, []byte, bool) {
	entry, raw, hit := f.lookup(ctx, scopes, key)
	if hit {
		f.count("hit")
	}
	return entry, raw, hit
}

// lookup reads the entry of key under the current generations of scopes,
// in one round trip; a miss (or an error, or a bypass) is counted here.
func (f *Finds) lookup(ctx context.Context, scopes []string, key string) (Entry, []byte, bool) {
	if !f.usable(ctx) {
		f.count("bypass")
		return Entry{}, nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	keys := make([]string, 0, len(scopes)+2)
	keys = append(keys, f.genKey(epoch))
	for _, s := range scopes {
		keys = append(keys, f.genKey(s))
	}
	entryKey := f.prefix + "find:" + key
	res, err := lookupScript.Run(ctx, f.client, append(keys, entryKey)).Slice()
	if err != nil {
		f.fail(err)
		f.count("error")
		return Entry{}, nil, false
	}
	tag, _ := res[0].(string)
	entry := Entry{f: f, key: entryKey, tag: tag}
	raw, ok := res[1].(string)
	if !ok {
		f.count("miss")
		return entry, nil, false
	}
	return entry, []byte(raw), true
}

// Store caches v under the entry's generation. Failures only cost speed.
func (e Entry) Store(ctx context.Context, v any) {
	if e.key == "" {
		return
	}
	raw, err := model.Marshal(v) // as the answer renders it
	if err != nil {
		return
	}
	e.StoreJSON(ctx, raw)
}

// StoreJSON caches raw, the JSON of an answer, under the entry's
// generation. Failures only cost speed.
func (e Entry) StoreJSON(ctx context.Context, raw []byte) {
	if e.key == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.f.cfg.Timeout)
	defer cancel()
	value := make([]byte, 0, len(e.tag)+1+len(raw))
	value = append(append(append(value, e.tag...), ':'), raw...)
	if err := e.f.client.Set(ctx, e.key, value, e.f.cfg.TTL).Err(); err != nil {
		e.f.fail(err)
	}
}

// Through answers a find from the cache when it holds key under scopes;
// otherwise it calls load, which reads the database, and caches what load
// returns when keep is true (a find that created its answer does not keep
// it, so that answer's 201 is never replayed). The lookup comes before the
// load, so a write committing in between makes the stored answer stale.
func Through[T any](ctx context.Context, f *Finds, scopes []string, key string, load func() (v T, keep bool, err error)) (T, error) {
	var cached T
	entry, hit := f.Get(ctx, scopes, key, &cached)
	if hit {
		return cached, nil
	}
	v, keep, err := load()
	if err == nil && keep {
		entry.Store(ctx, v)
	}
	return v, err
}

// Invalidate makes stale every cached find that depends on one of scopes.
// Writers call it after their transaction commits and before they answer.
// It returns once a bump that began after it was called has ended, so a
// find that starts after it returns sees the new generations; concurrent
// calls share that bump (pendingBumps). It waits at most two bumps, each
// bounded by cfg.Timeout.
func (f *Finds) Invalidate(ctx context.Context, scopes ...string) {
	if f.client == nil || len(scopes) == 0 {
		return
	}
	done := make(chan error, 1)
	b := &f.bumps
	b.mu.Lock()
	if b.scopes == nil {
		b.scopes = map[string]struct{}{}
	}
	for _, s := range scopes {
		b.scopes[s] = struct{}{}
	}
	if len(b.waiters) == 0 {
		b.ctx = context.WithoutCancel(ctx)
	}
	b.waiters = append(b.waiters, done)
	if !b.running {
		b.running = true
		go f.bumpPending()
	}
	b.mu.Unlock()
	if err := <-done; err != nil {
		f.fail(err) // which also schedules an epoch bump
	}
}

// bumpPending bumps what has gathered, in one pipeline, and answers its
// waiters, until nothing is left.
func (f *Finds) bumpPending() {
	b := &f.bumps
	for {
		b.mu.Lock()
		if len(b.waiters) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		scopes := slices.Collect(maps.Keys(b.scopes))
		waiters, ctx := b.waiters, b.ctx
		b.scopes, b.waiters, b.ctx = map[string]struct{}{}, nil, nil
		b.mu.Unlock()
		err := f.bump(ctx, scopes...)
		for _, w := range waiters {
			w <- err
		}
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
		if err := f.bump(ctx, epoch); err != nil {
			f.fail(err)
			return false
		}
		f.mu.Lock()
		f.mustBump = false
		f.mu.Unlock()
	}
	return true
}

func (f *Finds) bump(ctx context.Context, scopes ...string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.Timeout)
	defer cancel()
	_, err := f.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range scopes {
			p.Incr(ctx, f.genKey(s))
		}
		return nil
	})
	return err
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

// Scope names a set of finds by a kind and the values that identify it
// (a name, a registration number). The values are hashed: keys carry no
// personal data and stay short.
func Scope(kind string, values ...string) string {
	h := sha256.New()
	for _, v := range values {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return kind + ":" + hex.EncodeToString(h.Sum(nil)[:12])
}

// Key names one find's entry by its kind and normalised criteria. The
// criteria (names, birth dates) are hashed, as scopes are, so key names
// carry no personal data (they show in SCAN, MONITOR and the slow log);
// each part is quoted before hashing, so free text holding the separator
// cannot make two different criteria share a key.
func Key(kind string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Quote(p)))
		h.Write([]byte{'|'})
	}
	// 128 bits: two criteria sharing a key would serve one find the
	// other's answer, so this must never happen by chance.
	return kind + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// Commands are the Redis commands the cache sends, go-redis's connection
// handshake included: an ACL user allowed these and its namespace's keys
// (the namespace starts with the service's name) is all a service needs.
var Commands = []string{"hello", "ping", "get", "set", "incr", "evalsha", "eval"}

// epoch is the scope every find depends on; bumping it empties the cache.
const epoch = "epoch"

// ShapeOf names the JSON shape of T: a short hash of its fields, their
// JSON names and types, down through nested structs (a type with its own
// JSON encoding counts by its name). A version of a service that changes
// an answer's shape reads and writes other keys than the version before
// it, so neither sends the other's stored JSON as its own.
func ShapeOf[T any]() string {
	h := sha256.New()
	writeShape(h, reflect.TypeFor[T](), map[reflect.Type]bool{})
	return hex.EncodeToString(h.Sum(nil)[:6])
}

func writeShape(w io.Writer, t reflect.Type, seen map[reflect.Type]bool) {
	fmt.Fprintf(w, "%s(", t.String())
	defer io.WriteString(w, ")") //nolint:errcheck // a hash never fails
	if seen[t] || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		writeShape(w, t.Elem(), seen)
	case reflect.Map:
		writeShape(w, t.Key(), seen)
		writeShape(w, t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(w, "%s %q %t ", f.Name, f.Tag.Get("json"), f.Anonymous)
			writeShape(w, f.Type, seen)
		}
	}
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func (f *Finds) genKey(scope string) string { return f.prefix + "gen:" + scope }
