package access_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"golang.org/x/oauth2"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit"
)

const (
	orgA = "a0000000-0000-4000-8000-00000000000a"
	orgB = "b0000000-0000-4000-8000-00000000000b"
	orgC = "c0000000-0000-4000-8000-00000000000c"
)

// assetsLog plays the assets service's two internal routes over HTTP: its
// change log of owners and grants, and the lookup of current access.
type assetsLog struct {
	mu      sync.Mutex
	changes []model.Access // version i+1 at index i
	current map[string]model.Access
	hold    chan struct{} // when set, the next changes read waits for it
	reads   int
}

func (l *assetsLog) change(a model.Access) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a.Version = int64(len(l.changes) + 1)
	l.changes = append(l.changes, a)
	l.current[a.AssetID] = a
}

func (l *assetsLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/internal/asset_access":
		l.mu.Lock()
		hold := l.hold
		l.hold = nil
		l.reads++
		l.mu.Unlock()
		if hold != nil {
			<-hold
		}
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		l.mu.Lock()
		page := []model.Access{}
		next := after
		for _, c := range l.changes {
			if c.Version > after {
				page = append(page, c)
				next = c.Version
			}
		}
		l.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"changes": page, "next": next})
	case "/internal/asset_access/lookup":
		var in struct {
			AssetIDs []string `json:"asset_ids"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		l.mu.Lock()
		out := []model.Access{}
		for _, id := range in.AssetIDs {
			if a, ok := l.current[id]; ok {
				out = append(out, a)
			}
		}
		l.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"access": out})
	default:
		http.NotFound(w, r)
	}
}

func newCopy(t *testing.T) (*access.Copy, *assetsLog, *store.Store) {
	t.Helper()
	cfg := store.Config{URL: testkit.PostgresURL(t), Schema: testkit.NewDatabaseSchema(t), MaxConns: 10, StartupWait: time.Second}
	records := fstest.MapFS{"001_records.sql": {Data: []byte(`CREATE TABLE records (id uuid PRIMARY KEY, asset_id uuid NOT NULL)`)}}
	pool, err := store.OpenAndMigrateSets(t.Context(), cfg, nil, store.Migrations(records)...)
	if err == nil {
		t.Cleanup(pool.Close)
	} else {
		t.Fatal(err)
	}
	st := store.New(pool, nil)
	log := &assetsLog{current: map[string]model.Access{}}
	srv := httptest.NewServer(log)
	t.Cleanup(srv.Close)
	url := srv.URL
	peers, err := peer.NewClients(peer.Config{URLs: map[string]*string{"assets": &url}, Timeout: 5 * time.Second,
		TokenSource: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "test"})}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return access.New(st, peers.Get("assets")), log, st
}

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

func id() string { return store.NewID().String() }

// A change the assets service committed before a call is in force for that
// call: granted, the grantee sees; revoked, it no longer does; handed
// over, the old owner no longer sees.
func TestCopyIsFreshForTheNextCall(t *testing.T) {
	c, log, _ := newCopy(t)
	ctx := t.Context()
	asset := id()
	log.current[asset] = model.Access{AssetID: asset, OwnerOrganizationID: orgA}
	a, b := model.Caller{Organization: orgA}, model.Caller{Organization: orgB}
	// Two changes of one asset between two calls reach the copy in one
	// page: the later stands.
	twice := id()
	log.current[twice] = model.Access{AssetID: twice, OwnerOrganizationID: orgA}
	log.change(model.Access{AssetID: twice, OwnerOrganizationID: orgA, Grants: []model.AssetGrant{{OrganizationID: orgB, Role: model.GrantRead}}})
	log.change(model.Access{AssetID: twice, OwnerOrganizationID: orgB})
	if seen, err := c.Sees(ctx, a, twice); err != nil || seen {
		t.Fatalf("after two changes in one page, the first owner sees = %v (%v), want false", seen, err)
	}
	steps := []struct {
		name   string
		change *model.Access
		a, b   bool
	}{
		{"created, owned by A", nil, true, false},
		{"B granted read", &model.Access{AssetID: asset, OwnerOrganizationID: orgA, Grants: []model.AssetGrant{{OrganizationID: orgB, Role: model.GrantRead}}}, true, true},
		{"B's grant removed", &model.Access{AssetID: asset, OwnerOrganizationID: orgA}, true, false},
		{"handed over to B", &model.Access{AssetID: asset, OwnerOrganizationID: orgB}, false, true},
	}
	for _, s := range steps {
		if s.change != nil {
			log.change(*s.change)
		}
		for _, who := range []struct {
			caller model.Caller
			want   bool
		}{{a, s.a}, {b, s.b}} {
			got, err := c.Sees(ctx, who.caller, asset)
			if err != nil {
				t.Fatal(err)
			}
			if got != who.want {
				t.Fatalf("%s: organization %s sees = %v, want %v", s.name, who.caller.Organization, got, who.want)
			}
		}
	}
	if seen, err := c.Sees(ctx, model.Caller{}, id()); err != nil || !seen {
		t.Fatalf("an unbound caller sees every row: %v %v", seen, err)
	}
	if seen, err := c.Sees(ctx, a, id()); err != nil || seen {
		t.Fatalf("an asset nobody knows is not seen by a bound caller: %v %v", seen, err)
	}
}

// A lookup answered before a change must not overwrite the change.
func TestCopyKeepsTheNewerAccess(t *testing.T) {
	c, _, _ := newCopy(t)
	ctx := t.Context()
	asset := id()
	newer := model.Access{AssetID: asset, OwnerOrganizationID: orgB, Version: 7}
	older := model.Access{AssetID: asset, OwnerOrganizationID: orgA, Version: 3}
	if err := c.Store().Learn(ctx, []model.Access{newer}); err != nil {
		t.Fatal(err)
	}
	if err := c.Store().Learn(ctx, []model.Access{older}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Store().Get(ctx, []string{asset})
	if err != nil {
		t.Fatal(err)
	}
	if got[asset].OwnerOrganizationID != orgB || got[asset].Version != 7 {
		t.Fatalf("kept %+v, want the newer access", got[asset])
	}
}

// Learning an access the copy holds already takes no lock on its row:
// writers looking up one asset at once do not queue behind each other, or
// behind a transaction that holds the row.
func TestLearningWhatTheCopyHoldsTakesNoLock(t *testing.T) {
	c, _, st := newCopy(t)
	ctx := t.Context()
	asset := id()
	held := model.Access{AssetID: asset, OwnerOrganizationID: orgA, Version: 5}
	if err := c.Store().Learn(ctx, []model.Access{held}); err != nil {
		t.Fatal(err)
	}
	tx, err := st.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM asset_access WHERE asset_id = $1 FOR UPDATE`, asset); err != nil {
		t.Fatal(err)
	}
	for _, again := range []model.Access{held, {AssetID: asset, OwnerOrganizationID: orgB, Version: 4}} {
		bounded, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.Store().Learn(bounded, []model.Access{again})
		cancel()
		if err != nil {
			t.Fatalf("learning version %d beside a lock on the row holding version 5: %v", again.Version, err)
		}
	}
}

