package tlog

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/assetregistry/registry/pkg/model"
)

// The log's hashes as C2SP tlog-tiles serves them, so that the tools of
// the Go checksum database and of Sigstore read the registry's log: tiles
// of height 8, tile (L, N) holding the hashes of the nodes at tree level
// 8L whose index runs from 256N, a partial one the first W of them. The
// table keeps tiles of height 4 (tree.go): a served tile at level L is the
// sixteen stored tiles of level 2L from 16N on, those above the leaves
// that the table does not keep yet derived from the full ones below
// (completeTiles). Only hashes are served: the entries (the events' bytes)
// stay behind a token.

// servedHeight is the height of the tiles served (C2SP tlog-tiles).
const (
	servedHeight = 8
	servedWidth  = 1 << servedHeight
)

// TilePath names a served tile of hashes: its level, its index and its
// width (servedWidth: a full tile; less: a partial one).
type TilePath struct {
	Level uint
	Index uint64
	Width uint64
}

// Full says whether the tile is a full one, which never changes.
func (t TilePath) Full() bool { return t.Width == servedWidth }

// maxServedLevel bounds a tile's level: a tree of 2^63 leaves has 63
// levels, eight to a tile.
const maxServedLevel = 63 / servedHeight

// ParseTilePath reads the part of a tile's path after "tile/":
// "<L>/<N>[.p/<W>]", N in groups of three digits, each but the last
// prefixed with x ("x001/234" is 1234), none of zeros in front. ok is
// false for anything else (a tile of entries among it: those are not
// served).
func ParseTilePath(p string) (t TilePath, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return t, false
	}
	level, ok := decimal(parts[0], maxServedLevel)
	if !ok {
		return t, false
	}
	t.Level, t.Width = uint(level), servedWidth
	groups := parts[1:]
	if n := len(groups); n >= 2 && strings.HasSuffix(groups[n-2], ".p") {
		w, ok := decimal(groups[n-1], servedWidth-1)
		if !ok || w == 0 {
			return t, false
		}
		t.Width = w
		groups = append(groups[:n-2:n-2], strings.TrimSuffix(groups[n-2], ".p"))
	}
	if len(groups) > 7 { // 2^64 has 20 digits
		return t, false
	}
	for i, g := range groups {
		if i < len(groups)-1 {
			if !strings.HasPrefix(g, "x") {
				return t, false
			}
			g = g[1:]
		}
		if len(g) != 3 || strings.Trim(g, "0123456789") != "" {
			return t, false
		}
		d, _ := strconv.ParseUint(g, 10, 64)
		if t.Index > (1<<63)/1000 {
			return t, false
		}
		t.Index = t.Index*1000 + d
	}
	// One path a tile: no group of zeros in front.
	return t, t.String() == p
}

// decimal reads a decimal number of at most limit, without leading zeros.
func decimal(s string, limit uint64) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > limit || strconv.FormatUint(n, 10) != s {
		return 0, false
	}
	return n, true
}

// String is the tile's path after "tile/", as C2SP writes it.
func (t TilePath) String() string {
	n := strconv.FormatUint(t.Index%1000, 10)
	n = strings.Repeat("0", 3-len(n)) + n
	for rest := t.Index / 1000; rest > 0; rest /= 1000 {
		g := strconv.FormatUint(rest%1000, 10)
		n = "x" + strings.Repeat("0", 3-len(g)) + g + "/" + n
	}
	p := strconv.FormatUint(uint64(t.Level), 10) + "/" + n
	if !t.Full() {
		p += ".p/" + strconv.FormatUint(t.Width, 10)
	}
	return p
}

// InTree says whether the tree of size leaves has every hash of the tile.
func (t TilePath) InTree(size uint64) bool {
	nodes := size >> (servedHeight * t.Level)
	return t.Index < nodes/servedWidth+1 && t.Index*servedWidth+t.Width <= nodes
}

// Tile is a served tile: its hashes and their strong ETag.
type Tile struct {
	Hashes []byte
	ETag   string
}

// servedTiles keeps the full tiles served (8 KiB each), which never
// change, with their ETags: a tile asked again is answered without
// PostgreSQL or hashing.
type servedTiles struct{ lru *lru.Cache[TilePath, Tile] }

// servedTilesKept bounds the full tiles kept: 32 MiB.
const servedTilesKept = 4096

func newServedTiles() servedTiles {
	c, err := lru.New[TilePath, Tile](servedTilesKept)
	if err != nil {
		panic(err) // only a size below 1 is refused
	}
	return servedTiles{lru: c}
}

// storedUnder are the stored tiles a served tile is made of, each with how
// many of its hashes it needs.
func storedUnder(t TilePath) map[tileID]uint64 {
	needs := map[tileID]uint64{}
	for k := uint64(0); k*tileWidth < t.Width; k++ {
		needs[tileID{Level: 2 * t.Level, Index: t.Index*(servedWidth/tileWidth) + k}] = min(tileWidth, t.Width-k*tileWidth)
	}
	return needs
}

// HashTile is the served tile t, its hashes 32 bytes each, of a tree that
// holds them all (TilePath.InTree of a signed checkpoint's size: the
// caller checks).
func (st *Store) HashTile(ctx context.Context, t TilePath) (Tile, error) {
	if kept, ok := st.tree.served.lru.Get(t); ok {
		return kept, nil
	}
	db := st.s.DB(ctx)
	tiles, err := completeTiles(storedUnder(t), func(ids []tileID) (tileSet, error) { return st.tree.reads.read(ctx, db, ids) })
	if err != nil {
		return Tile{}, err
	}
	out := make([]byte, 0, t.Width*hashSize)
	for k := uint64(0); k*tileWidth < t.Width; k++ {
		id := tileID{Level: 2 * t.Level, Index: t.Index*(servedWidth/tileWidth) + k}
		need := min(tileWidth, t.Width-k*tileWidth) * hashSize
		if uint64(len(tiles[id])) < need {
			return Tile{}, fmt.Errorf("log: tile %d/%d holds %d hashes, served tile %s needs %d", id.Level, id.Index, len(tiles[id])/hashSize, t, need/hashSize)
		}
		out = append(out, tiles[id][:need]...)
	}
	tile := Tile{Hashes: out, ETag: model.ETagForBody(out)}
	if t.Full() {
		st.tree.served.lru.Add(t, tile)
	}
	return tile, nil
}
