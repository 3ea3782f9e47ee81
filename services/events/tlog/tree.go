package tlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// What this process keeps of the log's tree between batches and proofs:
// the tree it appended last (grown off the feed's lock while a batch is
// inserted), the tiles and upper nodes proofs read, and the proofs made
// from them. The statements they run are in store.go.

// logTree is what this process keeps of the log's tree, and the SQL that
// reads and writes the tree's tiles.
type logTree struct {
	kept  treeCache  // the log's tree as this process last appended to it
	tiles *tileCache // the log's tiles this process read or wrote, for proofs
	nodes nodeCache  // the log's upper nodes this process hashed, for proofs
	reads *tileReads // the proofs' reads of tiles, coalesced
	// served are the full tiles of height 8 served (tiles.go).
	served servedTiles
}

// Speculation is a batch's leaves hashed, and the tree grown by them, off
// the feed's lock (speculate).
type Speculation struct{ spec speculativeAppend }

// Speculate hashes a batch's leaves (raw: the events' bytes, ids their
// canonical ids, in the batch's order) and grows the tree this process
// appended last by them, while the batch's insert runs.
func (st *Store) Speculate(ids []string, raw [][]byte) Speculation {
	return Speculation{st.tree.speculate(ids, raw)}
}

// Appended is a batch's growth of the tree, to keep once its transaction
// committed (Committed); Grown says how it was grown: "ahead" (the
// speculation held) or "under_lock".
type Appended struct {
	tree  *appender
	Grown string
}

// Append grows the tree, in tx (which holds the feed's lock and found the
// log at size and root), by the events of the batch stored as leaves
// (their ids to their leaves): the speculation's tree when it holds, else
// from the tiles. The writes travel with tx's COMMIT.
func (st *Store) Append(ctx context.Context, tx pgx.Tx, size int64, root []byte, ids []string, leaves map[string]int64, s Speculation) (Appended, error) {
	spec := s.spec
	state := logState{Size: uint64(size), Root: root}
	if spec.holds(state, leaves) {
		return Appended{tree: spec.tree, Grown: "ahead"}, st.tree.writeTree(ctx, tx, spec.tree, spec.changed, spec.root)
	}
	stored := len(leaves)
	hashes := make([][]byte, stored)
	for i, id := range ids {
		if leaf, ok := leaves[id]; ok && leaf-size < int64(stored) && hashes[leaf-size] == nil {
			hashes[leaf-size] = spec.leafHashes[i]
		}
	}
	tree, err := st.tree.appendLeaves(ctx, tx, state, hashes)
	return Appended{tree: tree, Grown: "under_lock"}, err
}

// Committed keeps the tree a committed append grew.
func (st *Store) Committed(a Appended) {
	if a.tree != nil {
		st.tree.committed(a.tree)
	}
}

// treeCache keeps the trees this process appended last, each with its
// root: the appender for the next batch, without reading the right edge
// of the tree from the tiles again. A tree goes in as soon as its
// transaction has computed it, before the commit's answer: the next
// transaction of this process may take the feed's lock the moment the
// commit releases it, before the committing one has its answer back. A
// transaction takes a kept tree only if it has the size and root the log's
// state holds under the lock, so a tree whose commit failed, or a log
// another process appended to, is read from the tiles instead.
type treeCache struct {
	mu    sync.Mutex
	trees []keptTree // newest first
}

type keptTree struct {
	app  *appender
	root []byte
}

// treesKept bounds the kept trees: one committing, the one before it, and
// room for a transaction that failed.
const treesKept = 4

func (c *treeCache) get(state logState) *appender {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.trees {
		if t.app.Size() == state.Size && bytes.Equal(t.root, state.Root) {
			return t.app.clone()
		}
	}
	return nil
}

// newest is a copy of the tree kept last, and its root; nil when none is.
func (c *treeCache) newest() (*appender, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.trees) == 0 {
		return nil, nil
	}
	return c.trees[0].app.clone(), c.trees[0].root
}

func (c *treeCache) put(a *appender, root []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trees = append([]keptTree{{app: a, root: root}}, c.trees[:min(len(c.trees), treesKept-1)]...)
}

