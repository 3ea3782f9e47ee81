package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
)

// Organizations as tenants: what a client bound to an organization pays
// for seeing only its organization's rows. Each read is measured twice,
// call by call in turns (Row.Paired), through the gateway: by the bound
// client (make run's Org A client, devstack.EnsureClients) and by the
// run's unbound client, on the same seed. The goal divides the two.
const (
	boundSuffix   = ", bound client · gateway"
	unboundSuffix = ", unbound client · gateway"
	// tenantAssets is how many assets the bound client creates for
	// itself: a page of the list rows. The run's other assets each belong
	// to one of the seeded organizations.
	tenantAssets = 100
	// feedEvents is how many events the feed row seeds; one in
	// feedVisibleEvery is on an asset of the bound client's organization.
	feedEvents       = 100_000
	feedVisibleEvery = 100
	// feedOtherAssets are the assets of the other events, each owned by
	// an organization of its own.
	feedOtherAssets = 9_900
)

// Names of the tenancy rows the goals name.
const (
	tenantGet        = "GET /assets/{id}"
	tenantList       = "GET /assets?limit=100"
	tenantCompliance = compliancePagePrefix + complianceQuery + ", first page"
	tenantFeed       = "GET /events?limit=100, 1 in 100 events the bound client's"
)

// tenancy is the run's state of the tenancy rows.
type tenancy struct {
	token  string   // the bound client's access token, fresh for each row
	assets []string // the assets its organization owns (it created them)
	// feed: the seeded events' range, the cursors of the bound client's
	// pages over them, and the other organizations' assets they are on.
	feedFrom, feedTo int64
	feedCursors      []string
	feedOthers       []uuid.UUID
}

// tenancyPair is a GET of path by the bound client, paired with the same
// GET by the unbound one; before runs before the pair, after the token.
func tenancyPair(name string, path func(e *Env, w *Worker) string, before func(ctx context.Context, e *Env) error, after func(ctx context.Context, e *Env) error, long bool) []Row {
	op := func(bound bool) func(e *Env) (Op, error) {
		return func(e *Env) (Op, error) {
			return e.HTTPOp(e.Stack.RegistryURL, func(w *Worker) Request {
				r := Request{Method: "GET", Path: path(e, w), Want: 200}
				if bound {
					r.Token = e.tenancy.token
				}
				return r
			}), nil
		}
	}
	prepare := func(ctx context.Context, e *Env) error {
		if err := e.refreshBoundToken(ctx); err != nil || before == nil {
			return err
		}
		return before(ctx, e)
	}
	return []Row{
		{Name: name + boundSuffix, Via: "gateway", Limit: name + unboundSuffix, Paired: name + unboundSuffix, Clients: 1,
			Before: prepare, After: after, Long: long, Op: op(true)},
		{Name: name + unboundSuffix, Via: "gateway", Clients: 1, Long: long, Op: op(false)},
	}
}

// TenancyRows: a GET by id and a page of assets (the assets service's own
// filter on owner and grants), a first page of /compliance (the actions
// service's copy of who sees which asset, refreshed before the read; at
// the compliance seed's million assets over ComplianceOrganizations, about
// a hundred of them the bound organization's), and a feed page where one
// event in a hundred is on an asset the bound organization sees (the
// events service's copy; long: it seeds its events).
func TenancyRows() []Row {
	var rows []Row
	rows = append(rows, tenancyPair(tenantGet, func(e *Env, w *Worker) string {
		return "/assets/" + e.tenancy.assets[w.Rand.IntN(len(e.tenancy.assets))]
	}, nil, nil, false)...)
	rows = append(rows, tenancyPair(tenantList, func(*Env, *Worker) string { return "/assets?limit=100" }, nil, nil, false)...)
	rows = append(rows, tenancyPair(tenantCompliance, func(*Env, *Worker) string {
		return "/compliance?" + complianceQuery + "&limit=" + strconv.Itoa(model.DefaultLimit)
	}, nil, nil, false)...)
	rows = append(rows, tenancyPair(tenantFeed, func(e *Env, w *Worker) string {
		return "/events?limit=100&after=" + e.tenancy.feedCursors[w.Rand.IntN(len(e.tenancy.feedCursors))]
	}, seedFeed, unseedFeed, true)...)
	return rows
}

