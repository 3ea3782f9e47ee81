package bench

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions"
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
// valid-through date, the others valid for a year.
func (e *Env) seedCompliance(ctx context.Context, assets, n int) error {
	conn, err := pgx.Connect(ctx, e.Stack.DatabaseURL)
	if err != nil {
		return fmt.Errorf("seed compliance: %w", err)
	}
	defer conn.Close(ctx)
	ids := make([]uuid.UUID, assets)
	for k := range ids {
		ids[k] = uuid.Must(uuid.NewV7())
	}
	assetType, eventID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	k := 0
	if _, err = conn.CopyFrom(ctx, pgx.Identifier{"actions", "known_assets"}, []string{"asset_id", "asset_type_id", "event_id"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if k == assets {
				return nil, nil
			}
			k++
			return []any{ids[k-1], assetType, eventID}, nil
		})); err != nil {
		return fmt.Errorf("seed compliance: assets: %w", err)
	}
	first := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	i := 0
	if _, err = conn.CopyFrom(ctx, pgx.Identifier{"actions", "actions"},
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
	if _, err := conn.Exec(ctx, "SET search_path = actions; "+actions.RebuildLatestSQL); err != nil {
		return fmt.Errorf("seed compliance: latest actions: %w", err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE actions.actions; ANALYZE actions.known_assets; ANALYZE actions.latest_actions"); err != nil {
		return fmt.Errorf("seed compliance: %w", err)
	}
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
