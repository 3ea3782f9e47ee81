package assets

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-kit/log"
	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// follower is a peer's copy of who sees which asset (pkg/access), kept as
// the actions and events services keep theirs: in a schema of its own,
// with a Redis of its own (redisURL), reading the assets service's
// internal routes. logReads counts its reads of the access log.
type follower struct {
	*access.Copy
	logReads atomic.Int64
}

func newFollower(t *testing.T, s *servicetest.Service, redisURL string) *follower {
	t.Helper()
	f := &follower{}
	target, _ := url.Parse(s.Client.BaseURL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/internal/asset_access" {
			f.logReads.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(counting.Close)
	schema := testkit.NewDatabaseSchema(t)
	records := fstest.MapFS{"001_records.sql": {Data: []byte(`CREATE TABLE records (id uuid PRIMARY KEY)`)}}
	pool, err := store.OpenAndMigrateSets(t.Context(), store.Config{URL: testkit.PostgresURL(t), Schema: schema, MaxConns: 4,
		StartupWait: time.Second}, nil, store.Migrations(records)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	cfg := cache.Config{Connection: cache.Connection{URL: redisURL}, TTL: time.Minute, Timeout: 200 * time.Millisecond, Backoff: time.Second}
	client, err := cache.Connect(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	finds := cache.NewFinds(client, "actions:"+schema, cfg, log.NewNopLogger())
	base := counting.URL
	peers, err := peer.NewClients(peer.Config{URLs: map[string]*string{"assets": &base}, Timeout: 5 * time.Second,
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: s.Issuer.Token(t, "svc-actions", "registry:internal")})}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	f.Copy = access.New(store.New(pool, finds), peers.Get("assets"))
	return f
}

// sees is whether org sees asset in the copy, asked as a bound read asks.
func (f *follower) sees(t *testing.T, org, asset string) bool {
	t.Helper()
	seen, err := f.Sees(t.Context(), model.Caller{Subject: "someone", Organization: org}, asset)
	if err != nil {
		t.Fatal(err)
	}
	return seen
}

// current waits until the copy answers without reading the log: it has
// read the log once and the service's renewal has set the watermark.
func (f *follower) current(t *testing.T, org, asset string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		before := f.logReads.Load()
		f.sees(t, org, asset)
		if f.logReads.Load() == before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the copy reads the access log before every read: no watermark to compare with")
		}
	}
}

// A change of who sees an asset, once answered, is in force for the next
// read of every copy, though copies read the log only when the watermark
// says they lack a change: grants, their removal, a transfer and an
// admin's owner change, each checked right after its answer. A copy that
// skipped its refresh on a watermark the write had not raised would still
// answer the access of before.
func TestCopiesSeeEveryAnsweredChangeThroughTheWatermark(t *testing.T) {
	t.Parallel()
	tn := newTenants(t)
	f := newFollower(t, tn.Service, testkit.RedisURL(t))
	id := tn.asset(tn.a, "WM-1")["id"].(string)
	f.current(t, tn.B, id)
	if f.sees(t, tn.B, id) || !f.sees(t, tn.A, id) {
		t.Fatal("before any grant: B sees the asset, or its owner A does not")
	}
	grants := "/assets/" + id + "/grants"
	for round := range 3 {
		reads := f.logReads.Load()
		tn.Call(201, "POST", grants, tn.a, map[string]any{"organization_id": tn.B, "role": "read"})
		if !f.sees(t, tn.B, id) {
			t.Fatalf("round %d: the grant was answered, but the next read of the copy does not see it", round)
		}
		if f.logReads.Load() == reads {
			t.Fatalf("round %d: the copy did not read the log after a change", round)
		}
		tn.Call(204, "DELETE", grants+"/"+tn.B, tn.a, nil)
		if f.sees(t, tn.B, id) {
			t.Fatalf("round %d: the grant's removal was answered, but the next read of the copy still sees it", round)
		}
	}
	// Nothing changed since: the copy answers without reading the log.
	reads := f.logReads.Load()
	for range 5 {
		f.sees(t, tn.C, id)
	}
	if got := f.logReads.Load() - reads; got != 0 {
		t.Errorf("with nothing changed, five reads read the log %d times", got)
	}

	transfer := tn.Call(201, "POST", "/assets/"+id+"/transfers", tn.a, map[string]any{"to_organization_id": tn.B}).JSON()
	tn.Call(200, "POST", "/transfers/"+transfer["id"].(string)+"/accept", tn.b, nil)
	if f.sees(t, tn.A, id) || !f.sees(t, tn.B, id) {
		t.Fatal("the transfer was accepted, but the next read of the copy answers the owner of before")
	}
	tn.Call(200, "PATCH", "/assets/"+id, tn.Admin, map[string]any{"owner_organization_id": tn.C})
	if f.sees(t, tn.B, id) || !f.sees(t, tn.C, id) {
		t.Fatal("an admin changed the owner, but the next read of the copy answers the owner of before")
	}
	tn.Call(200, "POST", "/assets/owners", tn.Admin, map[string]any{"asset_ids": []string{id}, "owner_organization_id": tn.A})
	if f.sees(t, tn.C, id) || !f.sees(t, tn.A, id) {
		t.Fatal("an admin's bulk owner change was answered, but the next read of the copy answers the owner of before")
	}
}