// TenancyGoals: the bound reads at 0.9 of the unbound ones, the bound
// compliance page and feed page within their times.
var TenancyGoals = []Goal{
	{Name: "tenancy: GET /assets/{id} bound ≥ 0.9 × unbound (gateway)", Row: tenantGet + boundSuffix, Of: tenantGet + unboundSuffix, Metric: "req/s", AtLeast: 0.9},
	{Name: "tenancy: GET /assets?limit=100 bound ≥ 0.9 × unbound (gateway)", Row: tenantList + boundSuffix, Of: tenantList + unboundSuffix, Metric: "req/s", AtLeast: 0.9},
	{Name: "tenancy: /compliance first page bound ≥ 0.9 × unbound (gateway)", Row: tenantCompliance + boundSuffix, Of: tenantCompliance + unboundSuffix, Metric: "req/s", AtLeast: 0.9},
	{Name: "tenancy: /compliance first page, bound, 1 M assets over 10,000 organizations, p50 ≤ 20 ms (gateway)", Row: tenantCompliance + boundSuffix, Metric: "p50 s", AtMost: 0.02},
	{Name: "tenancy: feed page of 100, 1 in 100 events visible, bound, p50 ≤ 50 ms (gateway)", Row: tenantFeed + boundSuffix, Metric: "p50 s", AtMost: 0.05},
}

// refreshBoundToken gets a fresh access token of the bound client.
func (e *Env) refreshBoundToken(ctx context.Context) error {
	token, err := e.accessToken(ctx, e.Creds.OrgA.ClientID, e.Creds.OrgA.ClientSecret)
	if err != nil {
		return fmt.Errorf("the bound client: %w", err)
	}
	e.tenancy.token = token
	return nil
}

// seedTenant has the bound client create tenantAssets assets of the run's
// type through the gateway: its organization owns them.
func (e *Env) seedTenant(ctx context.Context) error {
	if err := e.refreshBoundToken(ctx); err != nil {
		return err
	}
	e.tenancy.assets = make([]string, tenantAssets)
	return e.parallel(ctx, tenantAssets, func(ctx context.Context, i int) error {
		body, _ := json.Marshal(map[string]string{"serial_number": "TENANT" + strconv.Itoa(i), "asset_type_id": e.AssetTypeID})
		raw, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "POST", Path: "/assets", Body: body, Token: e.tenancy.token, Want: 201})
		var created struct{ ID string }
		if err == nil {
			err = json.Unmarshal(raw, &created)
		}
		e.tenancy.assets[i] = created.ID
		return err
	})
}

// complianceAccess copies who sees the compliance seed's assets into the
// actions service's copy (asset_access, as its refreshes would have
// written it): asset k belongs to organization k mod orgs, organization
// 0 being the bound client's (the others exist only as ids), and every
// tenth asset also carries a read grant to another organization (never
// the bound one), so the grantees' index holds rows. It returns the
// organizations: asset k's owner is owners[k mod len(owners)].
func complianceAccess(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, bound string, orgs int) (owners []uuid.UUID, err error) {
	owners = make([]uuid.UUID, max(orgs, 2))
	owners[0] = uuid.MustParse(bound)
	for i := 1; i < len(owners); i++ {
		owners[i] = uuid.Must(uuid.NewRandom())
	}
	k := 0
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"actions", "asset_access"}, []string{"asset_id", "owner_organization_id", "grantees", "grants", "version"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if k == len(ids) {
				return nil, nil
			}
			owner := owners[k%len(owners)]
			grantees, grants := []uuid.UUID{}, "[]"
			if k%10 == 5 {
				grantee := owners[1+k%(len(owners)-1)]
				grantees, grants = []uuid.UUID{grantee}, `[{"organization_id":"`+grantee.String()+`","role":"read"}]`
			}
			k++
			return []any{ids[k-1], owner, grantees, grants, int64(0)}, nil
		}))
	if err != nil {
		return nil, fmt.Errorf("seed compliance: who sees the assets: %w", err)
	}
	return owners, nil
}

