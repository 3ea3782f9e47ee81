package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/actions"
	"github.com/assetregistry/registry/services/assets"
	"github.com/assetregistry/registry/services/events/tlog"
)

// Rows for figures the registry promises: full tiles of the transparency
// log served to anonymous verifiers, meter readings in batches of 1,000,
// and a list's first page (assets, actions) at the database's speed. They are Long: the
// short run inside make test keeps its length, and make bench runs them.

// Names of the promised rows.
const (
	LogTiles      = "GET /log/tile/0/{n}, full tiles, anonymous"
	ReadingsBatch = "POST /assets/{id}/meter_readings/batch, 1,000 readings"
	// ReadingsBatchSize is how many readings one batch of the row carries:
	// the most a batch may (endpoints.MaxBatch).
	ReadingsBatchSize = 1000
	// readingsClients is how many clients send the readings' batches.
	readingsClients = 4
	// logTilesWanted is how many full tiles of leaves the tile rows read
	// among: the row's Before writes events until the log has them.
	logTilesWanted = 4
	// tileLeaves is a full tile's width (C2SP tlog-tiles, height 8).
	tileLeaves = 256
)

// logTiles is the number of full tiles of leaves the tile rows read.
var logTiles atomic.Uint64

// LogTilesCall reads random full tiles of the log's leaves, with no
// token, as a verifier does: a full tile never changes, so the events
// service answers it from memory once read (and says it may be cached).
// Before the rows the log is made to hold logTilesWanted full tiles (a
// quick run's seed has fewer events) by batches of actions.
var LogTilesCall = Call{Name: LogTiles, Service: "events", Limit: RefGet, Long: true,
	Before: func(ctx context.Context, e *Env, _ string) error { return e.fullTiles(ctx) },
	Request: func(_ *Env, w *Worker) Request {
		t := tlog.TilePath{Index: w.Rand.Uint64N(logTiles.Load()), Width: tileLeaves}
		return Request{Method: "GET", Path: "/log/tile/" + t.String(), NoToken: true, Want: 200}
	}}

