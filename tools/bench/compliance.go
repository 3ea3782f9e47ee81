package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions"
	"github.com/assetregistry/registry/services/actions/compliance"
	"github.com/assetregistry/registry/services/actions/compliance/roller"
)

// compliancePagePrefix begins the names of the rows that need the
// compliance seed (a million assets, five million actions).
const compliancePagePrefix = "GET /compliance?"

// complianceQuery is the filter of the compliance rows: the question an
// inspection planner asks most.
const complianceQuery = "state=overdue&action_type=expert_control"

// complianceDeepPages is how many pages of the default size the deep page
// lies after.
const complianceDeepPages = 500

// seedCompliance copies assets assets into the actions service's projection
// of assets (as their asset.created events would have made it) and actions
// actions on them into its actions table, then computes every latest action
// as `actions rebuild-compliance` does, and analyzes. Asset k has
// actions/assets actions, the j-th of type j (even assets) or 2j (odd
// assets: they never see a maintenance or a repair), performed over ten
// years in creation order, 90 % finalized, 5 % failed, 4 % without a
// valid-through date, the others valid for a year. One transaction loads
// it all and records its rows as announced (roller.SeedAnnouncedSQL): the
// compliance roller finds the registry as a live one is, every state
// already told, rather than queued for a transition each. The assets
// belong to orgs organizations, the bound client's among them
// (complianceAccess).
func (e *Env) seedCompliance(ctx context.Context, assets, n, orgs int) error {
	db, err := e.connectDatabase(ctx)
	if err != nil {
		return fmt.Errorf("seed compliance: %w", err)
	}
	defer db.Close(ctx)
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("seed compliance: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after commit
	steps := &e.seedSteps
	steps.begin()
	ids := make([]uuid.UUID, assets)
	for k := range ids {
		ids[k] = uuid.Must(uuid.NewV7())
	}
	// Who sees the assets first: the projection's rows name their owner
	// (the actions migration 014), here from the seed's own list rather
	// than by the owner's trigger, a lookup per row.
	owners, err := complianceAccess(ctx, tx, ids, e.Creds.OrgA.ID, orgs)
	if err != nil {
		return err
	}
	steps.done("access")
	assetType, eventID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	k := 0
	if _, err = tx.CopyFrom(ctx, pgx.Identifier{"actions", "known_assets"}, []string{"asset_id", "asset_type_id", "event_id", "owner_organization_id"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if k == assets {
				return nil, nil
			}
			k++
			return []any{ids[k-1], assetType, eventID, owners[(k-1)%len(owners)]}, nil
		})); err != nil {
		return fmt.Errorf("seed compliance: assets: %w", err)
	}
	steps.done("assets")
	first := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	i := 0
	if _, err = tx.CopyFrom(ctx, pgx.Identifier{"actions", "actions"},
		[]string{"id", "asset_id", "action_type", "performed_at", "status_ok", "status_use_ok", "status_finalized",
			"status_valid_through", "source_system", "created_by", "updated_by"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			asset, j := i%assets, i/assets
			actionType := actions.ActionTypes[(j*(1+asset%2))%len(actions.ActionTypes)]
			performed := first.AddDate(0, 0, i*10*365/n)
			var validThrough *time.Time
			if i%25 != 3 {
				v := performed.AddDate(1, 0, 0)
				validThrough = &v
			}
			ok := i%20 != 7
			row := []any{uuid.Must(uuid.NewV7()), ids[asset], actionType, performed, ok, ok, i%10 != 9, validThrough,
				"bench-seed", "bench", "bench"}
			i++
			return row, nil
		})); err != nil {
		return fmt.Errorf("seed compliance: actions: %w", err)
	}
	steps.done("actions")
	if _, err := tx.Exec(ctx, "SET LOCAL search_path = actions"); err != nil {
		return fmt.Errorf("seed compliance: %w", err)
	}
	if _, err := tx.Exec(ctx, compliance.RebuildLatestSQL); err != nil {
		return fmt.Errorf("seed compliance: latest actions: %w", err)
	}
	steps.done("latest")
	// Statistics first: the rows' states join every table just copied,
	// which without them PostgreSQL plans as empty (20 s for the quick
	// run's 2,000 assets instead of a fraction of one).
	if _, err := tx.Exec(ctx, "ANALYZE actions.actions, actions.known_assets, actions.latest_actions, actions.asset_access"); err != nil {
		return fmt.Errorf("seed compliance: %w", err)
	}
	steps.done("analyze")
	if _, err := tx.Exec(ctx, roller.SeedAnnouncedSQL, model.Today()); err != nil {
		return fmt.Errorf("seed compliance: announced rows: %w", err)
	}
	steps.done("announced")
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("seed compliance: %w", err)
	}
	steps.done("commit")
	if _, err := db.Exec(ctx, "ANALYZE actions.compliance_announced"); err != nil {
		return fmt.Errorf("seed compliance: %w", err)
	}
	// The copy as a live registry's is: a bulk copy leaves every grantee
	// in the GIN index's pending list, which each bound read would scan
	// (2.7 of a page's 3.8 ms at a million assets) until autovacuum
	// merged it. Its turned-around rows (asset_seen_by, which its trigger
	// wrote) likewise: a bound page walks their index only.
	if _, err := db.Exec(ctx, "VACUUM (ANALYZE) actions.asset_access, actions.asset_seen_by"); err != nil {
		return fmt.Errorf("seed compliance: %w", err)
	}
	steps.done("vacuum")
	e.ComplianceAssets = assets
	return nil
}

