// Package access keeps a service's copy of who sees which asset, for the
// services that answer for what is recorded on assets (actions and their
// documents, compliance, the change feed, histories, passports).
//
// The assets service owns each asset's owner organization and grants
// (model.Access). Asking it on every read would cost a call per row of a
// list; a copy refreshed by events alone would let a revoked grant read on
// for as long as an event takes. So the copy is refreshed before each read
// by a bound caller: the assets service keeps a log of every change of an
// owner or a grant after an asset's creation, numbered in commit order,
// and Refresh reads what the copy has not seen yet (usually nothing: one
// small call). A change committed before a call began is in the copy when
// the call reads, on every replica. Assets the copy has not met yet (one
// created since, never changed) are learned from the assets service by id
// (Lookup) when a write first names them, and from their events.
//
// The common case costs no call: the assets service keeps the log's
// watermark in Redis (the highest version written, raised before the
// write commits), and a copy that has read the log up to the watermark
// answers without reading it again. A copy that cannot read the watermark
// (no Redis, Redis down or slow, the key lapsed) reads the log, as it did
// before each read: losing Redis costs speed, never an answer.
package access

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/peer"
	"github.com/assetregistry/registry/pkg/store"
)

// The assets service's internal routes the copy reads.
const (
	changesPath = "/internal/asset_access"
	lookupPath  = "/internal/asset_access/lookup"
	// pageSize is the changes asked for at once; a copy far behind reads
	// several pages in one Refresh.
	pageSize = 1000
	// MaxLookup bounds the ids of one Lookup call.
	MaxLookup = 1000
	// WatermarkName ends the Redis key of the assets' access watermark,
	// in the assets service's cache namespace: "assets:…:" + WatermarkName.
	// The other services' Redis users may read that key.
	WatermarkName = "asset_access_watermark"
)

// Copy is one service's copy of the assets' access.
type Copy struct {
	store  *Store
	assets *peer.Client // nil: the assets service is not configured (tests of a service alone)

	mu      sync.Mutex
	queued  *round // the next refresh, which callers that arrive now wait for
	running bool
	cursor  int64 // the last change version applied by this process

	// finds reaches the service's Redis (nil: none); mark is the assets'
	// watermark there, once a page of the log named its key; applied is
	// the version the copy has read the log up to (-1: not yet).
	finds   *cache.Finds
	mark    atomic.Pointer[cache.Watermark]
	applied atomic.Int64
}

// round is one refresh, begun after every caller waiting for it arrived.
type round struct {
	done chan struct{}
	err  error
}

// New returns the copy kept in st's schema, refreshed from assets.
func New(st *store.Store, assets *peer.Client) *Copy {
	c := &Copy{store: &Store{st: st}, assets: assets, cursor: -1}
	c.finds, _ = st.Invalidator().(*cache.Finds)
	c.applied.Store(-1)
	return c
}

// Store is the copy's SQL (store.go).
func (c *Copy) Store() *Store { return c.store }

// Refresh brings the copy up to the assets service's last committed
// change of owners and grants: at no cost when the copy is Current, else
// by reading the log (Pull).
func (c *Copy) Refresh(ctx context.Context) error {
	if c.assets == nil || c.Current(ctx) {
		return nil
	}
	return c.Pull(ctx)
}

// Pull reads the log after the copy's position. Callers that arrive while
// a pull runs wait for the next one, which begins after they arrived: a
// change committed before the call is always in the copy when Pull
// returns.
func (c *Copy) Pull(ctx context.Context) error {
	if c.assets == nil {
		return nil
	}
	c.mu.Lock()
	if c.queued == nil {
		c.queued = &round{done: make(chan struct{})}
	}
	r := c.queued
	if !c.running {
		c.running = true
		go c.refreshRounds()
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("access: wait for the copy's refresh: %w", ctx.Err())
	}
}

// refreshRounds runs the queued rounds one after another until none is
// left. A round's own deadline is the peer client's: it outlives the
// caller that started it, since others wait for it too.
func (c *Copy) refreshRounds() {
	for {
		c.mu.Lock()
		r := c.queued
		c.queued = nil
		if r == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r.err = c.pull(ctx)
		cancel()
		close(r.done)
	}
}