// A caller arriving while a refresh is in flight waits for one that began
// after it arrived: a change logged meanwhile is seen.
func TestRefreshBeginsAfterTheCallerArrived(t *testing.T) {
	c, log, _ := newCopy(t)
	ctx := t.Context()
	asset := id()
	log.current[asset] = model.Access{AssetID: asset, OwnerOrganizationID: orgA}
	release := make(chan struct{})
	log.mu.Lock()
	log.hold = release
	log.mu.Unlock()
	first := make(chan error, 1)
	go func() { first <- c.Refresh(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) { // the first refresh is reading
		log.mu.Lock()
		reads := log.reads
		log.mu.Unlock()
		if reads == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first refresh never read the log")
		}
	}
	log.change(model.Access{AssetID: asset, OwnerOrganizationID: orgA, Grants: []model.AssetGrant{{OrganizationID: orgC, Role: model.GrantInspect}}})
	second := make(chan bool, 1)
	go func() {
		seen, err := c.Sees(ctx, model.Caller{Organization: orgC}, asset)
		if err != nil {
			t.Error(err)
		}
		second <- seen
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if !<-second {
		t.Fatal("a change logged before the call began was not in force for it")
	}
}

// VisibleTo is model.Access.Sees in SQL: the same answers for every kind
// of caller and asset.
func TestVisibleToIsTheRule(t *testing.T) {
	c, _, st := newCopy(t)
	ctx := t.Context()
	assets := []model.Access{
		{AssetID: id()},
		{AssetID: id(), OwnerOrganizationID: orgA},
		{AssetID: id(), OwnerOrganizationID: orgA, Grants: []model.AssetGrant{{OrganizationID: orgB, Role: model.GrantRead}}},
		{AssetID: id(), OwnerOrganizationID: orgA, Grants: []model.AssetGrant{{OrganizationID: orgB, Role: model.GrantInspect}, {OrganizationID: orgC, Role: model.GrantRead}}},
		{AssetID: id(), OwnerOrganizationID: orgC},
	}
	if err := c.Store().Learn(ctx, assets); err != nil {
		t.Fatal(err)
	}
	for _, a := range assets {
		if _, err := st.Pool.Exec(ctx, `INSERT INTO records (id, asset_id) VALUES ($1, $2)`, id(), a.AssetID); err != nil {
			t.Fatal(err)
		}
	}
	for _, org := range []string{orgA, orgB, orgC} {
		rows, err := st.Pool.Query(ctx, `SELECT asset_id::text FROM records WHERE `+access.VisibleTo("records.asset_id", "$1"), org)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			seen[a] = true
		}
		rows.Close()
		for _, a := range assets {
			if want := a.Sees(model.Caller{Organization: org}); seen[a.AssetID] != want {
				t.Errorf("organization %s, asset %+v: SQL sees %v, the rule %v", org, a, seen[a.AssetID], want)
			}
		}
	}
}