// findComplianceCursor follows rel="next" from the first page of the
// compliance rows' filter, in pages of a thousand, to the cursor after
// complianceDeepPages pages of the default size (or the last page but one
// of a smaller seed).
func (e *Env) findComplianceCursor(ctx context.Context) error {
	cursor := ""
	for skip := complianceDeepPages * model.DefaultLimit; skip > 0; {
		limit := min(skip, model.MaxLimit)
		path := "/compliance?" + complianceQuery + "&limit=" + strconv.Itoa(limit)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		_, h, err := e.exchange(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: path, Want: 200})
		if err != nil {
			return fmt.Errorf("compliance deep cursor: %w", err)
		}
		next, _, _ := strings.Cut(strings.TrimPrefix(h.Get("Link"), "<"), ">")
		u, err := url.Parse(next)
		if err != nil || u.Query().Get("cursor") == "" {
			// A small seed (QUICK=1) has fewer pages: as deep as it goes.
			if cursor == "" {
				return fmt.Errorf("compliance deep cursor: GET %s: no next page (Link %q)", path, h.Get("Link"))
			}
			break
		}
		cursor = u.Query().Get("cursor")
		skip -= limit
	}
	e.ComplianceCursor = cursor
	return nil
}

// compliancePage is GET /compliance?state=overdue&action_type=expert_control,
// a page of the default size: the first (divided by the pgx point select
// of the same run), or the one after complianceDeepPages pages, divided by
// the first: about 1 means as fast deep as on the first page.
func compliancePage(deep bool) Call {
	first := compliancePagePrefix + complianceQuery + ", first page"
	c := Call{Name: first, Service: "actions", Limit: PgxSelect}
	if deep {
		c.Name, c.Limit = compliancePagePrefix+complianceQuery+", deep page", first+" · direct"
	}
	c.Request = func(e *Env, _ *Worker) Request {
		path := "/compliance?" + complianceQuery + "&limit=" + strconv.Itoa(model.DefaultLimit)
		if deep {
			path += "&cursor=" + url.QueryEscape(e.ComplianceCursor)
		}
		return Request{Method: "GET", Path: path, Want: 200}
	}
	return c
}

