package idp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"golang.org/x/time/rate"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/job"
)

// ValidityConfig is how the token validity list is kept and served. Every
// replica keeps the list in memory, read from the database every Refresh
// in the background, and answers every verifier from there: the list is
// anonymous, asked for about once a second by every process of the
// registry, and must be answered while the database is away.
type ValidityConfig struct {
	// Refresh is how often the list is read from the database.
	Refresh time.Duration
	// PerAddress is how many reads of the list one source address may make
	// a second (twice as many at once); over it, 429 with Retry-After.
	PerAddress int
}

// Defaults of the token-validity.* flags.
const (
	DefaultValidityRefresh    = time.Second
	DefaultValidityPerAddress = 50
)

// RegisterFlags adds the token-validity.* flags (env TOKEN_VALIDITY_REFRESH, ...).
func (c *ValidityConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Refresh, "token-validity.refresh", DefaultValidityRefresh,
		"how often each replica reads the token validity list from the database into memory, whence it is served")
	fs.IntVar(&c.PerAddress, "token-validity.per-address", DefaultValidityPerAddress,
		"reads of the token validity list allowed per second from one source address (twice as many at once), then 429; every verifier reads it about once a second (0: no limit)")
}

func (c ValidityConfig) validate() error {
	if c.Refresh < 0 || c.PerAddress < 0 {
		return fmt.Errorf("idp: the token-validity.* settings must not be negative")
	}
	return nil
}

var validityListAge = promauto.NewGauge(prometheus.GaugeOpts{
	Name: "idp_token_validity_age_seconds",
	Help: "Age of the token validity list this replica serves from memory: how long ago it was read from the database (0 before the first read).",
})

// validityDoc is the list as served: its body, ETag, and when the read of
// the database it came from began.
type validityDoc struct {
	body   []byte
	etag   string
	readAt time.Time
}

// validityList keeps the token validity list in memory.
type validityList struct {
	clients *Clients
	cfg     ValidityConfig
	trusted httpx.Networks
	logger  log.Logger
	now     func() time.Time // the wall clock of the Age header, not the secrets' expiry clock

	current atomic.Pointer[validityDoc]
	// reading is held by the one read of the database at a time: the
	// background refresh and the reads that verifiers ask for with
	// Cache-Control: no-cache share it, so no number of requests makes more
	// than one query at a time.
	reading chan struct{}
	limits  *lru.Cache[netip.Prefix, *rate.Limiter]
	failing atomic.Bool // the last refresh failed (logged once)
}

func newValidityList(clients *Clients, cfg ValidityConfig, trusted httpx.Networks, logger log.Logger) *validityList {
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultValidityRefresh
	}
	l := &validityList{clients: clients, cfg: cfg, trusted: trusted, logger: logger, now: time.Now, reading: make(chan struct{}, 1)}
	l.limits, _ = lru.New[netip.Prefix, *rate.Limiter](throttleEntries) // fails only for a size below 1
	return l
}

// readSince returns a list whose read of the database began at or after
// since, reading it unless another read did meanwhile.
func (l *validityList) readSince(ctx context.Context, since time.Time) (*validityDoc, error) {
	select {
	case l.reading <- struct{}{}:
	case <-ctx.Done():
		return nil, apperr.Wrap(apperr.KindUnavailable, "the token validity list is being read; retry shortly", ctx.Err())
	}
	defer func() { <-l.reading }()
	if doc := l.current.Load(); doc != nil && !doc.readAt.Before(since) {
		return doc, nil
	}
	readAt := l.now()
	valid, err := l.clients.TokenValidity(ctx)
	if err != nil {
		return nil, err
	}
	list := auth.TokenValidity{Clients: make(map[string]int64, len(valid))}
	for id, generation := range valid {
		list.Clients[auth.ClientKey(id)] = generation
	}
	body, err := json.Marshal(list) // map keys sorted: one list, one body
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	doc := &validityDoc{body: body, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`, readAt: readAt}
	if prev := l.current.Load(); prev == nil || !prev.readAt.After(readAt) {
		l.current.Store(doc)
	}
	return doc, nil
}

// refresh is one round of the background job: a read of the database, a
// failure logged once (and its end), the age metric set either way.
func (l *validityList) refresh(ctx context.Context) {
	readCtx, cancel := context.WithTimeout(ctx, max(l.cfg.Refresh, 5*time.Second))
	_, err := l.readSince(readCtx, l.now())
	cancel()
	switch {
	case ctx.Err() != nil:
		return
	case err != nil && !l.failing.Swap(true):
		level.Warn(l.logger).Log("msg", "the token validity list cannot be read from the database; the last one read is served, and its age grows", "err", err)
	case err == nil && l.failing.Swap(false):
		level.Info(l.logger).Log("msg", "the token validity list is read from the database again")
	}
	if doc := l.current.Load(); doc != nil {
		validityListAge.Set(l.now().Sub(doc.readAt).Seconds())
	}
}

// held fails until a list was read from the database: the probe of the
// replica's readiness.
func (l *validityList) held(context.Context) error {
	if l.current.Load() == nil {
		return errors.New("the token validity list has not been read from the database yet")
	}
	return nil
}

// job refreshes the list every cfg.Refresh until the process stops.
func (l *validityList) job() job.Job {
	return job.Every("token validity list", l.cfg.Refresh, l.refresh)
}

// allow spends one read of source's budget.
func (l *validityList) allow(source netip.Prefix) bool {
	if l.cfg.PerAddress <= 0 {
		return true
	}
	lim, ok := l.limits.Get(source)
	if !ok {
		lim = rate.NewLimiter(rate.Limit(l.cfg.PerAddress), 2*l.cfg.PerAddress)
		if prev, found, _ := l.limits.PeekOrAdd(source, lim); found {
			lim = prev
		}
	}
	return lim.Allow()
}

// serve answers the list from memory, throttled per source address. A
// request with Cache-Control: no-cache (a verifier that met a token newer
// than its list) gets a list read from the database after it arrived. Age
// says how long ago the list was read from the database, so that a
// verifier knows how old what it holds is even when a replica serves
// from memory through an outage of the database.
func (l *validityList) serve(w http.ResponseWriter, r *http.Request) {
	if !l.allow(httpx.SourceNetwork(r, l.trusted)) {
		w.Header().Set("Retry-After", "1")
		httpx.WriteProblem(r.Context(), apperr.New(apperr.KindRateLimited,
			"too many reads of the token validity list from this address; retry in 1 s"), w)
		return
	}
	doc := l.current.Load()
	if doc == nil || noCache(r) {
		var err error
		if doc, err = l.readSince(r.Context(), l.now()); err != nil {
			httpx.WriteProblem(r.Context(), err, w)
			return
		}
	}
	h := w.Header()
	h.Set("ETag", doc.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Age", strconv.Itoa(int(max(l.now().Sub(doc.readAt), 0)/time.Second)))
	if r.Header.Get("If-None-Match") == doc.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(doc.body)
}

// noCache reports whether the request asks for a list read after it
// (Cache-Control: no-cache, RFC 9111 §5.2.1.4).
func noCache(r *http.Request) bool {
	for _, v := range r.Header.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(d), "no-cache") {
				return true
			}
		}
	}
	return false
}