// fullTiles writes actions through the gateway until the signed
// checkpoint covers logTilesWanted full tiles (at most a minute), and
// keeps how many there are.
func (e *Env) fullTiles(ctx context.Context) error {
	want := uint64(logTilesWanted * tileLeaves)
	deadline := time.Now().Add(time.Minute)
	written := 0
	for n := 0; ; n++ {
		raw, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "GET", Path: "/log/checkpoint", NoToken: true, Want: 200})
		if err != nil {
			return err
		}
		var cp tlog.LogCheckpoint
		if err := json.Unmarshal(raw, &cp); err != nil {
			return fmt.Errorf("log checkpoint: %w", err)
		}
		if cp.TreeSize >= want {
			logTiles.Store(cp.TreeSize / tileLeaves)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the log holds %d leaves after a minute; the tile rows want %d", cp.TreeSize, want)
		}
		// Events still to be logged count: write only what is missing.
		for ; uint64(written)+cp.TreeSize < want; written += BatchSize {
			w := &Worker{ID: 0, N: n, Rand: rand.New(rand.NewPCG(uint64(written), 0)), Tag: "tiles-" + randomHex()}
			items := make([]json.RawMessage, BatchSize)
			for i := range items {
				items[i] = actionBody(e, w, fmt.Sprintf("%s-%d", w.Tag, i))
			}
			body, _ := json.Marshal(map[string]any{"items": items})
			if _, err := e.send(ctx, e.Stack.RegistryURL, Request{Method: "POST", Path: "/actions/batch", Body: body, Want: 200}); err != nil {
				return err
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readingsClock numbers the readings of every batch of the run: each
// reading's value and time follow the one before, so every reading of an
// asset is above the last (a meter counts up) whatever row or round sent
// it.
var readingsClock atomic.Int64

// readingsEpoch is the first reading's time.
var readingsEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// ReadingsBatchCall records ReadingsBatchSize operating hours of one
// asset per batch, each worker on its own seeded asset; its goal is in
// readings per second through the gateway (batches per second × 1,000).
// Before the rows one batch is sent and every item checked recorded, so
// that the rows count readings, not refusals inside a 200. A batch took
// 1.7 s on a busy machine, longer than a QUICK=1 window: the window is at
// least five seconds, so that it counts more than a few.
// Four clients, as an importer's few workers: 16 batches of 1,000 at once
// outlived the service's deadline on a loaded machine (503s), and four
// already keep both cores busy.
var ReadingsBatchCall = Call{Name: ReadingsBatch, Service: "assets", Limit: RefPost, Long: true, MinWindow: 5 * time.Second, Clients: readingsClients,
	Before: func(ctx context.Context, e *Env, base string) error {
		raw, err := e.send(ctx, base, readingsBatch(e, &Worker{}))
		if err != nil {
			return err
		}
		var out []struct {
			Status int `json:"status"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("readings batch: %w", err)
		}
		if len(out) != ReadingsBatchSize {
			return fmt.Errorf("readings batch: %d results for %d readings", len(out), ReadingsBatchSize)
		}
		for i, it := range out {
			if it.Status != 201 {
				return fmt.Errorf("readings batch: item %d answered %d: %.300s", i, it.Status, raw)
			}
		}
		return nil
	},
	Request: readingsBatch}

// readingsBatch is the next batch of worker w's asset.
func readingsBatch(e *Env, w *Worker) Request {
	last := readingsClock.Add(ReadingsBatchSize)
	items := make([]json.RawMessage, ReadingsBatchSize)
	for i := range items {
		n := last - ReadingsBatchSize + int64(i) + 1
		items[i] = []byte(`{"meter":"operating_hours","value":` + strconv.FormatInt(n, 10) +
			`,"read_at":"` + readingsEpoch.Add(time.Duration(n)*time.Second).Format(time.RFC3339) + `"}`)
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	return Request{Method: "POST", Path: "/assets/" + e.Assets[w.ID%len(e.Assets)] + "/meter_readings/batch", Body: body, Want: 200}
}

// firstPage is a list's promised first page: GET /<Resource>?limit=100
// with no filter, divided by the service's own store reading the same page
// and encoding it, in process. Its Call and StoreRow are the two rows.
type firstPage struct {
	Resource string // "assets": the path, the schema and the store row's name
	Service  string // devstack name of the service that answers it
	// Read opens the service's own store on st and returns its read of
	// the first page of limit rows, no filter.
	Read func(st *store.Store) func(ctx context.Context, limit int) (any, int, error)

	once sync.Once
	read func(ctx context.Context, limit int) (any, int, error)
	err  error
}

// Name is the GET row's, without its " · gateway" or " · direct".
func (p *firstPage) Name() string {
	return "GET /" + p.Resource + "?limit=" + strconv.Itoa(model.DefaultLimit) + ", first page"
}

// StoreName is the store row's.
func (p *firstPage) StoreName() string {
	return p.Resource + " store: the first page of " + strconv.Itoa(model.DefaultLimit) + ", encoded"
}

// Call is the page through the gateway and straight from the service,
// divided by StoreRow, so the ratio says what the service, its HTTP and
// the gateway add. With REGISTRY_PG_STAT_STATEMENTS=1 (pg_stat_statements
// loaded in the bench's own PostgreSQL) each row prints, after it, what
// PostgreSQL spent per call of the page's query, from the statistics it
// keeps; and the encoding of the page alone.
func (p *firstPage) Call() Call {
	return Call{Name: p.Name(), Service: p.Service, Limit: p.StoreName(), Long: true,
		Before: func(ctx context.Context, e *Env, _ string) error { return e.statementTimes(ctx, p, true) },
		After: func(ctx context.Context, e *Env) error {
			if err := e.statementTimes(ctx, p, false); err != nil {
				return err
			}
			return e.encodingTime(ctx, p)
		},
		Request: func(*Env, *Worker) Request {
			return Request{Method: "GET", Path: "/" + p.Resource + "?limit=" + strconv.Itoa(model.DefaultLimit), Want: 200}
		}}
}

// open opens the service's store over its schema, once per run.
func (p *firstPage) open(e *Env) error {
	p.once.Do(func() {
		pool, err := store.Open(context.Background(), store.Config{URL: e.Stack.DatabaseURL, Schema: p.Service, MaxConns: 32})
		if err != nil {
			p.err = fmt.Errorf("the %s store: %w", p.Service, err)
			return
		}
		p.read = p.Read(store.New(pool, nil))
	})
	return p.err
}

// StoreRow is the page Call asks for, read by the service's own store
// (its query, through pgx, into its model types) and encoded as the
// service encodes an answer, in process: PostgreSQL's time and the
// encoding of 100 rows, with nothing of HTTP, auth or the gateway.
func (p *firstPage) StoreRow() Row {
	return Row{Name: p.StoreName(), Via: "limit", Long: true, Op: func(e *Env) (Op, error) {
		if err := p.open(e); err != nil {
			return Op{}, err
		}
		return Op{Do: func(ctx context.Context, _ *Worker) error {
			items, n, err := p.read(ctx, model.DefaultLimit)
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("the %s store's first page is empty", p.Service)
			}
			return model.EncodeJSON(io.Discard, items)
		}}, nil
	}}
}

// AssetsFirstPage is the first page of assets; ActionsFirstPage of
// actions (the seeded ones: the rows need Options.Actions).
var (
	AssetsFirstPage = &firstPage{Resource: "assets", Service: "assets",
		Read: func(st *store.Store) func(ctx context.Context, limit int) (any, int, error) {
			s := assets.NewStore(st, refs.New("assets", st, nil))
			return func(ctx context.Context, limit int) (any, int, error) {
				page, err := s.ListAssets(ctx, assets.AssetFilter{}, model.Page{Limit: limit})
				return page.Items, len(page.Items), err
			}
		}}
	ActionsFirstPage = &firstPage{Resource: "actions", Service: "actions",
		Read: func(st *store.Store) func(ctx context.Context, limit int) (any, int, error) {
			s := actions.NewStore(st, refs.New("actions", st, nil))
			return func(ctx context.Context, limit int) (any, int, error) {
				page, err := s.ListActions(ctx, actions.ActionFilter{}, model.Page{Limit: limit})
				return page.Items, len(page.Items), err
			}
		}}
)

// encodingTime prints what encoding the first page's rows costs in
// process, one encoder alone (the store row, when it ran, opened the
// store): the encoding's part of that row, beside PostgreSQL's.
func (e *Env) encodingTime(ctx context.Context, p *firstPage) error {
	if p.read == nil || e.progress == nil {
		return nil
	}
	items, n, err := p.read(ctx, model.DefaultLimit)
	if err != nil {
		return err
	}
	const times = 200
	start := time.Now()
	for range times {
		if err := model.EncodeJSON(io.Discard, items); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.progress, "\n    %s: encoding its %d %s in process, %.3f ms each\n", p.Name(), n, p.Resource,
		float64(time.Since(start).Microseconds())/1000/times)
	return nil
}

// statementTimes, when pg_stat_statements is loaded, resets its
// statistics (before a row) or prints PostgreSQL's mean execution time
// per call of the list's statements (after it); otherwise nothing.
func (e *Env) statementTimes(ctx context.Context, p *firstPage, reset bool) error {
	if os.Getenv("REGISTRY_PG_STAT_STATEMENTS") == "" || e.progress == nil {
		return nil
	}
	if reset {
		_, err := e.Reference.Exec(ctx, "SELECT public.pg_stat_statements_reset()")
		return err
	}
	rows, err := e.Reference.Query(ctx, `SELECT calls, mean_exec_time, query FROM public.pg_stat_statements
		WHERE query LIKE '%FROM '||$1||' a%' AND query LIKE '%LIMIT%' AND calls > 100 ORDER BY calls DESC LIMIT 3`, p.Resource)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var calls int64
		var mean float64
		var query string
		if err := rows.Scan(&calls, &mean, &query); err != nil {
			return err
		}
		fmt.Fprintf(e.progress, "\n    %s: pg_stat_statements: %d calls, %.3f ms each: %.120s\n", p.Name(), calls, mean, query)
	}
	return rows.Err()
}
