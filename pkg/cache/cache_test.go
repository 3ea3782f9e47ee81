package cache_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/redis/go-redis/v9"

	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// scopes are what the finds in these tests depend on.
var scopes = []string{"all", cache.Scope("name", "ada")}

var cfg = cache.Config{TTL: time.Minute, Timeout: 200 * time.Millisecond, Backoff: 100 * time.Millisecond}

func newFinds(t *testing.T, url string) *cache.Finds {
	return newFindsUnder(t, url, testkit.RedisPrefix(t))
}

// newFindsUnder is a replica's cache of finds over its own connection, its
// keys under prefix: replicas given one prefix share their entries.
func newFindsUnder(t *testing.T, url, prefix string) *cache.Finds {
	c := cfg
	c.URL = url
	client, err := cache.Connect(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return cache.NewFinds(client, prefix+"svc", c, log.NewNopLogger())
}

func TestHitMissAndInvalidate(t *testing.T) {
	t.Parallel()
	f := newFinds(t, testkit.RedisURL(t))
	var got string
	entry, hit := f.Get(t.Context(), scopes, "k", &got)
	if hit {
		t.Fatal("empty cache hit")
	}
	entry.Store(t.Context(), "v1")
	if _, hit := f.Get(t.Context(), scopes, "k", &got); !hit || got != "v1" {
		t.Fatalf("hit = %v, got %q", hit, got)
	}
	f.Invalidate(t.Context(), "all")
	if _, hit := f.Get(t.Context(), scopes, "k", &got); hit {
		t.Fatal("a find after a write must not be served from the cache")
	}
}

// A reader that looked up before a write and stores after it must not
// make its stale answer visible.
func TestStoreAfterConcurrentWriteStaysInvisible(t *testing.T) {
	t.Parallel()
	f := newFinds(t, testkit.RedisURL(t))
	var got string
	staleEntry, _ := f.Get(t.Context(), scopes, "k", &got) // reader starts, reads the database...
	f.Invalidate(t.Context(), "all")                       // ...a write commits meanwhile...
	staleEntry.Store(t.Context(), "old")                   // ...and the reader caches what it read
	if _, hit := f.Get(t.Context(), scopes, "k", &got); hit {
		t.Fatalf("stale value %q served after a write", got)
	}
}

func TestInvalidationIsSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := testkit.RedisURL(t)
	prefix := testkit.RedisPrefix(t)
	replica := func() *cache.Finds { return newFindsUnder(t, url, prefix) }
	a, b := replica(), replica()
	var got string
	e, _ := a.Get(t.Context(), scopes, "k", &got)
	e.Store(t.Context(), "v")
	b.Invalidate(t.Context(), "all")
	if _, hit := a.Get(t.Context(), scopes, "k", &got); hit {
		t.Fatal("replica a served a find that replica b's write invalidated")
	}
}

func TestRedisDownMeansMisses(t *testing.T) {
	t.Parallel()
	f := newFinds(t, "redis://127.0.0.1:"+strconv.Itoa(testkit.FreePort(t))+"/0")
	var got string
	start := time.Now()
	for range 20 {
		e, hit := f.Get(t.Context(), scopes, "k", &got)
		if hit {
			t.Fatal("hit without Redis")
		}
		e.Store(t.Context(), "v")
		f.Invalidate(t.Context(), "all")
	}
	// Not a timing assertion on speed, only on not hanging: twenty lookups
	// against a dead Redis must not each wait for a timeout.
	if time.Since(start) > 5*time.Second {
		t.Fatal("lookups against a dead Redis are not short-circuited")
	}
}

func TestDisabledCache(t *testing.T) {
	t.Parallel()
	f := cache.NewFinds(nil, "svc", cfg, log.NewNopLogger())
	var got string
	e, hit := f.Get(t.Context(), scopes, "k", &got)
	e.Store(t.Context(), "v")
	f.Invalidate(t.Context(), "all")
	if hit {
		t.Fatal("a disabled cache hit")
	}
}

