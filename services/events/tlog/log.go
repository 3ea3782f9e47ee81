package tlog

import (
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// The transparency log's tree: RFC 6962 hashing (transparency-dev/merkle's
// hasher, compact ranges and proof plans), its node hashes kept in tiles.
// This file is plain Go; logstore.go reads and writes the tiles.

// A tile holds tileWidth hashes of one tree level that is a multiple of
// tileHeight: any node is at most tileHeight-1 levels above a tile's row,
// so it is hashed from at most tileWidth-1 of them. Sixteen hashes make a
// row of 512 bytes, which PostgreSQL keeps inline in the table's page
// (a wider tile, 8 KiB at height 8, went out of line to TOAST: a proof
// read about eight buffers for one tile, and an append rewrote 8 KiB
// tiles for each partial one): a proof in a tree of 10 million leaves
// reads its leaf's tile and hashes about 60 nodes, the tiles above the
// leaves being few and kept (tileCache), and an append rewrites partial
// tiles of at most 512 bytes.
const (
	tileHeight = 4
	tileWidth  = 1 << tileHeight
	hashSize   = 32
)

var (
	hasher = rfc6962.DefaultHasher
	ranges = &compact.RangeFactory{Hash: hashChildren}
)

// hashChildren is RFC 6962's interior node hash, what
// hasher.HashChildren answers, with one allocation (the hash) where the
// library's makes three (a digest through crypto.Hash.New, the joined
// bytes, the hash): a proof hashes its nodes from their tiles, and these
// were most of the bytes the proof row allocated. The library's ranges and proof plans take it as their hash
// function; TestHashChildrenIsTheLibrarys holds it to the library's.
func hashChildren(left, right []byte) []byte {
	var buf [1 + 2*hashSize]byte
	sum := sha256.Sum256(append(append(append(buf[:0], rfc6962.RFC6962NodeHashPrefix), left...), right...))
	return sum[:]
}

// LeafHash is the hash of a log entry's bytes (RFC 6962: SHA-256 of 0x00
// and the bytes).
func LeafHash(entry []byte) []byte { return hasher.HashLeaf(entry) }

// leafHashes are the leaf hashes of n entries, entry(i) each, made with one
// digest into one array: LeafHash (the library's) allocates a digest, the
// prefixed bytes and the hash for every leaf, three allocations for each
// event of a batch the consumer stores. TestLeafHashesAreTheLibrarys
// holds them to LeafHash.
func leafHashes(n int, entry func(i int) []byte) [][]byte {
	d := sha256.New()
	sums := make([]byte, n*hashSize)
	out := make([][]byte, n)
	for i := range n {
		d.Reset()
		d.Write(leafPrefix)
		d.Write(entry(i))
		out[i] = d.Sum(sums[i*hashSize : i*hashSize : (i+1)*hashSize])
	}
	return out
}

var leafPrefix = []byte{rfc6962.RFC6962LeafHashPrefix}

// emptyRoot is the root of the tree without leaves.
func emptyRoot() []byte { return hasher.EmptyRoot() }

// tileID names a tile: the tree level Level*tileHeight, hashes from
// Index*tileWidth on.
type tileID struct {
	Level uint
	Index uint64
}

// tile is a tile's hashes, 32 bytes each.
type tile struct {
	ID     tileID
	Hashes []byte
}

// tileOf is the tile holding the row of node id's subtree it is hashed
// from, and where that row starts and how wide it is.
func tileOf(id compact.NodeID) (t tileID, first uint64, width uint64) {
	level := id.Level / tileHeight
	up := id.Level % tileHeight
	first = id.Index << up
	return tileID{Level: level, Index: first / tileWidth}, first % tileWidth, 1 << up
}

// tilesFor lists the tiles that hold ids, each once.
func tilesFor(ids []compact.NodeID) []tileID {
	var out []tileID
	for _, id := range ids {
		t, _, _ := tileOf(id)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// tileNeeds are the tiles that hold ids, each with how many of its
// hashes, from its first, the nodes need.
func tileNeeds(ids []compact.NodeID) map[tileID]uint64 {
	out := map[tileID]uint64{}
	for _, id := range ids {
		t, first, width := tileOf(id)
		out[t] = max(out[t], first+width)
	}
	return out
}

// tileSet is tiles read from the store.
type tileSet map[tileID][]byte

// node is the hash of node id, from the tile row under it.
func (s tileSet) node(id compact.NodeID) ([]byte, error) {
	t, first, width := tileOf(id)
	row := s[t]
	if uint64(len(row)) < (first+width)*hashSize {
		return nil, fmt.Errorf("log: node %d/%d is not stored (tile %d/%d holds %d hashes)", id.Level, id.Index, t.Level, t.Index, len(row)/hashSize)
	}
	if width == 1 {
		return slices.Clone(row[first*hashSize : (first+1)*hashSize]), nil
	}
	return rowRoot(row, first, width)
}

// rowRoot is the root of the perfect subtree over width hashes of a tile's
// row, from its first.
func rowRoot(row []byte, first, width uint64) ([]byte, error) {
	r := ranges.NewEmptyRange(0)
	for i := first; i < first+width; i++ {
		if err := r.Append(row[i*hashSize:(i+1)*hashSize], nil); err != nil {
			return nil, err
		}
	}
	return r.GetRootHash(nil)
}

// nodes are the hashes of ids, each from the tile row under it; a node
// that several of ids name (the proofs of a passport share most of their
// upper ones) is hashed once.
func (s tileSet) nodes(ids []compact.NodeID) ([][]byte, error) {
	hashed := make(map[compact.NodeID][]byte, len(ids))
	out := make([][]byte, len(ids))
	for i, id := range ids {
		h, ok := hashed[id]
		if !ok {
			var err error
			if h, err = s.node(id); err != nil {
				return nil, err
			}
			hashed[id] = h
		}
		out[i] = h
	}
	return out, nil
}

// readNodes answers the hashes of the nodes ids, in their order.
type readNodes func(ids []compact.NodeID) ([][]byte, error)

// proofHashes turns a proof plan into its hashes, reading its nodes
// through read.
func proofHashes(plan proof.Nodes, read readNodes) ([][]byte, error) {
	if len(plan.IDs) == 0 {
		return [][]byte{}, nil
	}
	hashes, err := read(plan.IDs)
	if err != nil {
		return nil, err
	}
	return plan.Rehash(hashes, hashChildren)
}

// InclusionProof is the proof that leaf index is in the tree of size.
func InclusionProof(index, size uint64, read readNodes) ([][]byte, error) {
	plan, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, err
	}
	return proofHashes(plan, read)
}

// ConsistencyProof is the proof that the tree of size from is a prefix of
// the tree of size to.
func ConsistencyProof(from, to uint64, read readNodes) ([][]byte, error) {
	plan, err := proof.Consistency(from, to)
	if err != nil {
		return nil, err
	}
	return proofHashes(plan, read)
}

// appender grows the tree: the compact range of its leaves (the right
// border, O(log n) hashes) and, per tile level, the last tile, partial or
// just completed. It is a value the store keeps between batches and
// replaces only once a batch has committed.
type appender struct {
	rng  *compact.Range
	last map[uint]*tile
}

// newAppender is the appender of an empty tree.
func newAppender() *appender {
	return &appender{rng: ranges.NewEmptyRange(0), last: map[uint]*tile{}}
}

// Size is the number of leaves.
func (a *appender) Size() uint64 { return a.rng.End() }

// Root is the tree's root hash.
func (a *appender) Root() ([]byte, error) {
	if a.Size() == 0 {
		return emptyRoot(), nil
	}
	return a.rng.GetRootHash(nil)
}

// clone is a copy to append to while the original stays as it was.
func (a *appender) clone() *appender {
	hashes := make([][]byte, len(a.rng.Hashes()))
	copy(hashes, a.rng.Hashes())
	rng, err := ranges.NewRange(0, a.rng.End(), hashes)
	if err != nil {
		panic(err) // the hashes are the range's own
	}
	out := &appender{rng: rng, last: make(map[uint]*tile, len(a.last))}
	for level, t := range a.last {
		out.last[level] = &tile{ID: t.ID, Hashes: append(make([]byte, 0, tileWidth*hashSize), t.Hashes...)}
	}
	return out
}

// Append adds leaves (their hashes) and returns the tiles that changed,
// in the order they began.
func (a *appender) Append(leafHashes [][]byte) ([]tile, error) {
	var changed []*tile
	var failed error
	visit := func(id compact.NodeID, hash []byte) {
		if id.Level%tileHeight != 0 || failed != nil {
			return
		}
		level := id.Level / tileHeight
		at := tileID{Level: level, Index: id.Index / tileWidth}
		t := a.last[level]
		if t == nil || t.ID != at {
			t = &tile{ID: at, Hashes: make([]byte, 0, tileWidth*hashSize)} // a tile's room, once
			a.last[level] = t
		}
		if uint64(len(t.Hashes)/hashSize) != id.Index%tileWidth {
			failed = fmt.Errorf("log: tile %d/%d holds %d hashes, node %d comes next", at.Level, at.Index, len(t.Hashes)/hashSize, id.Index)
			return
		}
		t.Hashes = append(t.Hashes, hash...)
		if !slices.Contains(changed, t) {
			changed = append(changed, t)
		}
	}
	for _, h := range leafHashes {
		if err := a.rng.Append(h, visit); err != nil {
			return nil, err
		}
		if failed != nil {
			return nil, failed
		}
	}
	out := make([]tile, len(changed))
	for i, t := range changed {
		out[i] = tile{ID: t.ID, Hashes: slices.Clone(t.Hashes)}
	}
	return out, nil
}

// treeTiles are the tiles an appender for a tree of size needs, each with
// how many of its hashes: those under the nodes of its right border, and
// the last tile of each level.
func treeTiles(size uint64) map[tileID]uint64 {
	needs := tileNeeds(compact.RangeNodes(0, size, nil))
	for level := uint(0); size>>(level*tileHeight) > 0; level++ {
		count := size >> (level * tileHeight)
		if count%tileWidth == 0 {
			continue // the last tile is full; the next node starts a new one
		}
		t := tileID{Level: level, Index: count / tileWidth}
		needs[t] = max(needs[t], count%tileWidth)
	}
	return needs
}

// isStored says whether the table keeps tile t as it is now: a tile of
// leaf hashes always (nothing else holds them), a tile above the leaves
// once it is full. Until then each of its hashes is the root of a full
// tile of the level below (rowRoot), which is what a reader derives
// it from (deriveTiles): an append of a batch then writes the tiles it
// filled and the leaves' last one, not the partial tile of every level
// above (four of the 21 rows a batch of 256 wrote in a log of two
// million leaves, five of the seven a batch of ten wrote).
func isStored(t tile) bool {
	return t.ID.Level == 0 || len(t.Hashes) == tileWidth*hashSize
}

// completeTiles reads the tiles needs names with read, and derives what
// the table does not keep of those above the leaves from the full tiles
// below them (a second read): each then holds at least the hashes needed.
func completeTiles(needs map[tileID]uint64, read func(ids []tileID) (tileSet, error)) (tileSet, error) {
	ids := make([]tileID, 0, len(needs))
	for id := range needs {
		ids = append(ids, id)
	}
	tiles, err := read(ids)
	if err != nil {
		return nil, err
	}
	short := shortTiles(tiles, needs)
	if len(short) == 0 {
		return tiles, nil
	}
	var children []tileID
	for _, c := range short {
		children = append(children, c...)
	}
	below, err := read(children)
	if err != nil {
		return nil, err
	}
	return tiles, deriveTiles(tiles, short, below)
}

// shortTiles are the tiles above the leaves of needs that tiles holds
// fewer hashes of than needed, each with the tiles of the level below its
// missing hashes are the roots of.
func shortTiles(tiles tileSet, needs map[tileID]uint64) map[tileID][]tileID {
	out := map[tileID][]tileID{}
	for id, need := range needs {
		have := uint64(len(tiles[id]) / hashSize)
		if id.Level == 0 || have >= need {
			continue
		}
		for i := have; i < need; i++ {
			out[id] = append(out[id], tileID{Level: id.Level - 1, Index: id.Index*tileWidth + i})
		}
	}
	return out
}

// deriveTiles completes the short tiles from below, the full tiles of the
// level below them: a hash of tile (L, i) at position j is the root of
// tile (L-1, 16i+j).
func deriveTiles(tiles tileSet, short map[tileID][]tileID, below tileSet) error {
	for id, children := range short {
		hashes := append(make([]byte, 0, tileWidth*hashSize), tiles[id]...)
		for _, child := range children {
			row := below[child]
			if len(row) != tileWidth*hashSize {
				return fmt.Errorf("log: tile %d/%d holds %d hashes, tile %d/%d is derived from all %d", child.Level, child.Index, len(row)/hashSize, id.Level, id.Index, tileWidth)
			}
			root, err := rowRoot(row, 0, tileWidth)
			if err != nil {
				return err
			}
			hashes = append(hashes, root...)
		}
		tiles[id] = hashes
	}
	return nil
}

// loadAppender is the appender of the stored tree of size, from the tiles
// treeTiles(size) names (short ones derived).
func loadAppender(size uint64, tiles tileSet) (*appender, error) {
	border := compact.RangeNodes(0, size, nil)
	hashes, err := tiles.nodes(border)
	if err != nil {
		return nil, err
	}
	rng, err := ranges.NewRange(0, size, hashes)
	if err != nil {
		return nil, err
	}
	a := &appender{rng: rng, last: map[uint]*tile{}}
	for level := uint(0); size>>(level*tileHeight) > 0; level++ {
		count := size >> (level * tileHeight)
		width := count % tileWidth
		if width == 0 {
			continue
		}
		id := tileID{Level: level, Index: count / tileWidth}
		row := tiles[id]
		if uint64(len(row)) < width*hashSize {
			return nil, fmt.Errorf("log: tile %d/%d holds %d hashes, the tree of %d leaves needs %d", level, id.Index, len(row)/hashSize, size, width)
		}
		a.last[level] = &tile{ID: id, Hashes: append(make([]byte, 0, tileWidth*hashSize), row[:width*hashSize]...)}
	}
	return a, nil
}

// SeedTiles is the tree of a log of n leaves, the hash of entry(i) each,
// as the rows of its stored tiles (level, index, hashes), handed to emit
// as they fill, and its root: what a measurement of proofs in a large log
// starts from (make bench), written in bulk without storing n events. It
// holds the tree's right edge and its partial tiles, whatever n.
func SeedTiles(n uint64, entry func(i uint64) []byte, emit func(level uint, index uint64, hashes []byte) error) ([]byte, error) {
	a := newAppender()
	final := map[tileID][]byte{}
	const seedBatch = 4096 // leaves appended at a time, a multiple of tileWidth
	batch := make([][]byte, 0, seedBatch)
	for i := uint64(0); i < n; i++ {
		batch = append(batch, LeafHash(entry(i)))
		if len(batch) < seedBatch && i < n-1 {
			continue
		}
		changed, err := a.Append(batch)
		if err != nil {
			return nil, err
		}
		batch = batch[:0]
		for _, t := range changed {
			if t.ID.Level == 0 && len(t.Hashes) == tileWidth*hashSize {
				if err := emit(t.ID.Level, t.ID.Index, t.Hashes); err != nil {
					return nil, err
				}
			} else {
				final[t.ID] = t.Hashes
			}
		}
	}
	for id, hashes := range final {
		if t := (tile{ID: id, Hashes: hashes}); isStored(t) && (id.Level > 0 || len(hashes) < tileWidth*hashSize) {
			if err := emit(id.Level, id.Index, hashes); err != nil {
				return nil, err
			}
		}
	}
	return a.Root()
}