// committed keeps the last tiles of a tree a transaction appended to, once
// it committed, for the proofs.
func (lt *logTree) committed(a *appender) {
	for _, t := range a.last {
		lt.tiles.keep(t.ID, slices.Clone(t.Hashes))
	}
}

// tileCache keeps tiles for the proofs. The hashes a tile holds never
// change (the tree only grows, and a tile with it), so a tile kept with
// enough of them answers a proof as the table would; most proofs then
// read one tile, their leaf's, from PostgreSQL: the tiles above the
// leaves, which every proof passes through, are a sixteenth of them and
// stay kept. Leaf tiles read for a proof are not kept: there is one per
// 16 leaves, a proof of a random leaf seldom meets its tile again, and
// they would push the upper ones out (the last ones, which the newest
// events' proofs read, are kept as they are appended: committed). The
// audit and the appends read the table itself.
type tileCache struct {
	lru *lru.Cache[tileID, []byte]
	// mu makes keep's look and add one step, so that a tile replaced by a
	// longer copy leaves bytes once.
	mu    sync.Mutex
	bytes prometheus.Gauge
}

// tileCacheSize bounds the kept tiles: 32 MiB of hashes, every tile above
// the leaves of a log of 15 million events (a 240th of its tiles), and
// those above the first level of one of 4 billion.
const tileCacheSize = 1 << 16

// tileEntryBytes is what the cache spends on a tile besides its hashes:
// the LRU's list entry (its links, the key, the slice and an expiry it
// does not use: 96 bytes as allocated) and the slot of its map (about 30
// bytes at the map's usual load).
const tileEntryBytes = 128

// tileCacheBytes is what every log's tile cache of this process holds: the
// bound is tileCacheSize tiles of up to tileWidth hashes, with their
// entries (40 MiB).
var tileCacheBytes = telemetry.CacheBytes.WithLabelValues("log_tiles")

func newTileCache() *tileCache { return newTileCacheOf(tileCacheSize, tileCacheBytes) }

// newTileCacheOf is a tile cache of size tiles that counts its bytes in
// bytes.
func newTileCacheOf(size int, bytes prometheus.Gauge) *tileCache {
	c := &tileCache{bytes: bytes}
	l, err := lru.NewWithEvict(size, func(_ tileID, hashes []byte) { c.bytes.Sub(tileBytes(hashes)) })
	if err != nil {
		panic(err) // only a size below 1 is refused
	}
	c.lru = l
	return c
}

// tileBytes is what keeping a tile's hashes costs, its entry included.
func tileBytes(hashes []byte) float64 { return float64(cap(hashes) + tileEntryBytes) }

// keep remembers a tile's hashes (never written to afterwards), unless a
// longer copy of it is kept.
func (c *tileCache) keep(id tileID, hashes []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.lru.Peek(id); ok {
		if len(kept) >= len(hashes) {
			return
		}
		// Replacing a value is no eviction: the old copy leaves here.
		c.bytes.Sub(float64(cap(kept)))
		c.bytes.Add(float64(cap(hashes)))
		c.lru.Add(id, hashes)
		return
	}
	c.lru.Add(id, hashes)
	c.bytes.Add(tileBytes(hashes))
}

// nodeCache keeps the hashes of nodes above the leaves' tiles that proofs
// needed. A node's hash never changes once its subtree is whole (a proof
// names only such nodes), and each is hashed from up to 15 hashes of its
// tile: the upper nodes, which every proof passes through, are hashed once.
type nodeCache struct {
	lru *lru.Cache[compact.NodeID, []byte]
}

// nodeCacheSize bounds the kept nodes (about 100 bytes each).
const nodeCacheSize = 1 << 16

func newNodeCache() nodeCache {
	c, err := lru.New[compact.NodeID, []byte](nodeCacheSize)
	if err != nil {
		panic(err) // only a size below 1 is refused
	}
	return nodeCache{lru: c}
}

