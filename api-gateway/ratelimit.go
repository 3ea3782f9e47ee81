package gateway

import (
	"flag"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
)

// RateLimitConfig bounds each machine client's request rate. Limits are per
// gateway replica; they protect the services from one runaway integration
// rather than meter usage.
type RateLimitConfig struct {
	PerSecond float64
	Burst     int
}

// RegisterFlags adds rate-limit.* (env RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST).
func (c *RateLimitConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.Float64Var(&c.PerSecond, "rate-limit.per-second", 0, "sustained requests per second per client (token sub); 0 disables limiting")
	fs.IntVar(&c.Burst, "rate-limit.burst", 100, "requests a client may send at once above the sustained rate")
}

type rateLimiter struct {
	cfg     RateLimitConfig
	mu      sync.Mutex
	clients map[string]*clientLimit
	swept   time.Time
}

type clientLimit struct {
	limiter *rate.Limiter
	seen    time.Time
}

func newRateLimiter(cfg RateLimitConfig) *rateLimiter {
	return &rateLimiter{cfg: cfg, clients: map[string]*clientLimit{}, swept: time.Now()}
}

// Middleware answers 429 with Retry-After once a client exceeds its rate.
func (l *rateLimiter) Middleware(next http.Handler) http.Handler {
	if l.cfg.PerSecond <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lim := l.limiterFor(auth.Subject(r.Context()))
		res := lim.Reserve()
		if delay := res.Delay(); delay > 0 {
			res.Cancel()
			secs := int(math.Ceil(delay.Seconds()))
			httpx.WriteProblem(r.Context(), apperr.New(apperr.KindRateLimited, "too many requests from this client").
				WithHeader("Retry-After", strconv.Itoa(max(secs, 1))), w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (l *rateLimiter) limiterFor(sub string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.swept) > time.Minute { // forget idle clients so the map stays small
		for k, c := range l.clients {
			if now.Sub(c.seen) > 10*time.Minute {
				delete(l.clients, k)
			}
		}
		l.swept = now
	}
	c, ok := l.clients[sub]
	if !ok {
		c = &clientLimit{limiter: rate.NewLimiter(rate.Limit(l.cfg.PerSecond), l.cfg.Burst)}
		l.clients[sub] = c
	}
	c.seen = now
	return c.limiter
}
