package gateway

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
)

// publicCache keeps the answers a service declares that anyone may keep
// for good: an anonymous GET's 200 whose Cache-Control says public and
// immutable (a full tile of the log's hashes, C2SP tlog-tiles). The
// gateway answers such a path again from memory, as any shared cache in
// front of the registry may, instead of asking the service: that hop was
// most of what a tile cost through the gateway. Only calls without a
// token read or fill it (what a token's caller sees is the service's to
// say each time), and only after the caller's address was charged for
// the call (withoutToken), so the per-address budget counts every tile.
// An answer that varies (Vary), sets a cookie or has no length is never
// kept.
type publicCache struct {
	entries *lru.Cache[string, *publicAnswer]
	size    atomic.Int64 // bytes of the bodies kept
	mu      sync.Mutex   // serialises additions and the evictions they cause
}

// publicAnswer is one kept answer: the headers the service gave (not the
// gateway's own, such as the request id) and the body.
type publicAnswer struct {
	header http.Header
	body   []byte
	etag   string
}

const (
	// publicCacheBytes bounds the bodies kept: 32 MiB, four thousand full
	// tiles, as many as the events service keeps itself.
	publicCacheBytes = 32 << 20
	// publicAnswerBytes bounds one body kept (a full tile is 8 KiB).
	publicAnswerBytes = 64 << 10
)

var (
	publicCacheAnswers = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_public_cache_requests_total",
		Help: "Calls without a token to paths whose answers may be kept for good (the log's tiles): answered by the gateway from memory (hit) or passed on to the service (miss).",
	}, []string{"result"})
	publicCacheHits   = publicCacheAnswers.WithLabelValues("hit")
	publicCacheMisses = publicCacheAnswers.WithLabelValues("miss")
)

func newPublicCache() *publicCache {
	c := &publicCache{}
	// The count bound is never reached before the byte bound (bodies of
	// at least 8 bytes); the byte bound evicts.
	entries, err := lru.NewWithEvict(publicCacheBytes/8, func(_ string, a *publicAnswer) { c.size.Add(-int64(len(a.body))) })
	if err != nil {
		panic(err) // only a size below 1 is refused
	}
	c.entries = entries
	return c
}

// serve answers r from the cache, or passes it to next and keeps the
// answer when it may. Only GET fills the cache; GET and HEAD read it.
func (c *publicCache) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		next.ServeHTTP(w, r)
		return
	}
	// The path and query as the client sent them, which is what the
	// proxy passes on (before the gateway's normalisation).
	info := httpx.RequestInfoFrom(r.Context())
	key := info.Path + "?" + info.RawQuery
	if a, ok := c.entries.Get(key); ok {
		publicCacheHits.Inc()
		a.write(w, r)
		return
	}
	publicCacheMisses.Inc()
	if r.Method != http.MethodGet {
		next.ServeHTTP(w, r)
		return
	}
	rec := &keepingWriter{ResponseWriter: w, before: w.Header().Clone()}
	next.ServeHTTP(rec, r)
	if a := rec.answer(); a != nil {
		c.add(key, a)
	}
}

func (c *publicCache) add(key string, a *publicAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, found, _ := c.entries.PeekOrAdd(key, a); found {
		return
	}
	c.size.Add(int64(len(a.body)))
	for c.size.Load() > publicCacheBytes {
		if _, _, ok := c.entries.RemoveOldest(); !ok {
			return
		}
	}
}

// write sends the kept answer; a GET or HEAD whose If-None-Match names its
// strong ETag is a 304, as the service would answer it.
func (a *publicAnswer) write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range a.header {
		h[k] = v
	}
	if a.etag != "" {
		if inm := r.Header.Get("If-None-Match"); inm != "" && model.WeakMatch(inm, a.etag) {
			h.Del("Content-Length")
			h.Del("Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.body)
}

// keepingWriter passes an answer on to the client and keeps a copy of it
// when its header says it may be kept.
type keepingWriter struct {
	http.ResponseWriter
	before  http.Header // the gateway's own headers, set before the service answered
	keeping bool
	sent    bool
	length  int
	header  http.Header
	body    []byte
}

func (k *keepingWriter) WriteHeader(status int) {
	if !k.sent {
		k.sent = true
		k.keeping, k.length = keepable(status, k.Header())
		if k.keeping {
			k.header = http.Header{}
			for name, v := range k.Header() {
				if was, ok := k.before[name]; !ok || !slices.Equal(was, v) {
					k.header[name] = v
				}
			}
			k.header = k.header.Clone() // each value its own, capped slice
			k.body = make([]byte, 0, k.length)
		}
	}
	k.ResponseWriter.WriteHeader(status)
}

func (k *keepingWriter) Write(p []byte) (int, error) {
	if !k.sent {
		k.WriteHeader(http.StatusOK)
	}
	n, err := k.ResponseWriter.Write(p)
	if k.keeping {
		if err != nil || len(k.body)+n > k.length {
			k.keeping = false
		} else {
			k.body = append(k.body, p[:n]...)
		}
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (k *keepingWriter) Unwrap() http.ResponseWriter { return k.ResponseWriter }

// answer is what was kept, if the whole body went out.
func (k *keepingWriter) answer() *publicAnswer {
	if !k.keeping || len(k.body) != k.length {
		return nil
	}
	return &publicAnswer{header: k.header, body: k.body, etag: k.header.Get("ETag")}
}

// keepable says whether an answer may be kept for good, and its length:
// a 200 of known length, at most publicAnswerBytes, that says it is
// public and immutable and neither varies nor sets a cookie.
func keepable(status int, h http.Header) (bool, int) {
	if status != http.StatusOK || h.Get("Vary") != "" || h.Get("Set-Cookie") != "" {
		return false, 0
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if err != nil || n < 0 || n > publicAnswerBytes {
		return false, 0
	}
	var public, immutable bool
	for _, d := range strings.Split(h.Get("Cache-Control"), ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(name) {
		case "public":
			public = true
		case "immutable":
			immutable = true
		case "private", "no-store", "no-cache":
			return false, 0
		}
	}
	return public && immutable, n
}