// proofNodes answers the hashes of the nodes a proof names: kept ones from
// the node cache, the others hashed from their tiles (kept tiles where
// they hold enough hashes, the rest read with q and kept).
func (lt *logTree) proofNodes(ctx context.Context, q store.Querier) readNodes {
	return func(ids []compact.NodeID) ([][]byte, error) {
		out := make([][]byte, len(ids))
		var unknown []compact.NodeID
		for i, id := range ids {
			if h, ok := lt.nodes.lru.Get(id); ok {
				out[i] = h
				continue
			}
			unknown = append(unknown, id)
		}
		if len(unknown) == 0 {
			return out, nil
		}
		tiles := tileSet{}
		missing := map[tileID]uint64{}
		for id, need := range tileNeeds(unknown) {
			if hashes, ok := lt.tiles.lru.Get(id); ok && uint64(len(hashes)) >= need*hashSize {
				tiles[id] = hashes
				continue
			}
			missing[id] = need
		}
		if len(missing) > 0 {
			read, err := completeTiles(missing, func(ids []tileID) (tileSet, error) { return lt.reads.read(ctx, q, ids) })
			if err != nil {
				return nil, err
			}
			for id, hashes := range read {
				tiles[id] = hashes
				if id.Level > 0 {
					lt.tiles.keep(id, hashes)
				}
			}
		}
		hashes, err := tiles.nodes(unknown)
		if err != nil {
			return nil, err
		}
		for i, j := 0, 0; i < len(ids); i++ {
			if out[i] != nil {
				continue
			}
			out[i] = hashes[j]
			if unknown[j].Level >= tileHeight {
				lt.nodes.lru.Add(unknown[j], hashes[j])
			}
			j++
		}
		return out, nil
	}
}

// appenderAt returns the appender of the stored tree of state, inside tx
// (which holds the feed's lock).
func (lt *logTree) appenderAt(ctx context.Context, tx pgx.Tx, state logState) (*appender, error) {
	if state.Size == 0 {
		return newAppender(), nil
	}
	if a := lt.kept.get(state); a != nil {
		return a, nil
	}
	tiles, err := completeTiles(treeTiles(state.Size), func(ids []tileID) (tileSet, error) { return readTiles(ctx, tx, ids) })
	if err != nil {
		return nil, err
	}
	return loadAppender(state.Size, tiles)
}

// appendLeaves adds the leaves (their hashes), numbered from the state's
// size on, and writes the tiles and the state; tx holds the feed's lock.
// It returns the appender, whose last tiles the proofs may use once tx
// commits.
//
// In a transaction of the store's (store.InTx) the writes travel with the
// COMMIT rather than in a round trip of their own, and fail it if they
// fail: a batch the consumer stores then costs the log no round trip, and
// the feed's lock, which every batch waits for, is held one round trip
// less. Nothing in the transaction reads the tiles or the state after it.
func (lt *logTree) appendLeaves(ctx context.Context, tx pgx.Tx, state logState, leafHashes [][]byte) (*appender, error) {
	a, err := lt.appenderAt(ctx, tx, state)
	if err != nil {
		return nil, err
	}
	changed, err := a.Append(leafHashes)
	if err != nil {
		return nil, err
	}
	root, err := a.Root()
	if err != nil {
		return nil, err
	}
	return a, lt.writeTree(ctx, tx, a, changed, root)
}

// speculativeAppend is a batch's leaf hashes (one per event, in the
// batch's order) and, when this process has appended before, its tree
// grown by the leaves the batch makes if each of its events is new: the
// tree a store's transaction appends when nothing but this process wrote
// to the log since (holds).
type speculativeAppend struct {
	leafHashes [][]byte
	base       logState // the state tree was grown from (tree is nil when none was kept)
	tree       *appender
	changed    []tile
	root       []byte
	order      []string // the events' ids in the order of their leaves
}

// speculate hashes the batch's leaves and grows the tree this process
// kept last by them. The consumer is the log's one writer, and a batch's
// events are new but for a redelivery: the transaction then only checks
// that the tree it finds under the feed's lock is the one grown, instead
// of growing it while the lock, which the next batch waits for, is held.
// ids are the events' canonical ids.
func (lt *logTree) speculate(ids []string, raw [][]byte) speculativeAppend {
	spec := speculativeAppend{leafHashes: leafHashes(len(raw), func(i int) []byte { return raw[i] })}
	kept, root := lt.kept.newest()
	if kept == nil {
		return spec
	}
	// The insert leaves out an id's later copies in a batch.
	seen := make(map[string]bool, len(ids))
	leaves := make([][]byte, 0, len(ids))
	for i, id := range ids {
		if !seen[id] {
			seen[id] = true
			spec.order = append(spec.order, id)
			leaves = append(leaves, spec.leafHashes[i])
		}
	}
	spec.base = logState{Size: kept.Size(), Root: root}
	changed, err := kept.Append(leaves)
	if err != nil {
		return spec
	}
	if spec.root, err = kept.Root(); err != nil {
		return spec
	}
	spec.tree, spec.changed = kept, changed
	return spec
}

