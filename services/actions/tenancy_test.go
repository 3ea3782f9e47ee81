package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions/actiondocs"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/compliance/projection"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// tenancyWorld is the service with the assets service's access routes
// played (servicetest.AssetAccess) and a documents service that shows
// each organization the documents the test says.
type tenancyWorld struct {
	world
	access    *servicetest.AssetAccess
	documents map[string]map[string]bool // organization → documents its clients see at the documents service
}

const (
	orgOwner     = "a0000000-0000-4000-8000-00000000000a"
	orgReader    = "b0000000-0000-4000-8000-00000000000b"
	orgInspector = "c0000000-0000-4000-8000-00000000000c"
	orgOther     = "d0000000-0000-4000-8000-00000000000d"
)

// newTenancyWorld, like newWorld, lets the test run beside the others.
func newTenancyWorld(t *testing.T) tenancyWorld {
	t.Helper()
	t.Parallel()
	w := tenancyWorld{access: servicetest.NewAssetAccess(), documents: map[string]map[string]bool{}}
	docs := http.NewServeMux()
	docs.HandleFunc("POST /internal/documents/visible", func(rw http.ResponseWriter, r *http.Request) {
		var in struct {
			DocumentIDs []string `json:"document_ids"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			httpx.WriteProblem(r.Context(), apperr.Invalid(apperr.FieldError{Field: "document_ids", Message: err.Error()}), rw)
			return
		}
		seen := []string{}
		for _, id := range in.DocumentIDs {
			if w.documents[r.Header.Get(auth.OnBehalfOfOrganizationHeader)][id] {
				seen = append(seen, id)
			}
		}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(map[string]any{"document_ids": seen})
	})
	w.world = worldOn(servicetest.StartServing(t, Spec(), map[string]*http.ServeMux{"assets": w.access.Routes(), "documents": docs}))
	return w
}

// owned makes a new asset, owned by owner ("" none) with grants, exist at
// the assets stand-in and in its access log.
func (w tenancyWorld) owned(owner string, grants ...model.AssetGrant) string {
	id := uuid.Must(uuid.NewV7())
	w.StandIn("assets").Add("asset", id, nil)
	w.access.Set(model.Access{AssetID: id.String(), OwnerOrganizationID: owner, Grants: grants})
	return id.String()
}

// The matrix of "Organizations as tenants" over actions, their action
// documents and compliance: an asset owned by one organization, granted
// read to a second and inspect to a third, a fourth with nothing, a client
// bound to none and an admin.
func TestTenancyOfActions(t *testing.T) {
	w := newTenancyWorld(t)
	rw := []string{auth.ScopeRead, auth.ScopeWrite}
	owner, reader := w.Bound("owner-client", orgOwner, rw...), w.Bound("reader-client", orgReader, rw...)
	inspector, other := w.Bound("inspector-client", orgInspector, rw...), w.Bound("other-client", orgOther, rw...)
	admin := w.Bound("admin-client", orgOther, auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin)
	asset := w.owned(orgOwner, model.AssetGrant{OrganizationID: orgReader, Role: model.GrantRead},
		model.AssetGrant{OrganizationID: orgInspector, Role: model.GrantInspect})
	shared := w.owned("")
	onAsset := func(a string, n int) map[string]any {
		return w.action(map[string]any{"asset_id": a, "source_reference": uuid.NewString(), "reference": "T-" + string(rune('a'+n))})
	}
	first := onAsset(asset, 0)
	action := w.Call(201, "POST", "/actions", owner, first).JSON()["id"].(string)
	doc := w.document()
	for _, org := range []string{orgOwner, orgReader, orgInspector, orgOther} {
		w.documents[org] = map[string]bool{}
	}
	w.documents[orgOwner][doc] = true
	w.Call(201, "POST", "/actions/"+action+"/action_documents", owner, map[string]any{"action_id": action, "document_id": doc,
		"source_system": "app", "source_reference": "report"})
	// compliance knows both assets from their events
	for _, a := range []string{asset, shared} {
		ev := projection.AssetEvent{ID: uuid.Must(uuid.NewV7()), AssetID: uuid.MustParse(a), AssetTypeID: uuid.New(), Op: outbox.OpCreated}
		if err := projection.New(projection.NewStore(w.Built.Store)).ApplyAsset(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		name, token string
		sees        bool // the asset, its action, action documents and compliance rows
		create      int  // recording an action on the asset
		link        int  // linking a document to the owner's action
	}{
		{"owner", owner, true, 201, 201},
		{"read grantee", reader, true, 403, 403},
		{"inspect grantee", inspector, true, 201, 403}, // the action is the owner's client's (not-owner)
		{"other organization", other, false, 422, 404},
		{"bound to none", w.RW, true, 201, 403},
		{"admin", admin, true, 201, 201},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			get := http.StatusNotFound
			if c.sees {
				get = http.StatusOK
			}
			w.Call(get, "GET", "/actions/"+action, c.token, nil)
			w.Call(get, "GET", "/actions/"+action+"/action_documents", c.token, nil)
			for _, query := range []string{"", "?asset_id=" + asset, "?action_type=expert_control"} {
				if listed := ids(w.Call(200, "GET", "/actions"+query, c.token, nil).List()); slices.Contains(listed, action) != c.sees {
					t.Errorf("GET /actions%s lists the action: %v, want %v", query, !c.sees, c.sees)
				}
			}
			rows := w.Call(200, "GET", "/compliance?action_type=expert_control", c.token, nil).List()
			var assets []string
			for _, r := range rows {
				assets = append(assets, r["asset_id"].(string))
			}
			if slices.Contains(assets, asset) != c.sees || !slices.Contains(assets, shared) {
				t.Errorf("compliance rows of %v, want the asset %v and the shared one", assets, c.sees)
			}
			created := w.Call(c.create, "POST", "/actions", c.token, onAsset(asset, i+1))
			if c.create == 422 && !slices.Equal(created.Fields(), []string{"asset_id"}) {
				t.Errorf("an unseen asset: %s, want a 422 on asset_id", created.Raw)
			}
			if c.create == 403 && created.JSON()["type"] != httpx.ProblemTypePrefix+"not-permitted" {
				t.Errorf("a read grant: %s, want not-permitted", created.Raw)
			}
			results := w.Call(200, "POST", "/actions/batch", c.token, map[string]any{"items": []any{onAsset(asset, 20+i), onAsset(shared, 40+i)}}).List()
			if got := int(results[0]["status"].(float64)); got != c.create {
				t.Errorf("batch item on the asset: %d, want %d (%v)", got, c.create, results[0])
			}
			if got := int(results[1]["status"].(float64)); got != 201 {
				t.Errorf("batch item on the shared asset: %d, want 201 (%v)", got, results[1])
			}
			fresh := w.document()
			for _, org := range []string{orgOwner, orgReader, orgInspector, orgOther} {
				w.documents[org][fresh] = true // every organization sees it at the documents service
			}
			w.Call(c.link, "POST", "/actions/"+action+"/action_documents", c.token, map[string]any{"action_id": action,
				"document_id": fresh, "source_system": "app", "source_reference": "r-" + c.name})
		})
	}
	w.Call(201, "POST", "/actions", other, onAsset(shared, 99)) // an asset with no owner is shared

	// A document the caller does not see is linked as one that does not exist.
	mine := w.Call(201, "POST", "/actions", owner, onAsset(asset, 98)).JSON()["id"].(string)
	unseen := w.Call(422, "POST", "/actions/"+mine+"/action_documents", owner, map[string]any{"action_id": mine,
		"document_id": w.document(), "source_system": "app", "source_reference": "unseen"})
	if !slices.Equal(unseen.Fields(), []string{"document_id"}) {
		t.Errorf("an unseen document: %s", unseen.Raw)
	}
	// A document an action the caller sees links already is seen; one it
	// does not see cannot replace it.
	again := w.Call(201, "POST", "/actions/"+mine+"/action_documents", owner, map[string]any{"action_id": mine, "document_id": doc,
		"source_system": "app", "source_reference": "again"}).JSON()["id"].(string)
	relinked := w.Call(422, "PATCH", "/actions/"+mine+"/action_documents/"+again, owner, map[string]any{"document_id": w.document()})
	if !slices.Equal(relinked.Fields(), []string{"document_id"}) {
		t.Errorf("relinking to an unseen document: %s", relinked.Raw)
	}
	// Finds: an action on an unseen asset is not found, and its source
	// pair, held, is a conflict that names no action.
	pair := map[string]any{"source_system": first["source_system"], "source_reference": first["source_reference"]}
	w.Call(200, "POST", "/actions/find", owner, pair)
	w.Call(404, "POST", "/actions/find", other, pair)
	claim := onAsset(shared, 97)
	claim["source_reference"] = first["source_reference"]
	if held := w.Call(409, "POST", "/actions/find?create=true", other, claim).JSON(); held["existing_id"] != nil {
		t.Errorf("a pair held by an unseen action: %v", held)
	}
	if held := w.Call(409, "POST", "/actions", other, claim).JSON(); held["existing_id"] != nil {
		t.Errorf("a create of a pair held by an unseen action: %v", held)
	}
	for _, find := range []string{"true", "false"} {
		items := w.Call(200, "POST", "/actions/batch?find="+find, other, map[string]any{"items": []any{claim}}).List()
		if items[0]["status"] != float64(409) || items[0]["id"] != nil || items[0]["problem"].(map[string]any)["existing_id"] != nil {
			t.Errorf("a batch (find=%s) with a pair held by an unseen action: %v", find, items[0])
		}
	}

	// Nobody changes or deletes what it does not see.
	w.Call(404, "PATCH", "/actions/"+action, other, map[string]any{"reference": "x"})
	w.Call(404, "DELETE", "/actions/"+action, other, nil)
	w.Call(404, "DELETE", "/actions/"+action+"/action_documents/"+uuid.NewString(), other, nil)
}

// An asset whose access the copy learnt only from its asset.created event
// (no action, never changed) is filtered right in /compliance.
func TestComplianceOfAnAssetKnownFromItsEvent(t *testing.T) {
	w := newTenancyWorld(t)
	owner, other := w.Bound("owner-client", orgOwner, auth.ScopeRead), w.Bound("other-client", orgOther, auth.ScopeRead)
	asset := uuid.Must(uuid.NewV7())
	p := projection.New(projection.NewStore(w.Built.Store))
	ev, ok, err := projection.AssetEventOf(outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: "asset.created",
		Subject: outbox.EventSubject{Kind: outbox.KindAsset, ID: asset.String()},
		Data:    []byte(`{"asset_type_id":"` + uuid.NewString() + `","owner_organization_id":"` + orgOwner + `"}`)})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := p.ApplyAsset(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	wantComplianceRows(t, w, asset, owner, other)
}

// actions rebuild-compliance also has the copy learn every asset it
// lists: one created before the copy was kept (never changed, no event
// seen) is then filtered right in /compliance.
func TestRebuildTeachesTheCopy(t *testing.T) {
	w := newTenancyWorld(t)
	owner, other := w.Bound("owner-client", orgOwner, auth.ScopeRead), w.Bound("other-client", orgOther, auth.ScopeRead)
	asset := uuid.Must(uuid.NewV7())
	w.StandIn("assets").Remove("asset", uuid.MustParse(w.asset)) // the world's, listed without a type
	w.StandIn("assets").Add("asset", asset, refs.Attrs{"asset_type_id": uuid.NewString()})
	w.access.Created(model.Access{AssetID: asset.String(), OwnerOrganizationID: orgOwner})
	registry := refs.New("actions", w.Built.Store, w.Built.Deps.Peers)
	seen := access.New(w.Built.Store, w.Built.Deps.Peers.Get("assets"))
	if _, err := projection.New(projection.NewStore(w.Built.Store)).Rebuild(t.Context(), learning(ListAssetsOf(registry), seen)); err != nil {
		t.Fatal(err)
	}
	wantComplianceRows(t, w, asset, owner, other)
}

// The documents service's question: of some documents, which an action on
// an asset the organization sees links, with those action documents.
func TestDocumentsSeen(t *testing.T) {
	w := newTenancyWorld(t)
	owner := w.Bound("owner-client", orgOwner, auth.ScopeRead, auth.ScopeWrite)
	asset := w.owned(orgOwner, model.AssetGrant{OrganizationID: orgReader, Role: model.GrantRead})
	action := w.Call(201, "POST", "/actions", owner, w.action(map[string]any{"asset_id": asset})).JSON()["id"].(string)
	doc, lone := w.document(), w.document()
	w.documents[orgOwner] = map[string]bool{doc: true}
	link := w.Call(201, "POST", "/actions/"+action+"/action_documents", owner, map[string]any{"action_id": action, "document_id": doc,
		"source_system": "app", "source_reference": "r"}).JSON()["id"].(string)
	internal := w.Issuer.Token(t, "documents", auth.ScopeInternal)
	for _, c := range []struct {
		org  string
		want []string
	}{{orgOwner, []string{doc, link}}, {orgReader, []string{doc, link}}, {orgOther, nil}} {
		// an internal route: not in the public document the service's client checks against
		plain := testkit.Client{BaseURL: w.Client.BaseURL, HTTP: http.DefaultClient}
		got := testkit.Expect(t, plain.Do(t, "POST", actiondocs.DocumentsSeenPath, internal,
			map[string]any{"organization_id": c.org, "document_ids": []string{doc, lone}}), 200).JSON()
		var seen []string
		for _, k := range []string{"document_ids", "action_document_ids"} {
			for _, id := range got[k].([]any) {
				seen = append(seen, id.(string))
			}
		}
		if !slices.Equal(seen, c.want) {
			t.Errorf("organization %s: %v, want %v", c.org, seen, c.want)
		}
	}
}

// ids are the ids of a list's items.
func ids(items []map[string]any) []string {
	var out []string
	for _, it := range items {
		out = append(out, it["id"].(string))
	}
	return out
}

// wantComplianceRows: the owner's client and an unbound reader see the
// asset's four compliance rows, the other organization's none.
func wantComplianceRows(t *testing.T, w tenancyWorld, asset uuid.UUID, owner, other string) {
	t.Helper()
	for _, c := range []struct {
		token string
		rows  int
	}{{owner, 4}, {other, 0}, {w.RO, 4}} {
		if got := len(w.Call(200, "GET", "/compliance?asset_id="+asset.String(), c.token, nil).List()); got != c.rows {
			t.Errorf("rows %d, want %d", got, c.rows)
		}
	}
}

// planSeed is the quick bench's compliance seed in SQL: 20,000 assets in
// id order, owned by 200 organizations in turn (organization 0 is the
// bound caller's: md5('org0')); every tenth granted to another
// (asset 195 and every 200th after it to organization 0); every thousandth with no owner (everyone's); each with a
// latest action of the four types, dated over ten years in id order (the
// first page of overdue rows is the oldest assets'), 5 % failed, 4 %
// open-ended.
const planSeed = `
	INSERT INTO known_assets (asset_id, asset_type_id, event_id)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(k), 12, '0'))::uuid, '00000000-0000-7000-8000-aaaaaaaaaaaa', gen_random_uuid()
		FROM generate_series(1, 20000) k;
	INSERT INTO asset_access (asset_id, owner_organization_id, grantees, grants, version)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(k), 12, '0'))::uuid, CASE WHEN k % 1000 <> 1 THEN md5('org' || k % 200)::uuid END,
			CASE WHEN k % 10 = 5 THEN ARRAY[md5('org' || (k + 5) % 200)::uuid] ELSE '{}' END, '[]', 0
		FROM generate_series(1, 20000) k;
	INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, status_ok, status_use_ok, valid_through, class)
		SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(k), 12, '0'))::uuid, t, gen_random_uuid(), d, k % 20 <> 7, true,
			CASE WHEN k % 25 <> 3 THEN d + 365 END,
			CASE WHEN k % 20 = 7 THEN 'failed' WHEN k % 25 = 3 THEN 'open_ended' ELSE 'dated' END
		FROM generate_series(1, 20000) k, unnest(ARRAY['expert_control', 'maintenance', 'pre_use_inspection', 'repair']) t,
			LATERAL (SELECT date '2016-01-01' + (k * 3650 / 20000) AS d) dd;
	VACUUM ANALYZE known_assets, asset_access, asset_seen_by, latest_actions`

// planSchema is an actions schema, in a database of its own, holding planSeed, and the
// bound caller's organization.
func planSchema(t *testing.T) (*store.Pool, string) {
	ctx := t.Context()
	// A database of its own: the plans hang on the visibility map, which
	// the seed's VACUUM sets only for rows older than every transaction in
	// the database, and the tests running beside this one (in parallel, and
	// other packages') hold transactions in the shared one.
	cfg := store.Config{URL: testkit.NewDatabase(t), Schema: testkit.NewDatabaseSchema(t), MaxConns: 4, StartupWait: time.Second}
	pool, err := store.OpenAndMigrateSets(ctx, cfg, nil, store.Migrations(Spec().Migrations)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, q := range strings.Split(planSeed, ";") {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var org string
	if err := pool.QueryRow(ctx, `SELECT md5('org0')::uuid::text`).Scan(&org); err != nil {
		t.Fatal(err)
	}
	return pool, org
}

// The bound compliance plans, on one seed: seeding and vacuuming 20,000
// assets in a database of their own costs seconds of PostgreSQL's CPU,
// and both only read it.
func TestBoundCompliancePlans(t *testing.T) {
	t.Parallel()
	pool, org := planSchema(t)
	t.Run("a page walks in page order", func(t *testing.T) { testBoundCompliancePageWalksInPageOrder(t, pool, org) })
	t.Run("the rows of one asset are a probe", func(t *testing.T) { testBoundComplianceOfOneAssetProbes(t, pool, org) })
}

// A bound caller's page of /compliance walks indexes in page order and
// stops at the page's end, as an unbound one's does: it neither gathers
// every asset its organization sees and sorts them (only one owner's
// range of rows in the page's state, or its grants, when the planner
// finds them few), nor reads a table whole (at 20,000 assets over 200 organizations such a plan read all of
// known_assets, 10 ms against 0.1 ms unbound), nor probes the read model
// for each asset its organization owns (its owned assets and those with
// no owner are one range each of an owner index; only grants are a walk
// of asset_seen_by). Its rows are the unbound page's rows of the assets
// the organization sees (access.VisibleTo, the rule in SQL), live and
// as_of, through grants and on assets with no owner.
func testBoundCompliancePageWalksInPageOrder(t *testing.T, pool *store.Pool, org string) {
	today := model.Today()
	asOf := model.DateOf(today.Time().AddDate(0, -1, 0))
	// Rows are sorted by asset only when already in asset order (the
	// type's order within an asset): an Incremental Sort. (The as_of
	// rows' plans sort a row's few candidates by other keys.)
	fullSort := regexp.MustCompile(`(^|->  )Sort  .*\n\s*Sort Key: [^,\n]*\basset_id\b`)
	wholeTable := regexp.MustCompile(`Seq Scan on (known_assets|latest_actions|asset_access|asset_seen_by)`)
	// The owned assets and those with no owner: one range each of an
	// owner index of the read model (the actions migration 014).
	ownerRange := regexp.MustCompile(`(Bitmap Index Scan on|Index (Only )?Scan using) (latest_actions_owner_state_idx|known_assets_owner_idx)[^\n]*\n\s*Index Cond: \(\(?owner_organization_id = `)
	// The organization's grants: one range of the copy's partial index
	// (the kit's migration 012), which the planner walks in order when it
	// expects many and may gather and sort when it expects few (as it may
	// an owner's range): its estimate of a range this small flips with
	// the heap's visibility map, which a vacuum cannot always set while
	// other schemas' transactions run.
	grantRange := regexp.MustCompile(`(Bitmap Index Scan on|Index (Only )?Scan using) asset_seen_by_granted[^\n]*\n\s*Index Cond: \(organization_id = `)
	for _, c := range []struct {
		name   string
		filter compliance.Filter
	}{
		{"overdue expert controls", compliance.Filter{ActionTypes: []string{"expert_control"}, States: []string{"overdue"}}},
		{"every state of two types", compliance.Filter{ActionTypes: []string{"expert_control", "repair"}}},
		{"every state as_of", compliance.Filter{ActionTypes: []string{"expert_control"}, AsOf: &asOf}},
	} {
		page := model.Page{Limit: model.DefaultLimit}
		sql, args := compliance.PageSQL(c.filter, org, today, nil, page)
		plan := testkit.Explain(t, pool, sql, args...)
		// A part that sorts must read one range: the rows of the
		// organization's own (or Everyone's) assets in the page's state,
		// or its grants, which the planner may gather and sort when they
		// are few. The top, above the parts' limits, may sort their
		// appended pages (a page each).
		sortsMore := false
		for i, part := range strings.Split(plan, "->  Limit") {
			merge := i == 0 && strings.Contains(part, "Append")
			sortsMore = sortsMore || fullSort.MatchString(part) && !ownerRange.MatchString(part) && !grantRange.MatchString(part) && !merge
		}
		if sortsMore || wholeTable.MatchString(plan) || !strings.Contains(plan, "asset_seen_by_granted") ||
			!ownerRange.MatchString(plan) {
			t.Errorf("%s: the bound page's plan sorts, reads a table whole, does not walk the grants of asset_seen_by, "+
				"or reads no owner's range of the read model:\n%s", c.name, plan)
		}
		// The rows: the unbound answer, all pages of it, kept where the
		// organization sees the asset, up to a page.
		got := pageRows(t, pool, sql, args)
		all, allArgs := compliance.PageSQL(c.filter, "", today, nil, model.Page{Limit: 100_000})
		want := pageRows(t, pool, `SELECT a.asset_id, a.action_type FROM (`+all+`) a WHERE `+
			access.VisibleTo("a.asset_id", fmt.Sprintf("$%d", len(allArgs)+1)), append(allArgs, org))
		want = want[:min(len(want), page.Limit+1)]
		if len(got) <= page.Limit || !slices.Equal(got, want) {
			t.Errorf("%s: the bound page holds %d rows %v…, want %d %v…", c.name, len(got), got[:min(3, len(got))], len(want), want[:min(3, len(want))])
		}
		// The page holds assets seen in each way: owned, granted, no owner.
		ways := map[string]bool{}
		for _, r := range got {
			switch k, _ := strconv.ParseInt(r[24:36], 16, 64); {
			case k%1000 == 1:
				ways["no owner"] = true
			case k%200 == 0:
				ways["owned"] = true
			default:
				ways["granted"] = true
			}
		}
		if len(ways) != 3 {
			t.Errorf("%s: the page's assets are seen in %d ways, want 3 (owned, granted, no owner): %v", c.name, len(ways), got)
		}
	}
}

// The read model's owner column is the copy's through every change: NULL
// while the copy does not know the asset (no bound caller sees it), the
// owner, or Everyone for an asset with no owner; a row written after a
// change takes the owner of the change, one written before moves with it.
func TestComplianceOwnerFollowsTheCopy(t *testing.T) {
	t.Parallel()
	pool := servicetest.Store(t, Spec()).Pool
	ctx := t.Context()
	const asset = "00000000-0000-7000-8000-00000000ffff"
	orgA, orgB := uuid.NewString(), uuid.NewString()
	for _, step := range []struct {
		name, sql string
		args      []any
		want      string // of the asset's row of known_assets and each of latest_actions
	}{
		{"known before the copy", `INSERT INTO known_assets (asset_id, asset_type_id, event_id) VALUES ($1, $1, $1);
			INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, class) VALUES ($1, 'repair', $1, '2020-01-01', 'open_ended')`,
			nil, ""},
		{"the copy learns it", `INSERT INTO asset_access (asset_id, owner_organization_id, version) VALUES ($1, $2, 0)`, []any{orgA}, orgA},
		{"written after", `INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, class) VALUES ($1, 'maintenance', $1, '2020-01-01', 'open_ended')`,
			nil, orgA},
		{"a grant changes no owner", `UPDATE asset_access SET grantees = ARRAY[$2::uuid], version = 1 WHERE asset_id = $1`, []any{orgB}, orgA},
		{"transferred", `UPDATE asset_access SET owner_organization_id = $2, grantees = '{}', version = 2 WHERE asset_id = $1`, []any{orgB}, orgB},
		{"no owner", `UPDATE asset_access SET owner_organization_id = NULL, version = 3 WHERE asset_id = $1`, nil, access.Everyone},
		{"written with no owner", `INSERT INTO latest_actions (asset_id, action_type, action_id, performed_at, class) VALUES ($1, 'expert_control', $1, '2020-01-01', 'open_ended')`,
			nil, access.Everyone},
		{"owned again by a page of the log", `INSERT INTO asset_access (asset_id, owner_organization_id, version) VALUES ($1, $2, 4)
			ON CONFLICT (asset_id) DO UPDATE SET owner_organization_id = excluded.owner_organization_id, version = excluded.version`, []any{orgA}, orgA},
	} {
		for _, q := range strings.Split(step.sql, ";") {
			if _, err := pool.Exec(ctx, q, append([]any{asset}, step.args...)...); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
		}
		owners := textRows(t, pool, `SELECT coalesce(owner_organization_id::text, '') FROM known_assets WHERE asset_id = $1
			UNION ALL SELECT coalesce(owner_organization_id::text, '') FROM latest_actions WHERE asset_id = $1`, asset)
		for i, got := range owners {
			if got != step.want {
				t.Errorf("%s: row %d of %v has owner %q, want %q", step.name, i, owners, got, step.want)
			}
		}
	}
}

// A bound caller's rows of one asset are a probe of the organization's
// rows, not a walk of every asset it sees.
func testBoundComplianceOfOneAssetProbes(t *testing.T, pool *store.Pool, org string) {
	for asset, want := range map[string]int{
		"00000000-0000-7000-8000-0000000000c8": 4, // 200: organization 0's
		"00000000-0000-7000-8000-0000000000c3": 4, // 195: granted to it
		"00000000-0000-7000-8000-0000000003e9": 4, // 1001: no owner
		"00000000-0000-7000-8000-0000000000c9": 0, // 201: another's
	} {
		id := uuid.MustParse(asset)
		sql, args := compliance.PageSQL(compliance.Filter{AssetID: &id}, org, model.Today(), nil, model.Page{Limit: model.DefaultLimit})
		plan := testkit.Explain(t, pool, sql, args...)
		// A probe of asset_seen_by by the asset (with the organization or
		// filtered by it: the planner picks either index, both one row),
		// never a walk of every row of the organization.
		probe := regexp.MustCompile(`Index (Only )?Scan using \w+ on asset_seen_by[^\n]*\n\s*Index Cond: [^\n]*asset_id = '` + asset + `'`)
		walk := regexp.MustCompile(`Index Cond: \(organization_id = '[^']*'::uuid\)\n`)
		if !probe.MatchString(plan) || walk.MatchString(plan) {
			t.Errorf("asset %s: the bound rows of one asset do not probe the organization's rows by asset:\n%s", asset, plan)
		}
		if got := pageRows(t, pool, sql, args); len(got) != want {
			t.Errorf("asset %s: %d rows %v, want %d", asset, len(got), got, want)
		}
	}
}

// pageRows runs a page query and returns its rows as asset/type, in
// the page's order.
func pageRows(t *testing.T, db *store.Pool, sql string, args []any) []string {
	t.Helper()
	return textRows(t, db, `SELECT p.asset_id::text || '/' || p.action_type FROM (`+sql+`) p
		ORDER BY p.asset_id, p.action_type COLLATE "C"`, args...)
}
