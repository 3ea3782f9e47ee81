package gateway

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/testkit"
)

// tileService stands in for the events service's tiles: a full tile kept
// for good, a partial one for ten seconds, and the checkpoint never; it
// counts the calls of each path.
type tileService struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

var fullTile = bytes.Repeat([]byte{0xab}, 8192)

func newTileService(t *testing.T) *tileService {
	s := &tileService{calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls[r.URL.Path]++
		s.mu.Unlock()
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		body := []byte(`{"size":1}`)
		switch r.URL.Path {
		case "/log/tile/0/000":
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
			h.Set("ETag", `"tile-0-0"`)
			body = fullTile
		case "/log/tile/0/001.p/5":
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Cache-Control", "public, max-age=10")
			body = fullTile[:5*32]
		default:
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "no-store")
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *tileService) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

// A full tile, which the service says anyone may keep for good, is asked
// of the service once and then answered by the gateway to every caller
// without a token, each call still charged to its address's budget; the
// answers that may not be kept, and every call with a token, still reach
// the service.
func TestImmutableAnswersAreKeptForCallersWithoutToken(t *testing.T) {
	t.Parallel()
	tiles := newTileService(t)
	f := newGateway(t, func(c *Config) {
		limited(testkit.RedisURL(t), testkit.RedisPrefix(t), func(c *RateLimitConfig) {
			c.Unauthenticated = Budget{"unauthenticated", 12, time.Hour}
		})(c)
		u := tiles.URL
		c.Upstreams["events"] = &u
	})
	const full = "/log/tile/0/000"
	first := testkit.Expect(t, f.client.Do(t, "GET", full, "", nil), 200)
	again := testkit.Expect(t, f.client.Do(t, "GET", full, "", nil), 200)
	if n := tiles.count(full); n != 1 {
		t.Errorf("the full tile reached the service %d times, want once", n)
	}
	if !bytes.Equal(again.Raw, fullTile) || !bytes.Equal(first.Raw, fullTile) {
		t.Errorf("bodies of %d and %d bytes, want the tile's %d", len(first.Raw), len(again.Raw), len(fullTile))
	}
	for _, h := range []string{"Content-Type", "Cache-Control", "ETag", "Content-Length", "X-Content-Type-Options"} {
		if again.Header.Get(h) != first.Header.Get(h) || again.Header.Get(h) == "" {
			t.Errorf("%s: %q kept, %q from the service", h, again.Header.Get(h), first.Header.Get(h))
		}
	}
	if id := again.Header.Get("X-Request-Id"); id == "" || id == first.Header.Get("X-Request-Id") {
		t.Errorf("the kept answer's X-Request-Id %q is not its own call's", id)
	}
	testkit.Expect(t, f.client.Do(t, "HEAD", full, "", nil), 200)
	testkit.Expect(t, f.client.Do(t, "GET", full, "", nil, "If-None-Match", `"tile-0-0"`), 304)
	if n := tiles.count(full); n != 1 {
		t.Errorf("HEAD and a conditional GET reached the service: %d calls", n)
	}

	// With a token the service answers, every time.
	ro := f.issuer.ReadOnly(t)
	testkit.Expect(t, f.client.Do(t, "GET", full, ro, nil), 200)
	if n := tiles.count(full); n != 2 {
		t.Errorf("a call with a token was answered from what was kept (%d calls reached the service)", n)
	}
	// A partial tile and the checkpoint change: never kept.
	for _, p := range []string{"/log/tile/0/001.p/5", "/log/checkpoint"} {
		testkit.Expect(t, f.client.Do(t, "GET", p, "", nil), 200)
		testkit.Expect(t, f.client.Do(t, "GET", p, "", nil), 200)
		if n := tiles.count(p); n != 2 {
			t.Errorf("%s reached the service %d times of 2", p, n)
		}
	}
	// Eight calls without a token so far, each charged: four more are
	// within the budget, the next is refused although the tile is kept.
	for range 4 {
		testkit.Expect(t, f.client.Do(t, "GET", full, "", nil), 200)
	}
	testkit.Expect(t, f.client.Do(t, "GET", full, "", nil), 429)
}

// An address calling without a token thousands of times (a verifier
// reading tiles) is charged in leases, as a busy client is: two replicas
// still let through no more than its budget, and ask Redis far less than
// once a call.
func TestBusyAddressIsChargedInLeases(t *testing.T) {
	t.Parallel()
	const quota = 300
	tiles := newTileService(t)
	url, prefix := testkit.RedisURL(t), testkit.RedisPrefix(t)
	budget := func(c *Config) {
		limited(url, prefix, func(c *RateLimitConfig) {
			c.Unauthenticated = Budget{"unauthenticated", quota, time.Hour}
		})(c)
		u := tiles.URL
		c.Upstreams["events"] = &u
	}
	a := newGateway(t, budget)
	b := a
	b.client.BaseURL = newGatewayServer(t, a.issuer, a.upstream, budget)
	served := 0
	for i := range quota + 60 {
		if r := []fixture{a, b}[i%2].client.Do(t, "GET", "/log/keys", "", nil); r.Status == 200 {
			served++
		} else if r.Status != 429 {
			t.Fatalf("call %d: %d", i, r.Status)
		}
	}
	// A lease lapses after 50 ms unused, so on a loaded machine more of
	// the budget may be lost than between quick calls: the bounds below
	// are what holds however slow the calls are, and what leasing alone
	// explains (without it, every call to a replica is a round trip).
	if served > quota || served < quota*3/4 {
		t.Errorf("%d of %d calls served with a budget of %d: want at most the budget, and most of it", served, quota+60, quota)
	}
	if calls, made := a.gateway.limiter.calls.Load(), int64(quota+60)/2; calls > made*4/5 {
		t.Errorf("%d round trips to Redis for %d calls to the replica: the busy address was not charged in leases", calls, made)
	}
}