// holds says whether the speculation is the append a transaction makes:
// it found the log at the state the tree was grown from, and stored every
// event of the batch as the leaf the speculation gave it.
func (spec speculativeAppend) holds(state logState, leaves map[string]int64) bool {
	if spec.tree == nil || state.Size != spec.base.Size || !bytes.Equal(state.Root, spec.base.Root) || len(leaves) != len(spec.order) {
		return false
	}
	for k, id := range spec.order {
		if leaf, ok := leaves[id]; !ok || leaf != int64(state.Size)+int64(k) {
			return false
		}
	}
	return true
}

// deferrer is a transaction that sends a statement whose result nobody
// reads with its next round trip, at the latest with its COMMIT, which
// fails if the statement does (the store's write transactions).
type deferrer interface {
	Defer(sql string, args ...any)
}

// InclusionProof is the proof that leaf is in the tree of size.
func (st *Store) InclusionProof(ctx context.Context, leaf, size uint64) ([][]byte, error) {
	hashes, err := InclusionProof(leaf, size, st.tree.proofNodes(ctx, st.s.DB(ctx)))
	if err != nil {
		return nil, fmt.Errorf("inclusion proof of leaf %d in %d: %w", leaf, size, err)
	}
	return hashes, nil
}

// ConsistencyProof is the proof that the tree of size from is a prefix of
// the tree of size to.
func (st *Store) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	hashes, err := ConsistencyProof(from, to, st.tree.proofNodes(ctx, st.s.DB(ctx)))
	if err != nil {
		return nil, fmt.Errorf("consistency proof from %d to %d: %w", from, to, err)
	}
	return hashes, nil
}

// InclusionProofs are the proofs of leaves in the tree of size, their
// tiles read at once.
func (st *Store) InclusionProofs(ctx context.Context, leaves []uint64, size uint64) ([][][]byte, error) {
	return st.tree.inclusionProofs(ctx, st.s.DB(ctx), leaves, size)
}

// InclusionProofsIn is InclusionProofs with the tiles read through q (a
// snapshot's transaction).
func InclusionProofsIn(ctx context.Context, st *Store, q store.Querier, leaves []uint64, size uint64) ([][][]byte, error) {
	return st.tree.inclusionProofs(ctx, q, leaves, size)
}

func (lt *logTree) inclusionProofs(ctx context.Context, q store.Querier, leaves []uint64, size uint64) ([][][]byte, error) {
	plans := make([]proof.Nodes, len(leaves))
	var ids []compact.NodeID
	for i, leaf := range leaves {
		plan, err := proof.Inclusion(leaf, size)
		if err != nil {
			return nil, err
		}
		plans[i] = plan
		ids = append(ids, plan.IDs...)
	}
	// Every node once, for all the proofs together.
	hashes, err := lt.proofNodes(ctx, q)(ids)
	if err != nil {
		return nil, err
	}
	out := make([][][]byte, len(leaves))
	for i, plan := range plans {
		if out[i], err = plan.Rehash(hashes[:len(plan.IDs):len(plan.IDs)], hashChildren); err != nil {
			return nil, err
		}
		if out[i] == nil {
			out[i] = [][]byte{}
		}
		hashes = hashes[len(plan.IDs):]
	}
	return out, nil
}

// logState is the log's size and root hash as stored (the root is nil
// while the log is empty).
type logState struct {
	Size uint64
	Root []byte
}

// Backfill gives the events stored before the log existed their leaves,
// in seq order, a thousand per transaction. The consumer's leader runs it
// before it stores anything new, so leaves follow the feed's order.
func (st *Store) Backfill(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := st.backfillSome(ctx, 1000)
		if errors.Is(err, errNoLeaves) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		total += n
	}
}
