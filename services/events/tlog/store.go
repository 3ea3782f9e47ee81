package tlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/store"
)

// Store is the SQL of the transparency log: tiles, the tree's state,
// checkpoints, the leaves' entries, redactions and passports, in schema
// events. It keeps what this process read and appended of the tree; the
// feed appends its events through it (Speculate, Append, Committed).
type Store struct {
	s     *store.Store
	tree  treeCache  // the log's tree as this process last appended to it
	tiles tileCache  // the log's tiles this process read or wrote, for proofs
	nodes nodeCache  // the log's upper nodes this process hashed, for proofs
	reads *tileReads // the proofs' reads of tiles, coalesced
}

// NewStore returns the store over s.
func NewStore(s *store.Store) *Store {
	return &Store{s: s, tiles: newTileCache(), nodes: newNodeCache(), reads: &tileReads{pool: s.Pool}}
}

// Speculation is a batch's leaves hashed, and the tree grown by them, off
// the feed's lock (speculate).
type Speculation struct{ spec speculativeAppend }

// Speculate hashes a batch's leaves (raw: the events' bytes, ids their
// canonical ids, in the batch's order) and grows the tree this process
// appended last by them, while the batch's insert runs.
func (st *Store) Speculate(ids []string, raw [][]byte) Speculation {
	return Speculation{st.speculate(ids, raw)}
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
		return Appended{tree: spec.tree, Grown: "ahead"}, st.writeTree(ctx, tx, spec.tree, spec.changed, spec.root)
	}
	stored := len(leaves)
	hashes := make([][]byte, stored)
	for i, id := range ids {
		if leaf, ok := leaves[id]; ok && leaf-size < int64(stored) && hashes[leaf-size] == nil {
			hashes[leaf-size] = spec.leafHashes[i]
		}
	}
	tree, err := st.appendLeaves(ctx, tx, state, hashes)
	return Appended{tree: tree, Grown: "under_lock"}, err
}

// Committed keeps the tree a committed append grew.
func (st *Store) Committed(a Appended) {
	if a.tree != nil {
		st.committed(a.tree)
	}
}