// A copy whose Redis goes away reads the log before each read: the
// watermark it can no longer read may be one a change has raised since.
func TestCopyWithoutItsRedisReadsTheLog(t *testing.T) {
	t.Parallel()
	tn := newTenants(t)
	link := cuttable(t, testkit.RedisURL(t))
	f := newFollower(t, tn.Service, link.url)
	id := tn.asset(tn.a, "WM-2")["id"].(string)
	f.current(t, tn.B, id)

	link.cut()
	tn.Call(201, "POST", "/assets/"+id+"/grants", tn.a, map[string]any{"organization_id": tn.B, "role": "inspect"})
	if !f.sees(t, tn.B, id) {
		t.Fatal("Redis is down for the copy: it answered from its copy of before the grant")
	}
	reads := f.logReads.Load()
	for range 3 {
		f.sees(t, tn.B, id)
	}
	if f.logReads.Load()-reads != 3 {
		t.Errorf("Redis down: 3 reads read the log %d times, want each", f.logReads.Load()-reads)
	}

	// Back: the copy trusts the watermark again.
	link.restore()
	time.Sleep(time.Second) // the copy's back-off after the errors
	f.current(t, tn.B, id)
}

// An assets service that cannot raise the watermark (its Redis is away,
// the copies' is not) answers a change only once the watermark of before
// it has lapsed: the copies then read the log.
func TestAChangeTheWatermarkMissesWaitsItOut(t *testing.T) {
	t.Parallel()
	issuer := testkit.NewIssuer(t, servicetest.Audience)
	cfg := servicetest.Config(t, Spec(), issuer)
	link := cuttable(t, cfg.Redis.URL)
	cfg.Redis.URL = link.url
	// The log's advisory lock is the database's, and this test's writes
	// hold it for the watermark's lifetime: in the shared database the
	// tests beside would wait past their lock timeout.
	cfg.Database.URL = testkit.NewDatabase(t)
	s := servicetest.StartWith(t, Spec(), cfg, issuer)
	tn := tenants{Service: s, A: s.OrgA.ID.String(), B: s.OrgB.ID.String(), a: s.OrgA.Token, b: s.OrgB.Token}
	tn.typeID = s.Call(201, "POST", "/asset_types", s.RW, liftmaster).JSON()["id"].(string)
	f := newFollower(t, s, testkit.RedisURL(t)) // the copies' Redis is up
	id := tn.asset(tn.a, "WM-3")["id"].(string)
	f.current(t, tn.B, id)

	link.cut()
	began := time.Now()
	tn.Call(201, "POST", "/assets/"+id+"/grants", tn.a, map[string]any{"organization_id": tn.B, "role": "read"})
	if took := time.Since(began); took < 2*time.Second {
		t.Errorf("the grant was answered after %s, before the watermark's lifetime could pass", took)
	}
	if !f.sees(t, tn.B, id) {
		t.Fatal("the assets service could not raise the watermark, and the copy answered from its copy of before the grant")
	}
}

// link is a TCP relay to a Redis that the test can cut: every connection
// closed, new ones refused, until restore.
type link struct {
	url  string
	down atomic.Bool
	mu   sync.Mutex
	open []net.Conn
}

func cuttable(t *testing.T, redisURL string) *link {
	t.Helper()
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l := &link{}
	target := u.Host
	u.Host = ln.Addr().String()
	l.url = u.String()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			if l.down.Load() {
				conn.Close()
				continue
			}
			upstream, err := net.Dial("tcp", target)
			if err != nil {
				conn.Close()
				continue
			}
			l.mu.Lock()
			l.open = append(l.open, conn, upstream)
			l.mu.Unlock()
			go func() { _, _ = io.Copy(upstream, conn); upstream.Close() }()
			go func() { _, _ = io.Copy(conn, upstream); conn.Close() }()
		}
	}()
	t.Cleanup(l.cut)
	return l
}

func (l *link) cut() {
	l.down.Store(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.open {
		c.Close()
	}
	l.open = nil
}

func (l *link) restore() { l.down.Store(false) }
