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

// seedActions copies n actions straight into the actions service's table
// (a million through the API would take longer than the whole bench), as
// the service would have made them over ten years: UUIDv7 ids in creation
// order, performed dates following creation, the seeded assets and the
// four types in turn. The lists then read them as they read their own.
func (e *Env) seedActions(ctx context.Context, n int) error {
	conn, err := e.connectDatabase(ctx)
	if err != nil {
		return fmt.Errorf("seed actions: %w", err)
	}
	defer conn.Close(ctx)
	assets := make([]uuid.UUID, len(e.Assets))
	for i, id := range e.Assets {
		assets[i] = uuid.MustParse(id)
	}
	first := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)
	i := 0
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"actions", "actions"},
		[]string{"id", "asset_id", "action_type", "performed_at", "status_ok", "source_system", "created_by", "updated_by"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			row := []any{uuid.Must(uuid.NewV7()), assets[i%len(assets)], actions.ActionTypes[i%len(actions.ActionTypes)],
				first.AddDate(0, 0, i*10*365/n), i%2 == 0, "bench-seed", "bench", "bench"}
			i++
			return row, nil
		}))
	if err == nil {
		_, err = conn.Exec(ctx, "ANALYZE actions.actions")
	}
	if err != nil {
		return fmt.Errorf("seed actions: %w", err)
	}
	e.Actions = n
	return nil
}

// actionsList is a filter of the GET /actions rows.
type actionsList struct {
	Name    string              // in the rows' names
	Query   func(e *Env) string // the filter's query parameters
	Matches func(e *Env) int    // how many seeded actions it matches
}

// actionLists are two equality filters: one asset's actions (a thousand
// of a million) and one type's (a quarter of them, a long walk).
var actionLists = []actionsList{
	{Name: "asset_id", Query: func(e *Env) string { return "asset_id=" + e.Assets[0] },
		Matches: func(e *Env) int { return e.Actions / len(e.Assets) }},
	{Name: "action_type", Query: func(*Env) string { return "action_type=maintenance" },
		Matches: func(e *Env) int { return e.Actions / len(actions.ActionTypes) }},
}

// findDeepCursors walks each filter's list from its first page by its
// rel="next" links, as a client would, to the cursor after half of its
// seeded actions. The cursor is bound to the filter, so it is the
// service's own.
func (e *Env) findDeepCursors(ctx context.Context) error {
	e.DeepCursors = map[string]string{}
	for _, l := range actionLists {
		cursor := ""
		for skip := l.Matches(e) / 2; skip > 0; {
			limit := min(skip, model.MaxLimit)
			path := "/actions?" + l.Query(e) + "&limit=" + strconv.Itoa(limit)
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			_, h, err := e.exchange(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: path, Want: 200})
			if err != nil {
				return fmt.Errorf("deep cursor: %w", err)
			}
			next, _, _ := strings.Cut(strings.TrimPrefix(h.Get("Link"), "<"), ">")
			u, err := url.Parse(next)
			if err != nil || u.Query().Get("cursor") == "" {
				return fmt.Errorf("deep cursor: GET %s: no next page (Link %q)", path, h.Get("Link"))
			}
			cursor = u.Query().Get("cursor")
			skip -= limit
		}
		e.DeepCursors[l.Name] = cursor
	}
	return nil
}

// actionsPagePrefix begins the names of the rows that need the seeded
// actions.
const actionsPagePrefix = "GET /actions?"

// actionsPage is GET /actions of the filter, a page of the contract's
// default size: the first page (divided by the reference GET), or the
// page after half of the filter's seeded actions, divided by the first
// page: about 1 means as fast deep as on the first page.
func actionsPage(l actionsList, deep bool) Call {
	first := actionsPagePrefix + l.Name + ", first page"
	c := Call{Name: first, Service: "actions", Limit: RefGet}
	if deep {
		c.Name, c.Limit = actionsPagePrefix+l.Name+", deep page", first+" · direct"
	}
	c.Request = func(e *Env, _ *Worker) Request {
		path := "/actions?" + l.Query(e) + "&limit=" + strconv.Itoa(model.DefaultLimit)
		if deep {
			path += "&cursor=" + url.QueryEscape(e.DeepCursors[l.Name])
		}
		return Request{Method: "GET", Path: path, Want: 200}
	}
	return c
}