// ComplianceLag is how far the compliance read model follows the assets
// service (their change events, through NATS, to the actions service's
// projection) while actions are written at a steady rate: from the answer
// to POST /assets to the asset's first row in GET /compliance, both
// through the gateway. Action writes themselves update the read model in
// their own transaction, so they have no lag to measure; they are the
// load.
type ComplianceLag struct {
	TargetWritesPerSec float64 `json:"target_action_writes_per_s"`
	WritesPerSec       float64 `json:"action_writes_per_s"` // achieved
	WriteErrors        int     `json:"action_write_errors"`
	Samples            int     `json:"samples"`
	P50MS              float64 `json:"p50_ms"`
	P99MS              float64 `json:"p99_ms"`
	MaxMS              float64 `json:"max_ms"`
}

// complianceLagRate is the action writes per second of the lag's load.
const complianceLagRate = 500

// measureComplianceLag runs the lag measurement for d.
func (e *Env) measureComplianceLag(ctx context.Context, d time.Duration) (ComplianceLag, error) {
	lag := ComplianceLag{TargetWritesPerSec: complianceLagRate}
	gateway := e.Stack.RegistryURL
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The load: complianceLagRate creates a second, paced by a ticker and
	// sent by enough writers that a slow answer does not slow the pace
	// (a tick with every writer busy is skipped and shows in the rate).
	ticks := make(chan struct{})
	var writes, writeErrors atomic.Int64
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range ticks {
				body, _ := json.Marshal(map[string]any{"asset_id": e.Assets[(w*7919+int(writes.Load()))%len(e.Assets)],
					"action_type": "expert_control", "performed_at": "2025-03-14", "status_ok": true, "status_finalized": true,
					"status_valid_through": "2026-03-14", "source_system": "bench-lag"})
				if _, err := e.send(ctx, gateway, Request{Method: "POST", Path: "/actions", Body: body, Want: 201}); err != nil {
					if ctx.Err() == nil {
						writeErrors.Add(1)
					}
					continue
				}
				writes.Add(1)
			}
		}()
	}
	go func() {
		defer close(ticks)
		tick := time.NewTicker(time.Second / complianceLagRate)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				select {
				case ticks <- struct{}{}:
				default:
				}
			}
		}
	}()
	started := time.Now()
	var samples []time.Duration
	for n := 0; time.Since(started) < d; n++ {
		body, _ := json.Marshal(assetInput(1_000_000+n, e.AssetTypeID))
		raw, err := e.send(ctx, gateway, Request{Method: "POST", Path: "/assets", Body: body, Want: 201})
		if err != nil {
			return lag, fmt.Errorf("compliance lag: %w", err)
		}
		answered := time.Now()
		var created struct{ ID string }
		if err := json.Unmarshal(raw, &created); err != nil {
			return lag, fmt.Errorf("compliance lag: %w", err)
		}
		for {
			raw, err := e.send(ctx, gateway, Request{Method: "GET", Path: "/compliance?action_type=expert_control&asset_id=" + created.ID, Want: 200})
			if err != nil {
				return lag, fmt.Errorf("compliance lag: %w", err)
			}
			if string(raw) != "[]\n" {
				break
			}
			if time.Since(answered) > time.Minute {
				return lag, fmt.Errorf("compliance lag: asset %s not in /compliance after a minute", created.ID)
			}
			time.Sleep(5 * time.Millisecond)
		}
		samples = append(samples, time.Since(answered))
	}
	elapsed := time.Since(started)
	cancel()
	wg.Wait()
	slices.Sort(samples)
	at := func(q float64) float64 { return ms(samples[min(len(samples)-1, int(q*float64(len(samples))))]) }
	lag.WritesPerSec = float64(writes.Load()) / elapsed.Seconds()
	lag.WriteErrors = int(writeErrors.Load())
	lag.Samples, lag.P50MS, lag.P99MS, lag.MaxMS = len(samples), at(0.50), at(0.99), ms(samples[len(samples)-1])
	return lag, nil
}

