package cache_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/redis/go-redis/v9"

	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/tools/testkit"
)

func TestConnectionSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		conn cache.Connection
		err  string // part of the error; "" for none
	}{
		{"one server", cache.Connection{URL: "redis://:pw@127.0.0.1:6379/0"}, ""},
		{"no redis at all", cache.Connection{}, ""},
		{"sentinel", cache.Connection{URL: "redis://parties:pw@sentinel/0", MasterName: "registry",
			SentinelAddrs: []string{"redis-sentinel-0:26379", "[::1]:26379"}}, ""},
		{"master name without sentinels", cache.Connection{URL: "redis://:pw@x/0", MasterName: "registry"}, "redis.sentinel-addrs is empty"},
		{"sentinels without a master name", cache.Connection{URL: "redis://:pw@x/0", SentinelAddrs: []string{"s:26379"}}, "redis.master-name is empty"},
		{"sentinel without the primary's login", cache.Connection{MasterName: "registry", SentinelAddrs: []string{"s:26379"}}, "redis.url is empty"},
		{"a sentinel without a port", cache.Connection{URL: "redis://:pw@x/0", MasterName: "registry", SentinelAddrs: []string{"s"}}, `"s" is not host:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.conn.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			}
		})
	}
}

// The cache finds its primary through Sentinel and follows it through a
// failover; on the new primary it bumps the epoch before its first
// lookup there, since the failover may have lost the last bumps of the
// old primary (Redis replicates after it answers).
func TestFollowsThePrimaryThroughAFailover(t *testing.T) {
	t.Parallel()
	dir := testkit.ServerDir(t)
	credentials := filepath.Join(dir, "redis.credentials")
	primary := testkit.StartRedisWith(t, testkit.RedisOptions{DataDir: filepath.Join(dir, "a"), CredentialsFile: credentials})
	replica := testkit.StartRedisWith(t, testkit.RedisOptions{DataDir: filepath.Join(dir, "b"), CredentialsFile: credentials, ReplicaOf: primary.Addr})
	sentinelPassword := testkit.NewSecret(t)
	sentinel := testkit.StartSentinel(t, testkit.SentinelOptions{DataDir: filepath.Join(dir, "s"), MasterName: "registry",
		Master: primary.Addr, MasterPassword: primary.Password, Password: sentinelPassword, Quorum: 1,
		DownAfter: time.Second, FailoverTimeout: 5 * time.Second})

	c := cfg
	// The URL's host is never dialled: Sentinel says where the primary is.
	c.Connection = cache.Connection{URL: "redis://:" + primary.Password + "@unused.invalid:1/0", MasterName: "registry",
		SentinelAddrs: []string{sentinel.Addr}, SentinelPassword: sentinelPassword}
	client, err := cache.Connect(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	namespace := "svc:failover"
	f := cache.NewFinds(client, namespace, c, log.NewNopLogger())
	ctx := t.Context()
	var got string
	e, _ := f.Get(ctx, scopes, "before", &got)
	e.Store(ctx, "v")
	if _, hit := f.Get(ctx, scopes, "before", &got); !hit {
		t.Fatal("no hit through Sentinel's primary")
	}
	admin := func(r *testkit.Redis) *redis.Client {
		a := redis.NewClient(&redis.Options{Addr: r.Addr, Password: r.Password})
		t.Cleanup(func() { a.Close() })
		return a
	}
	// The replica may still be making its first copy of the primary.
	testkit.Eventually(t, "the replica has the entry", 60*time.Second, func() bool {
		n, err := admin(primary).Wait(ctx, 1, time.Second).Result()
		return err == nil && n == 1
	})

	sentinels := redis.NewSentinelClient(&redis.Options{Addr: sentinel.Addr, Password: sentinelPassword})
	t.Cleanup(func() { sentinels.Close() })
	if err := sentinels.Failover(ctx, "registry").Err(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "Sentinel names the replica as the primary", 30*time.Second, func() bool {
		p, err := sentinel.Primary(ctx)
		return err == nil && p == replica.Addr
	})
	// Until the old primary is made a replica it may still take the
	// client's writes: what counts is an entry stored on the new one.
	newPrimary := admin(replica)
	testkit.Eventually(t, "the cache stores and finds entries on the new primary", 30*time.Second, func() bool {
		var got string
		e, _ := f.Get(ctx, scopes, "after", &got)
		e.Store(ctx, "v")
		_, hit := f.Get(ctx, scopes, "after", &got)
		keys, err := newPrimary.Keys(ctx, namespace+":*find:after").Result()
		return hit && err == nil && len(keys) == 1
	})
	if epochs := genValues(t, newPrimary, namespace, "epoch"); len(epochs) != 1 || epochs[0] == "" {
		t.Fatalf("the epoch on the new primary is %q; the cache did not bump it before its first lookup there", epochs)
	}
	if _, hit := f.Get(ctx, scopes, "before", &got); hit {
		t.Fatal("an entry stored before the failover was served on the new primary")
	}
}

// A failover may lose the last generation bumps of the old primary: the
// new one may hold an entry stored under generations a write has since
// made stale. The cache bumps the epoch on a primary it has not used
// before its first lookup there, so such an entry is never served. Here
// the client is moved from one server to another by its dialer alone, with
// no error on the way (which would bump the epoch by itself).
func TestANewPrimaryGetsItsEpochBumpedFirst(t *testing.T) {
	t.Parallel()
	dir := testkit.ServerDir(t)
	credentials := filepath.Join(dir, "redis.credentials")
	old := testkit.StartRedisWith(t, testkit.RedisOptions{DataDir: filepath.Join(dir, "old"), CredentialsFile: credentials})
	next := testkit.StartRedisWith(t, testkit.RedisOptions{DataDir: filepath.Join(dir, "new"), CredentialsFile: credentials})
	namespace, ctx := "svc:moved", t.Context()

	// The new primary holds an entry of before a write whose bump it lost.
	direct := cache.NewFinds(redis.NewClient(&redis.Options{Addr: next.Addr, Password: next.Password}), namespace, cfg, log.NewNopLogger())
	var got string
	e, _ := direct.Get(ctx, scopes, "k", &got)
	e.Store(ctx, "stale")

	var target atomic.Pointer[string]
	target.Store(&old.Addr)
	var d net.Dialer
	client := redis.NewClient(&redis.Options{Password: old.Password, MaxRetries: -1,
		// Every command on a new connection: the move needs no error.
		ConnMaxLifetime: time.Millisecond,
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, *target.Load())
		}})
	t.Cleanup(func() { client.Close() })
	f := cache.NewFinds(client, namespace, cfg, log.NewNopLogger())
	if _, hit := f.Get(ctx, scopes, "k", &got); hit {
		t.Fatal("hit on the old primary, which holds nothing")
	}
	target.Store(&next.Addr)
	time.Sleep(5 * time.Millisecond)
	if _, hit := f.Get(ctx, scopes, "k", &got); hit {
		t.Fatalf("served %q, an entry the new primary held from before the move", got)
	}
	admin := redis.NewClient(&redis.Options{Addr: next.Addr, Password: next.Password})
	t.Cleanup(func() { admin.Close() })
	if epochs := genValues(t, admin, namespace, "epoch"); len(epochs) != 1 || epochs[0] != "1" {
		t.Fatalf("the epoch on the new primary is %q, want it bumped once", epochs)
	}
}

// The cache's scripts and pipelines run on Redis Cluster: every key a
// lookup touches is declared and they share the namespace's hash slot
// (a script that read an undeclared key, or keys of several slots, is
// refused there).
func TestRunsOnRedisCluster(t *testing.T) {
	t.Parallel()
	node := testkit.StartRedisWith(t, testkit.RedisOptions{DataDir: filepath.Join(testkit.ServerDir(t), "node"), Cluster: true})
	admin := redis.NewClient(&redis.Options{Addr: node.Addr, Password: node.Password})
	t.Cleanup(func() { admin.Close() })
	ctx := t.Context()
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the one-node cluster serves every slot", 30*time.Second, func() bool {
		info, err := admin.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{node.Addr}, Password: node.Password, MaxRetries: -1})
	t.Cleanup(func() { cluster.Close() })
	namespace := "svc:cluster"
	f := cache.NewFinds(cluster, namespace, cfg, log.NewNopLogger())
	storeFindInvalidate(t, f, admin, namespace, "Redis Cluster refused the lookup script or the bump")
}

// genValues reads the generation of scope in namespace, straight from a
// server (one value per key found; there is one).
func genValues(t *testing.T, admin *redis.Client, namespace, scope string) []string {
	t.Helper()
	keys, err := admin.Keys(t.Context(), namespace+":*gen:"+scope).Result()
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, k := range keys {
		v, err := admin.Get(t.Context(), k).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	return values
}