// A bound caller's read begins from the assets its organization sees: the
// condition's three alternatives are each answered by an index of the
// copy (the owner's, the grantees'), not by reading every asset of it.
func TestVisibleToReadsTheCopysIndexes(t *testing.T) {
	_, _, st := newCopy(t)
	ctx := t.Context()
	// 20,000 assets over 200 organizations, every tenth granted to another,
	// with a record each.
	if _, err := st.Pool.Exec(ctx, `INSERT INTO asset_access (asset_id, owner_organization_id, grantees, version)
		SELECT gen_random_uuid(), md5('org' || n % 200)::uuid,
			CASE WHEN n % 10 = 5 THEN ARRAY[md5('org' || (n + 1) % 200)::uuid] ELSE '{}' END, 0
		FROM generate_series(1, 20000) n;
		INSERT INTO records (id, asset_id) SELECT gen_random_uuid(), asset_id FROM asset_access;
		ANALYZE asset_access; ANALYZE records`); err != nil {
		t.Fatal(err)
	}
	plan := testkit.Explain(t, st.Pool, `SELECT r.id FROM records r WHERE `+access.VisibleTo("r.asset_id", "$1"), orgA)
	for _, index := range []string{"asset_access_owner", "asset_access_grantees"} {
		if !strings.Contains(plan, index) {
			t.Errorf("the plan does not read %s:\n%s", index, plan)
		}
	}
}

// SeenAssets' two halves are model.Access.Sees in SQL, through every
// change of an asset's access: an organization sees an asset when the
// asset has its row or the row of Everyone, never both, and a change
// leaves only the rows of the access that stands.
func TestSeenAssetsIsTheRule(t *testing.T) {
	c, _, st := newCopy(t)
	ctx := t.Context()
	grant := func(org, role string) []model.AssetGrant {
		return []model.AssetGrant{{OrganizationID: org, Role: role}}
	}
	asset := id()
	others := []model.Access{
		{AssetID: id()},
		{AssetID: id(), OwnerOrganizationID: orgC, Grants: grant(orgB, model.GrantRead)},
	}
	if err := c.Store().Learn(ctx, others); err != nil {
		t.Fatal(err)
	}
	steps := []model.Access{
		{OwnerOrganizationID: orgA},
		{OwnerOrganizationID: orgA, Grants: grant(orgB, model.GrantRead)},
		{OwnerOrganizationID: orgA, Grants: append(grant(orgB, model.GrantInspect), grant(orgC, model.GrantRead)...)},
		{OwnerOrganizationID: orgA, Grants: grant(orgC, model.GrantRead)},
		{OwnerOrganizationID: orgB, Grants: grant(orgC, model.GrantRead)},
		{Grants: grant(orgC, model.GrantRead)}, // no owner left: everyone's, the grant aside
		{OwnerOrganizationID: orgC},
		{},
	}
	for v, step := range steps {
		step.AssetID, step.Version = asset, int64(v+1)
		if err := c.Store().Learn(ctx, []model.Access{step}); err != nil {
			t.Fatal(err)
		}
		for _, org := range []string{orgA, orgB, orgC} {
			for _, a := range append([]model.Access{step}, others...) {
				var own, everyone, granted bool
				if err := st.Pool.QueryRow(ctx, `SELECT $1::uuid IN (`+access.SeenAssets("$2")+`), $1::uuid IN (`+access.SeenAssets("$3")+`),
					$1::uuid IN (`+access.GrantedAssets("$2")+`)`,
					a.AssetID, org, access.Everyone).Scan(&own, &everyone, &granted); err != nil {
					t.Fatal(err)
				}
				if want := a.Sees(model.Caller{Organization: org}); (own || everyone) != want || own && everyone {
					t.Errorf("step %d, organization %s, access %+v: seen through its own row %v, through everyone's %v; the rule says %v",
						v, org, a, own, everyone, want)
				}
				// Through a grant only: a grantee of an asset another owns.
				wantGranted := a.OwnerOrganizationID != "" && a.OwnerOrganizationID != org &&
					slices.ContainsFunc(a.Grants, func(g model.AssetGrant) bool { return g.OrganizationID == org })
				if granted != wantGranted {
					t.Errorf("step %d, organization %s, access %+v: among its granted assets %v, want %v", v, org, a, granted, wantGranted)
				}
			}
		}
	}
}