func (l ComplianceLag) String() string {
	return fmt.Sprintf("compliance read model's lag behind POST /assets under %.0f action writes/s (target %.0f, %d write errors): p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d assets)",
		l.WritesPerSec, l.TargetWritesPerSec, l.WriteErrors, l.P50MS, l.P99MS, l.MaxMS, l.Samples)
}

// complianceLagFor is how long the lag is measured.
const complianceLagFor = 15 * time.Second

// explainCompliance prints EXPLAIN (ANALYZE, BUFFERS) of the service's own
// query for the first and the deep page of the compliance rows: the
// database's part of each, without HTTP, JSON and the gateway.
func (e *Env) explainCompliance(ctx context.Context, w io.Writer) error {
	conn, err := e.connectDatabase(ctx)
	if err != nil {
		return fmt.Errorf("explain compliance: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET search_path = actions"); err != nil {
		return fmt.Errorf("explain compliance: %w", err)
	}
	query, _ := url.ParseQuery(complianceQuery)
	filter := compliance.Filter{ActionTypes: query["action_type"], States: query["state"]}
	after, sub, err := model.DecodeCursor(e.ComplianceCursor, query.Encode())
	if err != nil {
		return fmt.Errorf("explain compliance: the deep cursor: %w", err)
	}
	for _, p := range []struct {
		name, seenBy string
		page         model.Page
	}{
		{"first page", "", model.Page{Limit: model.DefaultLimit}},
		{"deep page", "", model.Page{Limit: model.DefaultLimit, After: after, AfterSub: sub}},
		{"bound client's first page", e.Creds.OrgA.ID, model.Page{Limit: model.DefaultLimit}},
	} {
		sql, args := compliance.PageSQL(filter, p.seenBy, model.Today(), nil, p.page)
		rows, err := conn.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
		if err != nil {
			return fmt.Errorf("explain compliance: %w", err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("explain compliance: %w", err)
		}
		fmt.Fprintf(w, "EXPLAIN (ANALYZE, BUFFERS) of the %s of GET /compliance?%s:\n    %s\n", p.name, complianceQuery, strings.Join(plan, "\n    "))
	}
	return nil
}

// compliancePlannedQuery is the filter of the planned rows: maintenance
// (recorded on the seed's even assets only; the odd ones are never
// maintained) under a plan for every asset type.
const compliancePlannedQuery = "state=overdue&action_type=maintenance"

// compliancePlannedPage is a first page of compliancePlannedQuery while an
// inspection plan is for maintenance: its rows' dates and states are
// computed from the plan as the page is read (docs/architecture.md, the
// compliance read model), which is what makes a plan's change over a
// million assets cost nothing to write and be in the next answer. Divided
// by the first page of the unplanned filter: what reading the plan costs.
func compliancePlannedPage() Call {
	return Call{Name: compliancePagePrefix + compliancePlannedQuery + ", under a plan, first page", Service: "actions",
		Limit: compliancePagePrefix + complianceQuery + ", first page · direct",
		Before: func(ctx context.Context, e *Env, _ string) error {
			return e.planMaintenance(ctx, `INSERT INTO actions.inspection_plans (id, action_type, interval_period, first_due_after,
				due_soon, created_by, updated_by) VALUES ($1, 'maintenance', 'P6M', 'P0D', 'P30D', 'bench', 'bench')
				ON CONFLICT DO NOTHING`, uuid.Must(uuid.NewV7()))
		},
		After: func(ctx context.Context, e *Env) error {
			return e.planMaintenance(ctx, `DELETE FROM actions.inspection_plans WHERE action_type = 'maintenance' AND created_by = $1`, "bench")
		},
		Request: func(e *Env, _ *Worker) Request {
			return Request{Method: "GET", Path: "/compliance?" + compliancePlannedQuery + "&limit=" + strconv.Itoa(model.DefaultLimit), Want: 200}
		},
	}
}

// planMaintenance writes the bench's plan straight to the actions schema:
// the bench's client is not an admin, and the row measures the read.
func (e *Env) planMaintenance(ctx context.Context, sql string, args ...any) error {
	conn, err := e.connectDatabase(ctx)
	if err != nil {
		return fmt.Errorf("bench plan: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// seedSteps times the steps of a seed, for the progress line: where a
// seed's time goes.
type seedSteps struct {
	last  time.Time
	parts []string
}

func (s *seedSteps) begin() { s.last, s.parts = time.Now(), nil }

func (s *seedSteps) done(step string) {
	now := time.Now()
	s.parts = append(s.parts, fmt.Sprintf("%s %.1f s", step, now.Sub(s.last).Seconds()))
	s.last = now
}

func (s *seedSteps) String() string { return strings.Join(s.parts, ", ") }

// ComponentsPageName is the first page of /compliance with each row's
// components rolled up (include=components), at the compliance seed's
// scale with componentsPerAsset components under each of its assets.
const ComponentsPageName = compliancePagePrefix + "include=components, first page · gateway"

// componentsPerAsset is how many components the row puts under each
// asset of the compliance read model: a crane's hook block, slings and
// wire rope.
const componentsPerAsset = 3

// componentsEvent marks the row's links (known_parents.from_event) and
// components (known_assets.event_id): what unseedComponents takes out.
var componentsEvent = uuid.MustParse("00000000-0000-7000-8000-00000000c0c0")

// ComponentsPageRow reads the first page with the components' rows
// rolled up, through the gateway. Before it, componentsPerAsset
// components (assets with no action, their rows "never") go under every
// asset of the read model; after it they are taken out again, so the
// other compliance rows and the roller's measurements read the seed as
// it was.
var ComponentsPageRow = Row{Name: ComponentsPageName, Via: "gateway", Long: true,
	Before: func(ctx context.Context, e *Env) error { return e.seedComponents(ctx) },
	After:  func(ctx context.Context, e *Env) error { return e.unseedComponents(ctx) },
	Op: func(e *Env) (Op, error) {
		return e.HTTPOp(e.Stack.RegistryURL, func(*Worker) Request { return componentsPage() }), nil
	}}

func componentsPage() Request {
	return Request{Method: "GET", Path: "/compliance?include=components&limit=" + strconv.Itoa(model.DefaultLimit), Want: 200}
}

// seedComponents puts componentsPerAsset components under every asset of
// the read model, each with its parent's type and owner, as the assets
// service's events would have made them, and checks that a page rolls
// them up. The components' rows are "never" (no action, no plan
// during the rows), so their queue entries go in the same transaction, as
// the compliance seed's do: nothing to announce, and no roller pass over
// millions of assets beside the measurement.
func (e *Env) seedComponents(ctx context.Context) error {
	// A round that failed before its After left them.
	if err := e.unseedComponents(ctx); err != nil {
		return err
	}
	err := e.componentsTransaction(ctx, "seed components", func(tx pgx.Tx) (bool, error) {
		type parent struct {
			ID, Type uuid.UUID
			Owner    *uuid.UUID
		}
		rows, err := tx.Query(ctx, `SELECT asset_id, asset_type_id, owner_organization_id FROM actions.known_assets WHERE NOT deleted ORDER BY asset_id`)
		if err != nil {
			return false, fmt.Errorf("parents: %w", err)
		}
		parents, err := pgx.CollectRows(rows, pgx.RowToStructByPos[parent])
		if err != nil {
			return false, fmt.Errorf("parents: %w", err)
		}
		parts := make([]uuid.UUID, len(parents)*componentsPerAsset)
		for i := range parts {
			parts[i] = uuid.Must(uuid.NewV7())
		}
		copyParts := func(table string, columns []string, row func(part uuid.UUID, p parent) []any) error {
			i := 0
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"actions", table}, columns, pgx.CopyFromFunc(func() ([]any, error) {
				if i == len(parts) {
					return nil, nil
				}
				i++
				return row(parts[i-1], parents[(i-1)/componentsPerAsset]), nil
			}))
			if err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
			return nil
		}
		if err := copyParts("known_parents", []string{"asset_id", "parent_asset_id", "from_event"}, func(part uuid.UUID, p parent) []any {
			return []any{part, p.ID, componentsEvent}
		}); err != nil {
			return false, err
		}
		if err := copyParts("known_assets", []string{"asset_id", "asset_type_id", "event_id", "owner_organization_id"}, func(part uuid.UUID, p parent) []any {
			return []any{part, p.Type, componentsEvent, p.Owner}
		}); err != nil {
			return false, err
		}
		// Who sees a component: its parent's owner, in the tenancy copy.
		if _, err := tx.Exec(ctx, `INSERT INTO actions.asset_access (asset_id, owner_organization_id, version)
			SELECT l.asset_id, a.owner_organization_id, 0 FROM actions.known_parents l
			JOIN actions.asset_access a ON a.asset_id = l.parent_asset_id WHERE l.from_event = $1`, componentsEvent); err != nil {
			return false, err
		}
		_, err = tx.Exec(ctx, `DELETE FROM actions.compliance_dirty d USING actions.known_parents l WHERE l.from_event = $1 AND d.asset_id = l.asset_id`, componentsEvent)
		return len(parts) > 0, err
	})
	if err != nil {
		return err
	}
	// The page rolls them up: a row falling due is "never" rolled up (the
	// seed's latest actions are all due or overdue).
	raw, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: "/compliance?include=components&state=due&limit=1", Want: 200})
	if err != nil {
		return fmt.Errorf("seed components: %w", err)
	}
	var page []struct {
		RolledUp *string `json:"rolled_up_state"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return fmt.Errorf("seed components: %w", err)
	}
	if len(page) != 1 || page[0].RolledUp == nil || *page[0].RolledUp != "never" {
		return fmt.Errorf("seed components: a row falling due does not roll up its components as never: %.300s", raw)
	}
	return nil
}

// unseedComponents takes seedComponents' components out again, with
// their links, their tenancy copy and the queue entries their deletion
// made (none before a round's first seed: nothing to vacuum then).
func (e *Env) unseedComponents(ctx context.Context) error {
	return e.componentsTransaction(ctx, "remove components", func(tx pgx.Tx) (bool, error) {
		found, err := tx.Exec(ctx, `CREATE TEMP TABLE bench_components ON COMMIT DROP AS
			SELECT asset_id FROM actions.known_parents WHERE from_event = $1`, componentsEvent)
		if err != nil || found.RowsAffected() == 0 {
			return false, err
		}
		for _, sql := range []string{
			`DELETE FROM actions.known_parents l USING bench_components c WHERE l.asset_id = c.asset_id`,
			`DELETE FROM actions.known_assets k USING bench_components c WHERE k.asset_id = c.asset_id`,
			`DELETE FROM actions.asset_access a USING bench_components c WHERE a.asset_id = c.asset_id`,
			`DELETE FROM actions.compliance_dirty d USING bench_components c WHERE d.asset_id = c.asset_id`,
		} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// componentsTransaction runs fn in a transaction of its own and then,
// when fn says it changed them, vacuums the tables the components live
// in, so that the rows after read them as a live registry's (no dead
// rows, fresh statistics).
func (e *Env) componentsTransaction(ctx context.Context, what string, fn func(tx pgx.Tx) (changed bool, err error)) error {
	db, err := e.connectDatabase(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer db.Close(ctx)
	changed := false
	if err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		changed, err = fn(tx)
		return err
	}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !changed {
		return nil
	}
	if _, err := db.Exec(ctx, "VACUUM (ANALYZE) actions.known_parents, actions.known_assets, actions.asset_access"); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