type changesPage struct {
	Changes   []model.Access `json:"changes"`
	Next      int64          `json:"next"`
	Watermark string         `json:"watermark"` // its Redis key, "" without
}

// pull reads and applies the changes after the cursor, page by page.
func (c *Copy) pull(ctx context.Context) error {
	if c.cursor < 0 {
		cursor, err := c.store.Cursor(ctx)
		if err != nil {
			return err
		}
		c.cursor = cursor
	}
	for {
		var page changesPage
		q := url.Values{"after": {strconv.FormatInt(c.cursor, 10)}, "limit": {strconv.Itoa(pageSize)}}
		if err := c.assets.Call(ctx, "GET", changesPath+"?"+q.Encode(), nil, &page); err != nil {
			return fmt.Errorf("access: read the assets' access changes after %d: %w", c.cursor, err)
		}
		if len(page.Changes) > 0 {
			if err := c.store.Apply(ctx, page.Changes, page.Next); err != nil {
				return err
			}
		}
		if page.Next > c.cursor {
			c.cursor = page.Next
		}
		if len(page.Changes) < pageSize {
			c.watch(page.Watermark)
			c.applied.Store(c.cursor)
			return nil
		}
	}
}

// watch keeps the watermark at key, which the assets service named.
func (c *Copy) watch(key string) {
	if c.finds == nil || key == "" {
		c.mark.Store(nil)
		return
	}
	if m := c.mark.Load(); m == nil || m.Key() != key {
		c.mark.Store(c.finds.WatermarkAt(key))
	}
}

// Current reports whether the copy holds every change committed before
// the call: the watermark, read now, is one the copy has read the log up
// to. Without a watermark to read it is false.
func (c *Copy) Current(ctx context.Context) bool {
	m := c.mark.Load()
	if m == nil {
		return false
	}
	v, ok := m.Read(ctx)
	return ok && v <= c.applied.Load()
}

// Lookup returns the access of each of ids the copy or the assets service
// knows: from the copy, and what it lacks from the assets service (then
// kept). An id neither knows is absent from the answer: no such asset.
func (c *Copy) Lookup(ctx context.Context, ids []string) (map[string]model.Access, error) {
	found, err := c.store.Get(ctx, ids)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 || c.assets == nil {
		return found, nil
	}
	for start := 0; start < len(missing); start += MaxLookup {
		batch := missing[start:min(start+MaxLookup, len(missing))]
		var answer struct {
			Access []model.Access `json:"access"`
		}
		if err := c.assets.Call(ctx, "POST", lookupPath, map[string]any{"asset_ids": batch}, &answer); err != nil {
			return nil, fmt.Errorf("access: look up %d assets: %w", len(batch), err)
		}
		if err := c.store.Learn(ctx, answer.Access); err != nil {
			return nil, err
		}
		for _, a := range answer.Access {
			found[a.AssetID] = a
		}
	}
	return found, nil
}

// Of is Lookup of one asset; ok is false when no such asset exists.
func (c *Copy) Of(ctx context.Context, id string) (a model.Access, ok bool, err error) {
	found, err := c.Lookup(ctx, []string{id})
	if err != nil {
		return model.Access{}, false, err
	}
	a, ok = found[id]
	return a, ok, nil
}

// ForRead prepares a read by caller: for a bound caller the copy is
// refreshed first. It returns the organization to filter on ("" reads
// every row).
func (c *Copy) ForRead(ctx context.Context, caller model.Caller) (string, error) {
	if caller.Organization == "" {
		return "", nil
	}
	if err := c.Refresh(ctx); err != nil {
		return "", err
	}
	return caller.Organization, nil
}

// Sees reports whether caller sees asset id, the copy refreshed first: the
// check of a read by id. An asset nobody knows is not seen.
func (c *Copy) Sees(ctx context.Context, caller model.Caller, id string) (bool, error) {
	if caller.Organization == "" {
		return true, nil
	}
	if err := c.Refresh(ctx); err != nil {
		return false, err
	}
	a, ok, err := c.Of(ctx, id)
	if err != nil || !ok {
		return false, err
	}
	return a.Sees(caller), nil
}