// seedFeed stores feedEvents events straight into the feed, as the
// consumer stores them (numbered under its lock), one in feedVisibleEvery
// on an asset of the bound client's organization and the others on
// feedOtherAssets assets of other organizations, all of them in the
// events service's copy of who sees which asset; then it follows the
// bound client's pages over them, for the row's cursors.
func seedFeed(ctx context.Context, e *Env) error {
	t := &e.tenancy
	if t.feedOthers == nil {
		t.feedOthers = make([]uuid.UUID, feedOtherAssets)
		for i := range t.feedOthers {
			t.feedOthers[i] = uuid.Must(uuid.NewV7())
		}
	}
	// Where the feed ends now: the seeded events follow.
	end, err := e.feedEnd(ctx)
	if err != nil {
		return err
	}
	mine := make([]uuid.UUID, len(t.assets))
	for i, id := range t.assets {
		mine[i] = uuid.MustParse(id)
	}
	tx, err := e.Reference.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after commit
	if t.feedFrom, t.feedTo, err = storeFeed(ctx, tx, "events", mine, t.feedOthers, e.Creds.OrgA.ID, feedEvents); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if _, err := e.Reference.Exec(ctx, "VACUUM (ANALYZE) events.asset_access"); err != nil { // as in seedCompliance
		return err
	}
	// The bound client's pages of them, by their Links.
	t.feedCursors = t.feedCursors[:0]
	after := end
	for range feedEvents / feedVisibleEvery / 100 {
		t.feedCursors = append(t.feedCursors, after)
		_, h, err := e.exchange(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: "/events?limit=100&after=" + after, Token: t.token, Want: 200})
		if err != nil {
			return err
		}
		m := afterParam.FindStringSubmatch(h.Get("Link"))
		if m == nil || m[1] == after {
			break
		}
		after = m[1]
	}
	if len(t.feedCursors) < 2 {
		return fmt.Errorf("the seeded events made %d pages of the bound client", len(t.feedCursors))
	}
	return nil
}

// storeFeed stores n events in the feed of schema, in tx: one in
// feedVisibleEvery on one of mine, which organization owns, the others on
// others, each owned by an organization of its own in the schema's copy.
// It returns the seqs of the first and the last.
func storeFeed(ctx context.Context, tx pgx.Tx, schema string, mine, others []uuid.UUID, organization string, n int) (from, to int64, err error) {
	if _, err := tx.Exec(ctx, `INSERT INTO `+schema+`.asset_access (asset_id, owner_organization_id, version)
		SELECT a, CASE WHEN a = ANY ($1::uuid[]) THEN $3::uuid ELSE gen_random_uuid() END, 0
		FROM unnest($1::uuid[] || $2::uuid[]) a
		ON CONFLICT (asset_id) DO NOTHING`, mine, others, organization); err != nil {
		return 0, 0, fmt.Errorf("seed the feed's access: %w", err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('events feed:"+schema+"', 0))"); err != nil {
		return 0, 0, err
	}
	err = tx.QueryRow(ctx, `WITH stored AS (
			INSERT INTO `+schema+`.events (seq, id, type, kind, subject_id, body, size, asset_id)
			SELECT nextval('`+schema+`.events_seq'), e.id, 'asset.updated', 'asset', e.asset::text, b.body::json, octet_length(b.body), e.asset
			FROM (SELECT n, gen_random_uuid() AS id, CASE WHEN n % $4 = 0 THEN ($1::uuid[])[1 + (n / $4) % cardinality($1::uuid[])]
					ELSE ($2::uuid[])[1 + n % cardinality($2::uuid[])] END AS asset
				FROM generate_series(1, $3) n) e
			CROSS JOIN LATERAL (SELECT json_build_object('id', e.id, 'type', 'asset.updated', 'time', now(),
				'subject', json_build_object('kind', 'asset', 'id', e.asset), 'actor', 'bench-feed', 'request_id', 'bench-feed-' || e.n,
				'data', json_build_object('id', e.asset, 'status', 'in_use'))::text AS body) b
			ORDER BY e.n
			RETURNING seq)
		SELECT min(seq), max(seq) FROM stored`, mine, others, n, feedVisibleEvery).Scan(&from, &to)
	if err != nil {
		return 0, 0, fmt.Errorf("seed the feed: %w", err)
	}
	return from, to, nil
}

// unseedFeed removes the seeded events: later rows must not read them.
func unseedFeed(ctx context.Context, e *Env) error {
	_, err := e.Reference.Exec(ctx, "DELETE FROM events.events WHERE seq BETWEEN $1 AND $2 AND body->>'actor' = 'bench-feed'",
		e.tenancy.feedFrom, e.tenancy.feedTo)
	return err
}

// complianceOrganizations is how many organizations own the compliance
// seed's assets when the options do not say: one per hundred assets.
func complianceOrganizations(o Options) int {
	if o.ComplianceOrganizations > 0 {
		return o.ComplianceOrganizations
	}
	return max(1, o.ComplianceAssets/100)
}

// The tenancy goals are the table's with the others.
func init() { Goals = append(Goals, TenancyGoals...) }
