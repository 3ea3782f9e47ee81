package cache

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Watermark is a number one service raises in Redis and others read: the
// highest version of a log the owner has committed, or is committing (see
// pkg/access, the assets' access change log). A reader that has read the
// log up to the watermark needs not read it again; a reader that cannot
// read the watermark (no Redis, Redis down or slow, the key gone) reads
// the log, so losing Redis costs speed, never an answer.
//
// The key lives for a lifetime that every raise renews: a watermark its
// owner can no longer raise (Redis unreachable from it, the owner
// configured without Redis) is gone within that lifetime, and then every
// reader reads the log.
type Watermark struct {
	client  redis.UniversalClient // nil: no Redis, never read
	key     string
	timeout time.Duration
	backoff time.Duration

	mu     sync.Mutex
	downAt time.Time // last error: Redis is not asked for backoff
}

// Watermark is the owner's watermark name, a key of the namespace (so its
// Redis user may write it, and readers are granted its name alone).
func (f *Finds) Watermark(name string) *Watermark {
	return f.WatermarkAt(f.prefix + name)
}

// WatermarkAt is a watermark of another service, by the key it names
// (Watermark.Key), read through this service's Redis.
func (f *Finds) WatermarkAt(key string) *Watermark {
	w := &Watermark{client: f.client, key: key, timeout: f.cfg.Timeout, backoff: f.cfg.Backoff}
	if w.timeout <= 0 {
		w.timeout = 100 * time.Millisecond
	}
	if w.backoff <= 0 {
		w.backoff = time.Second
	}
	return w
}

// Key is where the watermark is kept ("" without Redis).
func (w *Watermark) Key() string {
	if w == nil || w.client == nil {
		return ""
	}
	return w.key
}

// raiseScript sets the key to the greater of its value and ARGV[1] and
// renews its lifetime (ARGV[2] ms): a raise never lowers the watermark,
// however late it arrives.
var raiseScript = redis.NewScript(`
local v = tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '-1')
if cur ~= nil and cur > v then v = cur end
redis.call('SET', KEYS[1], string.format('%d', v), 'PX', ARGV[2])
return v
`)

// Raise makes the watermark at least v, for lifetime from now. Without
// Redis there is none to raise (and none a reader could trust): nil.
func (w *Watermark) Raise(ctx context.Context, v int64, lifetime time.Duration) error {
	if w == nil || w.client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	defer cancel()
	return raiseScript.Run(ctx, w.client, []string{w.key}, v, lifetime.Milliseconds()).Err()
}

// Read returns the watermark; ok is false when there is none to trust:
// no Redis, an error (Redis is then not asked again for the back-off),
// or no key.
func (w *Watermark) Read(ctx context.Context) (v int64, ok bool) {
	if w == nil || w.client == nil {
		return 0, false
	}
	w.mu.Lock()
	inBackoff := time.Since(w.downAt) < w.backoff
	w.mu.Unlock()
	if inBackoff {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	raw, err := w.client.Get(ctx, w.key).Result()
	if errors.Is(err, redis.Nil) {
		return 0, false
	}
	if err == nil {
		if v, err = strconv.ParseInt(raw, 10, 64); err == nil {
			return v, true
		}
	}
	w.mu.Lock()
	w.downAt = time.Now()
	w.mu.Unlock()
	return 0, false
}