// After Redis comes back, a write that happened while it was away must not
// be hidden by an entry cached before the outage. Redis keeps nothing on
// disk, so the outage keeps the server and its entries: the cache's user
// is turned off and its connections are dropped, so the write's bump
// cannot reach Redis at all.
func TestRecoveryBumpsGeneration(t *testing.T) {
	t.Parallel()
	admin, user, _, f := limitedUser(t)
	ctx := t.Context()
	var got string
	e, _ := f.Get(ctx, scopes, "k", &got)
	e.Store(ctx, "before-outage")
	if _, hit := f.Get(ctx, scopes, "k", &got); !hit {
		t.Fatal("no hit before the outage; the test would prove nothing")
	}
	for _, cmd := range [][]any{{"ACL", "SETUSER", user, "off"}, {"CLIENT", "KILL", "USER", user}} {
		if err := admin.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	f.Invalidate(ctx, "all") // the write's bump cannot reach Redis
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(cfg.Backoff + 50*time.Millisecond)
	if _, hit := f.Get(ctx, scopes, "k", &got); hit {
		t.Fatalf("served %q cached before an outage during which a write happened", got)
	}
}

// A write makes stale only the finds of the scopes it names.
func TestScopedInvalidation(t *testing.T) {
	t.Parallel()
	f := newFinds(t, testkit.RedisURL(t))
	ada := []string{"people", cache.Scope("person", "ada")}
	bob := []string{"people", cache.Scope("person", "bob")}
	var got string
	e, _ := f.Get(t.Context(), ada, "ada", &got)
	e.Store(t.Context(), "ada-1")
	e, _ = f.Get(t.Context(), bob, "bob", &got)
	e.Store(t.Context(), "bob-1")

	f.Invalidate(t.Context(), cache.Scope("person", "bob")) // e.g. a new person named bob
	if _, hit := f.Get(t.Context(), ada, "ada", &got); !hit || got != "ada-1" {
		t.Errorf("ada's find was invalidated by a write about bob")
	}
	if _, hit := f.Get(t.Context(), bob, "bob", &got); hit {
		t.Errorf("bob's find survived a write about bob")
	}
	f.Invalidate(t.Context(), "people") // e.g. an organization rename shown on every person
	if _, hit := f.Get(t.Context(), ada, "ada", &got); hit {
		t.Errorf("a write to a shared scope left ada's find cached")
	}
}

func TestScopeHidesValues(t *testing.T) {
	t.Parallel()
	s := cache.Scope("person", "Ada", "Lovelace")
	if strings.Contains(s, "Ada") || s == cache.Scope("person", "AdaL", "ovelace") {
		t.Errorf("scope %q leaks its values or is ambiguous", s)
	}
}

func TestKeyKeepsPartsApart(t *testing.T) {
	t.Parallel()
	if cache.Key("asset", `a|"b`, "c") == cache.Key("asset", "a", `b"|c`) {
		t.Error("criteria holding the separator share a key")
	}
	if cache.Key("asset", "a") == cache.Key("asset_type", "a") {
		t.Error("kinds share a key")
	}
}

func TestThrough(t *testing.T) {
	t.Parallel()
	f := newFinds(t, testkit.RedisURL(t))
	loads := 0
	load := func(v string, keep bool, err error) func() (string, bool, error) {
		return func() (string, bool, error) { loads++; return v, keep, err }
	}
	ctx := t.Context()
	if got, err := cache.Through(ctx, f, scopes, "made", load("created", false, nil)); err != nil || got != "created" {
		t.Fatalf("first: %q %v", got, err)
	}
	if got, _ := cache.Through(ctx, f, scopes, "made", load("found", true, nil)); got != "found" || loads != 2 {
		t.Fatalf("an answer load did not keep was served from the cache: %q after %d loads", got, loads)
	}
	if got, _ := cache.Through(ctx, f, scopes, "made", load("other", true, nil)); got != "found" || loads != 2 {
		t.Fatalf("a kept answer was not served from the cache: %q after %d loads", got, loads)
	}
	if _, err := cache.Through(ctx, f, scopes, "failed", load("", true, errors.New("down"))); err == nil {
		t.Fatal("the load's error was lost")
	}
	if got, _ := cache.Through(ctx, f, scopes, "failed", load("ok", true, nil)); got != "ok" {
		t.Fatalf("a failed load was cached: %q", got)
	}
}

func TestKeyHidesCriteria(t *testing.T) {
	t.Parallel()
	k := cache.Key("person", "øyvind", "hansen", "1980-01-31")
	for _, value := range []string{"øyvind", "hansen", "1980"} {
		if strings.Contains(k, value) {
			t.Errorf("key %q carries %q", k, value)
		}
	}
	if !strings.HasPrefix(k, "person:") {
		t.Errorf("key %q does not start with its kind", k)
	}
}

// limitedUser makes an ACL user allowed only cache.Commands on the keys of
// a namespace of its own, as tools/devstack makes one per service, and
// returns an admin client, the user's name and the cache through it.
func limitedUser(t *testing.T) (admin *redis.Client, user, namespace string, f *cache.Finds) {
	t.Helper()
	opts, err := redis.ParseURL(testkit.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	admin = redis.NewClient(opts)
	t.Cleanup(func() { admin.Close() })
	namespace = testkit.RedisPrefix(t) + "svc"
	user, password := "t_user_"+strings.TrimSuffix(strings.TrimPrefix(namespace, "t_"), ":svc"), "user-secret"
	rule := []any{"ACL", "SETUSER", user, "reset", "on", ">" + password, "~" + namespace + ":*", "-@all"}
	for _, c := range cache.Commands {
		rule = append(rule, "+"+c)
	}
	if err := admin.Do(t.Context(), rule...).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	c := cfg
	c.URL = fmt.Sprintf("redis://%s:%s@%s/0", user, password, opts.Addr)
	client, err := cache.Connect(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return admin, user, namespace, cache.NewFinds(client, namespace, c, log.NewNopLogger())
}

// A service's Redis user may run cache.Commands on its namespace's keys and
// nothing else; every cache operation works through it.
func TestWorksAsAUserLimitedToItsCommandsAndNamespace(t *testing.T) {
	t.Parallel()
	admin, _, namespace, f := limitedUser(t)
	storeFindInvalidate(t, f, admin, namespace, "a command it needs is missing from cache.Commands")
}

// storeFindInvalidate stores an entry, finds it, invalidates its scope
// and checks that the bump reached the server (admin's) and the entry is
// no longer served; unlike names what a failed step would mean.
func storeFindInvalidate(t *testing.T, f *cache.Finds, admin *redis.Client, namespace, unlike string) {
	t.Helper()
	ctx := t.Context()
	var got string
	entry, hit := f.Get(ctx, scopes, "k", &got)
	if hit {
		t.Fatal("empty cache hit")
	}
	entry.Store(ctx, "v1")
	if _, hit := f.Get(ctx, scopes, "k", &got); !hit || got != "v1" {
		t.Fatalf("no hit after a store (hit %v, %q): %s", hit, got, unlike)
	}
	f.Invalidate(ctx, "all")
	if gens := genValues(t, admin, namespace, "all"); len(gens) != 1 || gens[0] != "1" {
		t.Fatalf("the invalidation did not reach Redis (generations %q): %s", gens, unlike)
	}
	if _, hit := f.Get(ctx, scopes, "k", &got); hit {
		t.Fatal("a find after a write was served from the cache")
	}
}

// pipelineCounter counts the pipelines a client sends (a bump is one).
type pipelineCounter struct{ n atomic.Int64 }

func (c *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (c *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (c *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// Writers that invalidate at the same moment share round trips, and each
// still returns only once its scopes are bumped: a find stored before any
// of them is stale after every one of them.
func TestConcurrentInvalidatesShareBumps(t *testing.T) {
	t.Parallel()
	c := cfg
	c.URL = testkit.RedisURL(t)
	client, err := cache.Connect(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	counter := &pipelineCounter{}
	client.AddHook(counter)
	f := cache.NewFinds(client, testkit.RedisPrefix(t)+"svc", c, log.NewNopLogger())

	const writers = 64
	keys := make([][]string, writers)
	for i := range writers {
		keys[i] = []string{"all", cache.Scope("name", strconv.Itoa(i))}
		var got string
		e, _ := f.Get(t.Context(), keys[i], "k"+strconv.Itoa(i), &got)
		e.Store(t.Context(), "before")
	}
	before := counter.n.Load()
	start := make(chan struct{})
	var wg sync.WaitGroup
	stale := make([]bool, writers)
	for i := range writers {
		wg.Go(func() {
			<-start
			f.Invalidate(t.Context(), cache.Scope("name", strconv.Itoa(i)))
			var got string
			_, hit := f.Get(t.Context(), keys[i], "k"+strconv.Itoa(i), &got)
			stale[i] = !hit
		})
	}
	close(start)
	wg.Wait()
	for i, ok := range stale {
		if !ok {
			t.Errorf("writer %d: its find was still served after Invalidate returned", i)
		}
	}
	// Each Get is one script call, not a pipeline: what was counted is
	// the bumps.
	if bumps := counter.n.Load() - before; bumps < 1 || bumps >= writers {
		t.Errorf("%d writers took %d bumps; want at least one and fewer than one each", writers, bumps)
	} else {
		t.Logf("%d writers took %d bumps", writers, bumps)
	}
}