// The SQL of the transparency log: tiles, the tree's state, checkpoints.
// Leaves are appended only under the feed's lock (the transaction-level
// advisory lock that numbers events), so one writer at a time, whichever
// process it is, grows the tree.

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
func (st *Store) committed(a *appender) {
	for _, t := range a.last {
		st.tiles.keep(t.ID, slices.Clone(t.Hashes))
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
type tileCache struct{ lru *lru.Cache[tileID, []byte] }

// tileCacheSize bounds the kept tiles: 32 MiB of hashes, every tile above
// the leaves of a log of 15 million events (a 240th of its tiles), and
// those above the first level of one of 4 billion.
const tileCacheSize = 1 << 16

func newTileCache() tileCache {
	c, err := lru.New[tileID, []byte](tileCacheSize)
	if err != nil {
		panic(err) // only a size below 1 is refused
	}
	return tileCache{lru: c}
}

// keep remembers a tile's hashes (never written to afterwards), unless a
// longer copy of it is kept.
func (c tileCache) keep(id tileID, hashes []byte) {
	if kept, ok := c.lru.Peek(id); ok && len(kept) >= len(hashes) {
		return
	}
	c.lru.Add(id, hashes)
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
func (st *Store) proofNodes(ctx context.Context, q store.Querier) readNodes {
	return func(ids []compact.NodeID) ([][]byte, error) {
		out := make([][]byte, len(ids))
		var unknown []compact.NodeID
		for i, id := range ids {
			if h, ok := st.nodes.lru.Get(id); ok {
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
			if hashes, ok := st.tiles.lru.Get(id); ok && uint64(len(hashes)) >= need*hashSize {
				tiles[id] = hashes
				continue
			}
			missing[id] = need
		}
		if len(missing) > 0 {
			read, err := completeTiles(missing, func(ids []tileID) (tileSet, error) { return st.reads.read(ctx, q, ids) })
			if err != nil {
				return nil, err
			}
			for id, hashes := range read {
				tiles[id] = hashes
				if id.Level > 0 {
					st.tiles.keep(id, hashes)
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
				st.nodes.lru.Add(unknown[j], hashes[j])
			}
			j++
		}
		return out, nil
	}
}

// appenderAt returns the appender of the stored tree of state, inside tx
// (which holds the feed's lock).
func (st *Store) appenderAt(ctx context.Context, tx pgx.Tx, state logState) (*appender, error) {
	if state.Size == 0 {
		return newAppender(), nil
	}
	if a := st.tree.get(state); a != nil {
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
func (st *Store) appendLeaves(ctx context.Context, tx pgx.Tx, state logState, leafHashes [][]byte) (*appender, error) {
	a, err := st.appenderAt(ctx, tx, state)
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
	return a, st.writeTree(ctx, tx, a, changed, root)
}

// writeTree keeps a, the tree grown by a batch, for the next one, and
// writes the tiles that changed and the state (size, root) in tx.
func (st *Store) writeTree(ctx context.Context, tx pgx.Tx, a *appender, changed []tile, root []byte) error {
	st.tree.put(a, root) // not changed after this
	var levels []int16
	var indexes []int64
	var hashes [][]byte
	for _, t := range changed {
		if isStored(t) {
			levels, indexes, hashes = append(levels, int16(t.ID.Level)), append(indexes, int64(t.ID.Index)), append(hashes, t.Hashes)
		}
	}
	b := &pgx.Batch{}
	// A tile already stored is the leaves' last one, which grew, or one
	// above them that a previous version of the service stored partial and
	// this batch filled.
	b.Queue(`INSERT INTO log_tiles16 (level, idx, hashes) SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::bytea[])
		ON CONFLICT (level, idx) DO UPDATE SET hashes = EXCLUDED.hashes`, levels, indexes, hashes)
	b.Queue(`UPDATE log_state SET size = $1, root = $2`, int64(a.Size()), root)
	if d, ok := tx.(deferrer); ok {
		for _, q := range b.QueuedQueries {
			d.Defer(q.SQL, q.Arguments...)
		}
		return nil
	}
	return store.Classify(tx.SendBatch(ctx, b).Close(), "append to the log")
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
func (st *Store) speculate(ids []string, raw [][]byte) speculativeAppend {
	spec := speculativeAppend{leafHashes: leafHashes(len(raw), func(i int) []byte { return raw[i] })}
	kept, root := st.tree.newest()
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

// lockLog takes the feed's lock in tx and reads the log's state, in one
// round trip.
func lockLog(ctx context.Context, tx pgx.Tx) (logState, error) {
	b := &pgx.Batch{}
	b.Queue(LockFeed)
	b.Queue(`SELECT size, root FROM log_state`)
	results := tx.SendBatch(ctx, b)
	defer results.Close()
	if _, err := results.Exec(); err != nil {
		return logState{}, store.Classify(err, "lock the feed")
	}
	var size int64
	var root []byte
	if err := results.QueryRow().Scan(&size, &root); err != nil {
		return logState{}, store.Classify(err, "read the log's state")
	}
	return logState{Size: uint64(size), Root: root}, store.Classify(results.Close(), "read the log's state")
}

// readTiles reads the tiles ids (a tile not stored is left out).
func readTiles(ctx context.Context, q store.Querier, ids []tileID) (tileSet, error) {
	if len(ids) == 1 {
		// Most proofs read their leaf's tile alone: an index lookup costs
		// PostgreSQL less than the join with the list that several take.
		var hashes []byte
		err := q.QueryRow(ctx, `SELECT hashes FROM log_tiles16 WHERE level = $1 AND idx = $2`, int16(ids[0].Level), int64(ids[0].Index)).Scan(&hashes)
		if errors.Is(err, pgx.ErrNoRows) {
			return tileSet{}, nil
		}
		return tileSet{ids[0]: hashes}, store.Classify(err, "read the log's tiles")
	}
	levels, indexes := make([]int16, len(ids)), make([]int64, len(ids))
	for i, id := range ids {
		levels[i], indexes[i] = int16(id.Level), int64(id.Index)
	}
	rows, err := q.Query(ctx, `SELECT t.level, t.idx, t.hashes FROM log_tiles16 t
		JOIN unnest($1::smallint[], $2::bigint[]) AS w(level, idx) ON t.level = w.level AND t.idx = w.idx`, levels, indexes)
	if err != nil {
		return nil, store.Classify(err, "read the log's tiles")
	}
	out := tileSet{}
	var level int16
	var idx int64
	var hashes []byte
	_, err = pgx.ForEachRow(rows, []any{&level, &idx, &hashes}, func() error {
		out[tileID{Level: uint(level), Index: uint64(idx)}] = hashes // pgx scans each row's bytea into a new slice
		return nil
	})
	return out, store.Classify(err, "read the log's tiles")
}

// LogState is the tree's size and root hash.
func (st *Store) LogState(ctx context.Context) (size uint64, root []byte, err error) {
	var n int64
	err = st.s.DB(ctx).QueryRow(ctx, `SELECT size, root FROM log_state`).Scan(&n, &root)
	if err != nil {
		return 0, nil, store.Classify(err, "read the log's state")
	}
	if n == 0 {
		root = emptyRoot()
	}
	return uint64(n), root, nil
}

// errNoLeaves is what backfilling returns when nothing was left.
var errNoLeaves = errors.New("no events without a leaf")

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

func (st *Store) backfillSome(ctx context.Context, limit int) (int, error) {
	var added int
	var kept *appender
	err := store.InTx(ctx, st.s.Pool, "give events their leaves", func(tx pgx.Tx) error {
		state, err := lockLog(ctx, tx)
		if err != nil {
			return err
		}
		// The events without a leaf follow those with one in the feed's
		// order (the consumer numbers every event it stores once this ran).
		rows, err := tx.Query(ctx, `SELECT seq, body::text FROM events WHERE seq >= (SELECT log_seq_from($2)) AND leaf IS NULL
			ORDER BY seq LIMIT $1`, limit, int64(state.Size))
		if err != nil {
			return store.Classify(err, "read events without a leaf")
		}
		var seqs, leaves []int64
		var hashes [][]byte
		var seq int64
		var body string
		if _, err := pgx.ForEachRow(rows, []any{&seq, &body}, func() error {
			leaves = append(leaves, int64(state.Size)+int64(len(seqs)))
			seqs = append(seqs, seq)
			hashes = append(hashes, LeafHash([]byte(body)))
			return nil
		}); err != nil {
			return store.Classify(err, "read events without a leaf")
		}
		if len(seqs) == 0 {
			return errNoLeaves
		}
		if _, err := tx.Exec(ctx, `UPDATE events e SET leaf = u.leaf FROM unnest($1::bigint[], $2::bigint[]) AS u(seq, leaf)
			WHERE e.seq = u.seq`, seqs, leaves); err != nil {
			return store.Classify(err, "number events in the log")
		}
		a, err := st.appendLeaves(ctx, tx, state, hashes)
		kept, added = a, len(seqs)
		return err
	})
	if err == nil {
		st.committed(kept)
	}
	return added, err
}

// SignCheckpoint signs the tree as it is, unless the latest checkpoint
// has its size already; it returns the checkpoint and whether it is new.
func (st *Store) SignCheckpoint(ctx context.Context, keys LogKeys) (Checkpoint, bool, error) {
	size, root, err := st.LogState(ctx)
	if err != nil {
		return Checkpoint{}, false, err
	}
	latest, err := st.LatestCheckpoint(ctx)
	if err == nil && latest.Size == size {
		return latest, false, nil
	}
	if err != nil && !apperr.Is(err, apperr.KindNotFound) {
		return Checkpoint{}, false, err
	}
	c, err := keys.Sign(size, root)
	if err != nil {
		return Checkpoint{}, false, err
	}
	_, err = st.s.Pool.Exec(ctx, `INSERT INTO checkpoints (size, root, note) VALUES ($1, $2, $3) ON CONFLICT (size) DO NOTHING`,
		int64(c.Size), c.Root, c.Note)
	return c, true, store.Classify(err, "store a checkpoint")
}

// LatestCheckpoint is the newest signed checkpoint (404 when none yet).
func (st *Store) LatestCheckpoint(ctx context.Context) (Checkpoint, error) {
	return st.checkpoint(ctx, `SELECT size, root, note FROM checkpoints ORDER BY size DESC LIMIT 1`)
}

// CheckpointAt is the checkpoint signed at size (404 when none was).
func (st *Store) CheckpointAt(ctx context.Context, size uint64) (Checkpoint, error) {
	return st.checkpoint(ctx, `SELECT size, root, note FROM checkpoints WHERE size = $1`, int64(size))
}

func (st *Store) checkpoint(ctx context.Context, sql string, args ...any) (Checkpoint, error) {
	var c Checkpoint
	var size int64
	err := st.s.DB(ctx).QueryRow(ctx, sql, args...).Scan(&size, &c.Root, &c.Note)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, apperr.NotFound("checkpoint", "")
	}
	c.Size = uint64(size)
	return c, store.Classify(err, "read a checkpoint")
}

// Checkpoints lists every signed checkpoint, oldest first.
func (st *Store) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	rows, err := st.s.Pool.Query(ctx, `SELECT size, root, note FROM checkpoints ORDER BY size`)
	if err != nil {
		return nil, store.Classify(err, "read checkpoints")
	}
	var out []Checkpoint
	var c Checkpoint
	var size int64
	_, err = pgx.ForEachRow(rows, []any{&size, &c.Root, &c.Note}, func() error {
		c.Size = uint64(size)
		out = append(out, c)
		return nil
	})
	return out, store.Classify(err, "read checkpoints")
}

// LeafOf is the leaf index of the event id (404 when the event is not
// stored, or has no leaf yet).
func (st *Store) LeafOf(ctx context.Context, id uuid.UUID) (uint64, error) {
	var leaf *int64
	err := st.s.DB(ctx).QueryRow(ctx, `SELECT leaf FROM events WHERE id = $1`, id).Scan(&leaf)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && leaf == nil) {
		return 0, apperr.NotFound("event", id.String())
	}
	if err != nil {
		return 0, store.Classify(err, "find an event's leaf")
	}
	return uint64(*leaf), nil
}

// Entry reads the bytes of leaf, exactly as hashed into it: a redaction's
// entry, or an event's bytes. The bytes of an event redacted since (an
// erasure request) are gone: that is a 410 naming its latest redaction's
// entry, which records the hash the leaf keeps; so is a leaf whose event
// was pruned (events.history-retention). A leaf beyond the tree is a 404.
func (st *Store) Entry(ctx context.Context, leaf uint64) (LogEntry, error) {
	var size int64
	var typ, body *string
	var redaction *int64
	err := st.s.DB(ctx).QueryRow(ctx, `SELECT s.size, x.type, x.body, x.redaction FROM log_state s LEFT JOIN LATERAL (
			SELECT $2::text AS type, r.entry AS body, NULL::bigint AS redaction FROM redactions r WHERE r.leaf = $1
			UNION ALL
			SELECT $3, e.body::text, (SELECT max(r.leaf) FROM redactions r WHERE r.event_leaf = e.leaf) FROM events e
			WHERE e.seq = (SELECT log_seq_from($1)) AND e.leaf = $1
		) x ON true`, int64(leaf), RedactionEntryType, EntryEvent).Scan(&size, &typ, &body, &redaction)
	switch {
	case err != nil:
		return LogEntry{}, store.Classify(err, "read a log entry")
	case leaf >= uint64(size):
		return LogEntry{}, apperr.New(apperr.KindNotFound, fmt.Sprintf("the log has %d leaves: leaf %d is not in it (yet)", size, leaf))
	case redaction != nil:
		e := apperr.New(apperr.KindGone, fmt.Sprintf("the event at leaf %d was redacted (an erasure request): its bytes as logged are no longer kept; "+
			"the redaction's entry, leaf %d, records the leaf hash they had (GET /log/entry?leaf_index=%d)", leaf, *redaction, *redaction))
		e.Extensions = map[string]any{"redaction_entry": *redaction}
		return LogEntry{}, e
	case body == nil:
		return LogEntry{}, apperr.New(apperr.KindGone, fmt.Sprintf("the event at leaf %d is past the histories' retention: its bytes are no longer kept, its leaf hash is", leaf))
	}
	return LogEntry{LeafIndex: leaf, Type: *typ, Entry: []byte(*body)}, nil
}

// InclusionProof is the proof that leaf is in the tree of size.
func (st *Store) InclusionProof(ctx context.Context, leaf, size uint64) ([][]byte, error) {
	hashes, err := InclusionProof(leaf, size, st.proofNodes(ctx, st.s.DB(ctx)))
	if err != nil {
		return nil, fmt.Errorf("inclusion proof of leaf %d in %d: %w", leaf, size, err)
	}
	return hashes, nil
}

// ConsistencyProof is the proof that the tree of size from is a prefix of
// the tree of size to.
func (st *Store) ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error) {
	hashes, err := ConsistencyProof(from, to, st.proofNodes(ctx, st.s.DB(ctx)))
	if err != nil {
		return nil, fmt.Errorf("consistency proof from %d to %d: %w", from, to, err)
	}
	return hashes, nil
}

// passportSubjects is the SQL of the resources of an asset's passport
// among the first $1 leaves ($2 the asset): the asset, its type (the one
// its latest event names), every action ever recorded on it, their action
// documents and the documents these linked, each (kind, id) once. The
// queries of a passport start with it, so the lists stay in PostgreSQL
// however long they are.
const passportSubjects = `WITH actions AS (
		SELECT DISTINCT subject_id AS id FROM events
		WHERE kind = 'action' AND body -> 'data' ->> 'asset_id' = $2 AND leaf < $1
	), links AS (
		SELECT DISTINCT subject_id AS id FROM events
		WHERE kind = 'action_document' AND body -> 'data' ->> 'action_id' IN (SELECT id FROM actions) AND leaf < $1
	), subjects(kind, id) AS (
		SELECT 'asset', $2::text
		UNION ALL (SELECT 'asset_type', body -> 'data' ->> 'asset_type_id' FROM events
			WHERE kind = 'asset' AND subject_id = $2 AND leaf < $1 ORDER BY seq DESC LIMIT 1)
		UNION ALL SELECT 'action', id FROM actions
		UNION ALL SELECT 'action_document', id FROM links
		UNION ALL SELECT DISTINCT 'document', body -> 'data' ->> 'document_id' FROM events
			WHERE kind = 'action_document' AND subject_id IN (SELECT id FROM links) AND leaf < $1
	), passport AS (
		SELECT e.* FROM subjects s JOIN events e ON e.kind = s.kind AND e.subject_id = s.id WHERE e.leaf < $1
	) `

// PassportSize is how many events an asset's passport among the first
// size leaves holds and their bytes; a 404 when the asset has no event in
// the tree of size.
func (st *Store) PassportSize(ctx context.Context, asset uuid.UUID, size uint64) (events, bytes int64, err error) {
	var ofAsset int64
	err = st.s.DB(ctx).QueryRow(ctx, passportSubjects+`SELECT count(*), count(*) FILTER (WHERE kind = 'asset'),
		coalesce(sum(coalesce(size, octet_length(body::text))), 0) FROM passport`,
		int64(size), asset.String()).Scan(&events, &ofAsset, &bytes)
	if err != nil {
		return 0, 0, store.Classify(err, "measure a passport")
	}
	if ofAsset == 0 {
		return 0, 0, apperr.NotFound("asset", asset.String())
	}
	return events, bytes, nil
}

// passportPage bounds what a passport's reading holds at once: the leaves
// of up to passportLeaves events, and the bodies of events up to
// passportBytes together (or of one larger event).
const (
	passportLeaves = 512
	passportBytes  = 1 << 20
)

// ReadPassport reads an asset's passport among the first size leaves in
// one snapshot and hands it to parts as it goes, in the bundle's order:
// the records of each kind (asset, asset type, actions, action documents,
// documents), each in the order of its first event, then the events in
// the log's order with their proofs, a bounded batch at a time. Nothing
// of it is held longer than its batch, whatever the passport's size.
func (st *Store) ReadPassport(ctx context.Context, asset uuid.UUID, size uint64, parts passportParts) error {
	return ReadSnapshot(ctx, st.s.Pool, "read a passport", func(tx pgx.Tx) error {
		for _, kind := range passportKinds {
			if err := st.passportRecords(ctx, tx, asset, size, kind, parts); err != nil {
				return err
			}
		}
		// The events' leaves and sizes come from a cursor, their bodies a
		// batch at a time by their seqs; the proofs' tiles are read per
		// batch too.
		if _, err := tx.Exec(ctx, `DECLARE passport_events NO SCROLL CURSOR FOR `+passportSubjects+
			`SELECT seq, coalesce(size, octet_length(body::text)) FROM passport ORDER BY seq`, int64(size), asset.String()); err != nil {
			return store.Classify(err, "read a passport's events")
		}
		for {
			rows, err := tx.Query(ctx, fmt.Sprintf("FETCH %d FROM passport_events", passportLeaves))
			if err != nil {
				return store.Classify(err, "read a passport's events")
			}
			var seqs []int64
			var sizes []int64
			var seq, n int64
			if _, err := pgx.ForEachRow(rows, []any{&seq, &n}, func() error {
				seqs, sizes = append(seqs, seq), append(sizes, n)
				return nil
			}); err != nil {
				return store.Classify(err, "read a passport's events")
			}
			if len(seqs) == 0 {
				return nil
			}
			for len(seqs) > 0 {
				take, total := 1, sizes[0]
				for take < len(seqs) && total+sizes[take] <= passportBytes {
					total += sizes[take]
					take++
				}
				if err := st.passportEvents(ctx, tx, seqs[:take], size, parts); err != nil {
					return err
				}
				seqs, sizes = seqs[take:], sizes[take:]
			}
		}
	})
}

// passportRecords hands parts the records of one kind of a passport: per
// resource, its leaves and its latest event, from which the record is
// derived (recordOf).
func (st *Store) passportRecords(ctx context.Context, tx pgx.Tx, asset uuid.UUID, size uint64, kind string, parts passportParts) error {
	rows, err := tx.Query(ctx, passportSubjects+`, records AS (
			SELECT subject_id, min(seq) AS first, max(seq) AS last, array_agg(leaf ORDER BY seq) AS leaves
			FROM passport WHERE kind = $3 GROUP BY subject_id
		)
		SELECT r.leaves, e.body::text FROM records r JOIN events e ON e.seq = r.last ORDER BY r.first`,
		int64(size), asset.String(), kind)
	if err != nil {
		return store.Classify(err, "read a passport's records")
	}
	var leaves []int64
	var body string
	_, err = pgx.ForEachRow(rows, []any{&leaves, &body}, func() error {
		r, err := recordOf(leaves, []byte(body))
		if err != nil {
			return err
		}
		return parts.Record(kind, r)
	})
	return store.Classify(err, "read a passport's records")
}

// passportEvents hands parts the events of seqs with their proofs in the
// tree of size.
func (st *Store) passportEvents(ctx context.Context, tx pgx.Tx, seqs []int64, size uint64, parts passportParts) error {
	rows, err := tx.Query(ctx, `SELECT leaf, body::text FROM events WHERE seq = ANY($1) ORDER BY seq`, seqs)
	if err != nil {
		return store.Classify(err, "read a passport's events")
	}
	events := make([]PassportEvent, 0, len(seqs))
	leaves := make([]uint64, 0, len(seqs))
	var leaf int64
	var body string
	if _, err := pgx.ForEachRow(rows, []any{&leaf, &body}, func() error {
		events = append(events, PassportEvent{LeafIndex: uint64(leaf), Event: []byte(body)})
		leaves = append(leaves, uint64(leaf))
		return nil
	}); err != nil {
		return store.Classify(err, "read a passport's events")
	}
	proofs, err := st.inclusionProofs(ctx, tx, leaves, size)
	if err != nil {
		return err
	}
	for i := range events {
		events[i].Proof = proofs[i]
	}
	return parts.Events(events)
}

// InclusionProofs are the proofs of leaves in the tree of size, their
// tiles read at once.
func (st *Store) InclusionProofs(ctx context.Context, leaves []uint64, size uint64) ([][][]byte, error) {
	return st.inclusionProofs(ctx, st.s.DB(ctx), leaves, size)
}

func (st *Store) inclusionProofs(ctx context.Context, q store.Querier, leaves []uint64, size uint64) ([][][]byte, error) {
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
	hashes, err := st.proofNodes(ctx, q)(ids)
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

// RedactPerson removes a person's personal fields from every event that
// holds them (an erasure request), in one transaction under the feed's
// lock: each event's body is replaced by its redaction, and each
// redaction is appended to the log as an entry naming the event, the hash
// its leaf keeps (the one signed) and the hash of its new bytes. An event
// whose stored bytes are no longer what the log holds is refused (the
// audit says more). It returns how many events were redacted.
func (st *Store) RedactPerson(ctx context.Context, person uuid.UUID, reason string) (int, error) {
	var redacted int
	var kept *appender
	err := store.InTx(ctx, st.s.Pool, "redact a person", func(tx pgx.Tx) error {
		state, err := lockLog(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT e.seq, e.leaf, e.id::text, e.body::text,
				(SELECT r.entry FROM redactions r WHERE r.event_leaf = e.leaf ORDER BY r.leaf DESC LIMIT 1)
			FROM events e WHERE e.leaf IS NOT NULL AND e.leaf < $2
			AND ((e.kind = 'person' AND e.subject_id = $1) OR (e.kind = 'organization' AND strpos(e.body::text, $1) > 0))
			ORDER BY e.leaf FOR UPDATE OF e`, person.String(), int64(state.Size))
		if err != nil {
			return store.Classify(err, "read the person's events")
		}
		type candidate struct {
			seq       int64
			leaf      uint64
			id, body  string
			lastEntry *string
		}
		var found []candidate
		var c candidate
		var leaf int64
		if _, err := pgx.ForEachRow(rows, []any{&c.seq, &leaf, &c.id, &c.body, &c.lastEntry}, func() error {
			c.leaf = uint64(leaf)
			found = append(found, c)
			return nil
		}); err != nil {
			return store.Classify(err, "read the person's events")
		}
		if len(found) == 0 {
			return nil
		}
		ids := make([]compact.NodeID, len(found))
		for i, f := range found {
			ids[i] = compact.NewNodeID(0, f.leaf)
		}
		tiles, err := readTiles(ctx, tx, tilesFor(ids))
		if err != nil {
			return err
		}
		now := time.Now().UTC().Truncate(time.Microsecond)
		next := state.Size
		var entries [][]byte
		var entryLeaves, eventLeaves, eventSeqs []int64
		var signedHashes [][]byte
		var entryTexts, bodies []string
		for _, f := range found {
			signed, err := tiles.node(compact.NewNodeID(0, f.leaf))
			if err != nil {
				return err
			}
			current := signed
			if f.lastEntry != nil {
				var last RedactionEntry
				if err := json.Unmarshal([]byte(*f.lastEntry), &last); err != nil {
					return fmt.Errorf("redaction of leaf %d: %w", f.leaf, err)
				}
				current = last.Redacted
			}
			if !bytes.Equal(LeafHash([]byte(f.body)), current) {
				return apperr.New(apperr.KindConflict, fmt.Sprintf("event %s (leaf %d) is not what the log holds: run events audit before redacting", f.id, f.leaf))
			}
			body, changed, err := redactPerson([]byte(f.body), person.String(), redactedMarker{At: now, Entry: next})
			if err != nil {
				return err
			}
			if !changed {
				continue
			}
			entry, err := json.Marshal(RedactionEntry{Type: RedactionEntryType, EventID: f.id, EventLeaf: f.leaf, LeafHash: signed,
				Redacted: LeafHash(body), Person: person.String(), Reason: reason, Time: now})
			if err != nil {
				return err
			}
			entries = append(entries, LeafHash(entry))
			entryLeaves, eventLeaves, eventSeqs = append(entryLeaves, int64(next)), append(eventLeaves, int64(f.leaf)), append(eventSeqs, f.seq)
			signedHashes, entryTexts, bodies = append(signedHashes, signed), append(entryTexts, string(entry)), append(bodies, string(body))
			next++
		}
		if len(entries) == 0 {
			return nil
		}
		b := &pgx.Batch{}
		// The size goes with the body: pages are bounded by it.
		b.Queue(`UPDATE events e SET body = u.body::json, size = octet_length(u.body) FROM unnest($1::bigint[], $2::text[]) AS u(seq, body) WHERE e.seq = u.seq`,
			eventSeqs, bodies)
		b.Queue(`INSERT INTO redactions (leaf, event_leaf, leaf_hash, entry) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[], $4::text[])`,
			entryLeaves, eventLeaves, signedHashes, entryTexts)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return store.Classify(err, "redact events")
		}
		a, err := st.appendLeaves(ctx, tx, state, entries)
		kept, redacted = a, len(entries)
		return err
	})
	if err == nil && kept != nil {
		st.committed(kept)
	}
	return redacted, err
}

// AppendEntries appends log entries that are no events (make bench
// measures what the log adds to storing a batch with it), under the
// feed's lock, in one transaction.
func (st *Store) AppendEntries(ctx context.Context, entries [][]byte) error {
	// Hashed before the lock, which every appender waits for.
	hashes := leafHashes(len(entries), func(i int) []byte { return entries[i] })
	var kept *appender
	err := store.InTx(ctx, st.s.Pool, "append to the log", func(tx pgx.Tx) error {
		state, err := lockLog(ctx, tx)
		if err != nil {
			return err
		}
		a, err := st.appendLeaves(ctx, tx, state, hashes)
		kept = a
		return err
	})
	if err == nil {
		st.committed(kept)
	}
	return err
}

// ReadSnapshot runs fn in a read-only repeatable-read transaction: every
// statement sees the same committed state.
func ReadSnapshot(ctx context.Context, pool *store.Pool, op string, fn func(pgx.Tx) error) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return store.Classify(err, op)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	if err := fn(tx); err != nil {
		return err
	}
	return store.Classify(tx.Commit(ctx), op)
}

// LockFeed is the statement that serialises whatever numbers events or
// leaves: a reader that sees seq (or leaf) n+1 sees n. It is exported for
// the bench, whose row without the log takes it as the consumer does.
const LockFeed = "SELECT pg_advisory_xact_lock(hashtextextended('events feed:' || current_schema(), 0))"

// logState is the log's size and root hash as stored (the root is nil
// while the log is empty).
type logState struct {
	Size uint64
	Root []byte
}

// auditLeaves derives the hashes of leaves [first, last): an event's from
// its stored bytes, a redacted event's from its redaction (which recorded
// the hash that was signed), a redaction's from its entry. Each is held to
// the stored tile of leaves; a leaf whose event was pruned is taken from
// it.
func (st *Store) auditLeaves(ctx context.Context, first, last uint64, problem func(string, ...any)) ([][]byte, uint64, error) {
	hashes := make([][]byte, last-first)
	b := &pgx.Batch{}
	// The leaves' events are the seqs from the first event of leaf first
	// on, up to the first of leaf last (log_seq_from), or to the end.
	b.Queue(`SELECT leaf, id::text, body::text FROM events
		WHERE seq >= (SELECT log_seq_from($1)) AND seq < coalesce((SELECT log_seq_from($2)), $3)
		AND leaf >= $1 AND leaf < $2`, int64(first), int64(last), int64(math.MaxInt64))
	b.Queue(`SELECT leaf, event_leaf, leaf_hash, entry FROM redactions WHERE leaf >= $1 AND leaf < $2
		OR event_leaf >= $1 AND event_leaf < $2`, int64(first), int64(last))
	b.Queue(`SELECT idx, hashes FROM log_tiles16 WHERE level = 0 AND idx >= $1 AND idx <= $2 ORDER BY idx`,
		int64(first/tileWidth), int64((last-1)/tileWidth))
	results := st.s.Pool.SendBatch(ctx, b)
	defer results.Close()
	rows, err := results.Query()
	if err != nil {
		return nil, 0, store.Classify(err, "audit: read events")
	}
	ids := map[uint64]string{}
	var leaf, other int64
	var id, body string
	if _, err := pgx.ForEachRow(rows, []any{&leaf, &id, &body}, func() error {
		hashes[uint64(leaf)-first], ids[uint64(leaf)] = LeafHash([]byte(body)), id
		return nil
	}); err != nil {
		return nil, 0, store.Classify(err, "audit: read events")
	}
	if rows, err = results.Query(); err != nil {
		return nil, 0, store.Classify(err, "audit: read redactions")
	}
	var signed []byte
	var entry string
	redactedTo := map[uint64][]byte{} // an event's leaf → the hash its bytes must have now
	signedOf := map[uint64][]byte{}   // and the hash its leaf was signed with
	latest := map[uint64]int64{}
	if _, err := pgx.ForEachRow(rows, []any{&leaf, &other, &signed, &entry}, func() error {
		if uint64(leaf) >= first && uint64(leaf) < last {
			hashes[uint64(leaf)-first] = LeafHash([]byte(entry))
		}
		var r RedactionEntry
		if err := json.Unmarshal([]byte(entry), &r); err != nil || r.EventLeaf != uint64(other) || !bytes.Equal(r.LeafHash, signed) {
			problem("redaction at leaf %d: its entry does not say what its row does", leaf)
		}
		if uint64(other) >= first && uint64(other) < last && leaf >= latest[uint64(other)] {
			latest[uint64(other)], redactedTo[uint64(other)], signedOf[uint64(other)] = leaf, r.Redacted, r.LeafHash
		}
		return nil
	}); err != nil {
		return nil, 0, store.Classify(err, "audit: read redactions")
	}
	// A redacted event's bytes hash to what its latest redaction recorded;
	// its leaf keeps the hash that was signed, as the redaction's entry
	// (itself a leaf) says (held to the tile below, like any leaf).
	for n, want := range redactedTo {
		i := n - first
		if hashes[i] != nil && !bytes.Equal(hashes[i], want) {
			problem("leaf %d (event %s): its stored bytes are not what its redaction left", n, ids[n])
		}
		hashes[i] = signedOf[n]
	}
	if rows, err = results.Query(); err != nil {
		return nil, 0, store.Classify(err, "audit: read tiles")
	}
	tiles := tileSet{}
	var idx int64
	var row []byte
	if _, err := pgx.ForEachRow(rows, []any{&idx, &row}, func() error {
		tiles[tileID{Index: uint64(idx)}] = append([]byte(nil), row...)
		return nil
	}); err != nil {
		return nil, 0, store.Classify(err, "audit: read tiles")
	}
	var kept uint64
	for i := range hashes {
		n := first + uint64(i)
		t := tiles[tileID{Index: n / tileWidth}]
		off := (n % tileWidth) * hashSize
		var stored []byte
		if uint64(len(t)) >= off+hashSize {
			stored = t[off : off+hashSize]
		}
		switch {
		case hashes[i] == nil && stored == nil:
			return nil, 0, fmt.Errorf("audit: leaf %d is neither stored nor in a tile", n)
		case hashes[i] == nil: // pruned past the histories' retention
			hashes[i], kept = stored, kept+1
		case !bytes.Equal(hashes[i], stored):
			what := "entry"
			if id, ok := ids[n]; ok {
				what = "event " + id
			}
			problem("leaf %d (%s): its stored bytes hash to %s, the log holds %s", n, what, b64(hashes[i]), b64(stored))
		}
	}
	return hashes, kept, results.Close()
}
