package tlog

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/assetregistry/registry/services/events/internal/eventstest"
)

// memoryTiles keeps tiles as the store would: the latest write of each
// that is stored.
type memoryTiles tileSet

func (m memoryTiles) write(changed []tile) {
	for _, t := range changed {
		if isStored(t) {
			m[t.ID] = t.Hashes
		}
	}
}

// writeAll keeps every changed tile, also the partial ones above the
// leaves: what the service stored before it derived those.
func (m memoryTiles) writeAll(changed []tile) {
	for _, t := range changed {
		m[t.ID] = t.Hashes
	}
}

func (m memoryTiles) read(nodes []compact.NodeID) ([][]byte, error) {
	tiles, err := completeTiles(tileNeeds(nodes), m.readTiles)
	if err != nil {
		return nil, err
	}
	return tiles.nodes(nodes)
}

func (m memoryTiles) readTiles(ids []tileID) (tileSet, error) {
	out := tileSet{}
	for _, id := range ids {
		if h, ok := m[id]; ok {
			out[id] = h
		}
	}
	return out, nil
}

func leafOf(i int) []byte { return LeafHash(fmt.Appendf(nil, `{"n":%d}`, i)) }

// rootOf is the root of the first n leaves, computed from scratch.
func rootOf(t *testing.T, n int) []byte {
	a := newAppender()
	for i := range n {
		if _, err := a.Append([][]byte{leafOf(i)}); err != nil {
			t.Fatal(err)
		}
	}
	root, err := a.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// The tree grown in batches of any size, restarted from its tiles at any
// point, has the roots of the tree grown leaf by leaf, and every proof
// read from its tiles verifies with the library's verifier.
func TestLogTreeAppendAndProofs(t *testing.T) {
	t.Parallel()
	const total = 70_000 // past 16⁴ leaves, so five tile levels
	tiles := memoryTiles{}
	a := newAppender()
	roots := map[uint64][]byte{0: emptyRoot()}
	batches := []int{1, 2, 255, 1, 256, 300, 7, 4096, 511, 65_536}
	n := 0
	for i := 0; n < total; i++ {
		size := min(batches[i%len(batches)], total-n)
		hashes := make([][]byte, size)
		for j := range hashes {
			hashes[j] = leafOf(n + j)
		}
		changed, err := a.Append(hashes)
		if err != nil {
			t.Fatal(err)
		}
		if i < 4 {
			tiles.writeAll(changed) // as stored before partial tiles were derived
		} else {
			tiles.write(changed)
		}
		n += size
		root, err := a.Root()
		if err != nil {
			t.Fatal(err)
		}
		roots[uint64(n)] = root
		if i%3 == 0 { // a process that starts again: the tree from its tiles
			stored, err := completeTiles(treeTiles(uint64(n)), tiles.readTiles)
			if err != nil {
				t.Fatalf("tiles at %d: %v", n, err)
			}
			if a, err = loadAppender(uint64(n), stored); err != nil {
				t.Fatalf("load at %d: %v", n, err)
			}
			if again, _ := a.Root(); !bytes.Equal(again, root) {
				t.Fatalf("root at %d after loading the tiles differs", n)
			}
		}
	}
	for _, size := range []uint64{1, 3, 256, 257, 4096 + 511, 65_536, 70_000} {
		want, ok := roots[size]
		if !ok {
			want = rootOf(t, int(size))
			roots[size] = want
		}
		if size <= 4096+511 {
			if got := rootOf(t, int(size)); !bytes.Equal(got, want) {
				t.Fatalf("root of %d grown in batches differs from leaf by leaf", size)
			}
		}
		for _, leaf := range []uint64{0, 1, size / 2, size - 1} {
			if leaf >= size {
				continue
			}
			p, err := InclusionProof(leaf, size, tiles.read)
			if err != nil {
				t.Fatalf("proof of %d in %d: %v", leaf, size, err)
			}
			if err := proof.VerifyInclusion(hasher, leaf, size, leafOf(int(leaf)), p, want); err != nil {
				t.Errorf("proof of %d in %d does not verify: %v", leaf, size, err)
			}
			if err := proof.VerifyInclusion(hasher, leaf, size, leafOf(int(leaf)+1), p, want); err == nil {
				t.Errorf("proof of %d in %d verifies another leaf", leaf, size)
			}
		}
	}
	for _, pair := range [][2]uint64{{1, 3}, {3, 256}, {256, 257}, {257, 65_536}, {4096 + 511, 70_000}, {70_000, 70_000}} {
		p, err := ConsistencyProof(pair[0], pair[1], tiles.read)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyConsistency(hasher, pair[0], pair[1], p, roots[pair[0]], roots[pair[1]]); err != nil {
			t.Errorf("consistency %v: %v", pair, err)
		}
	}
}

// A proof needs its tiles: one missing is an error, never a wrong proof.
func TestLogTreeMissingTile(t *testing.T) {
	t.Parallel()
	tiles := memoryTiles{}
	a := newAppender()
	hashes := make([][]byte, 600)
	for i := range hashes {
		hashes[i] = leafOf(i)
	}
	changed, err := a.Append(hashes)
	if err != nil {
		t.Fatal(err)
	}
	tiles.write(changed)
	leafTile, _, _ := tileOf(compact.NewNodeID(0, 300))
	delete(tiles, leafTile)
	if _, err := InclusionProof(300, 600, tiles.read); err == nil {
		t.Error("a proof from a missing tile")
	}
}

func TestCheckpointSignAndOpen(t *testing.T) {
	t.Parallel()
	old, oldPublic := eventstest.NewLogKey(t, "registry.test/log")
	current, _ := eventstest.NewLogKey(t, "registry.test/log")
	keys, err := ParseLogKeys(current, []string{oldPublic})
	if err != nil {
		t.Fatal(err)
	}
	oldKeys, err := ParseLogKeys(old, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := leafOf(1)
	c, err := keys.Sign(42, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "registry.test/log\n42\n"; !bytes.HasPrefix([]byte(c.Note), []byte(want)) {
		t.Errorf("checkpoint %q does not start with %q", c.Note, want)
	}
	byOld, err := oldKeys.Sign(7, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, signed := range []string{c.Note, byOld.Note} {
		if _, err := keys.Open(signed); err != nil {
			t.Errorf("a checkpoint signed by the current or a previous key: %v", err)
		}
	}
	stranger, _ := eventstest.NewLogKey(t, "registry.test/log")
	strangerKeys, _ := ParseLogKeys(stranger, nil)
	forged, _ := strangerKeys.Sign(42, root, nil)
	tampered := bytes.Replace([]byte(c.Note), []byte("\n42\n"), []byte("\n43\n"), 1)
	for name, signed := range map[string]string{"an unknown key": forged.Note, "a changed size": string(tampered)} {
		if _, err := keys.Open(signed); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	for name, bad := range map[string][]string{
		"not a key":            {"nonsense", ""},
		"another log's key":    {current, "other.test/log+01234567+AAAA"},
		"a malformed previous": {"", "registry.test/log+zz"},
	} {
		if _, err := ParseLogKeys(bad[0], bad[1:]); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// hashChildren answers what the library's RFC 6962 hasher does, for
// hashes and for inputs of any other length.
func TestHashChildrenIsTheLibrarys(t *testing.T) {
	t.Parallel()
	random := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return b
	}
	for _, c := range []struct {
		name        string
		left, right []byte
	}{
		{"two hashes", random(hashSize), random(hashSize)},
		{"zero hashes", make([]byte, hashSize), make([]byte, hashSize)},
		{"empty", nil, nil},
		{"short and long", random(3), random(100)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, want := hashChildren(c.left, c.right), hasher.HashChildren(c.left, c.right); !bytes.Equal(got, want) {
				t.Fatalf("hashChildren = %x, the library's %x", got, want)
			}
		})
	}
}

func TestLeafHashesAreTheLibrarys(t *testing.T) {
	t.Parallel()
	entries := [][]byte{{}, []byte("{}"), make([]byte, 55), make([]byte, 64), make([]byte, 1000)}
	rand.Read(entries[4])
	got := leafHashes(len(entries), func(i int) []byte { return entries[i] })
	for i, e := range entries {
		if want := LeafHash(e); !bytes.Equal(got[i], want) {
			t.Errorf("entry %d (%d bytes): %x, want %x", i, len(e), got[i], want)
		}
	}
	if !bytes.Equal(got[0], got[0][:hashSize:hashSize]) || cap(got[0]) != hashSize {
		t.Errorf("a hash may not grow into the next: cap %d", cap(got[0]))
	}
}

// A tile's path reads as C2SP tlog-tiles writes it, one path a tile.
func TestTilePaths(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]TilePath{
		"0/000":           {Level: 0, Index: 0, Width: 256},
		"1/x001/234.p/5":  {Level: 1, Index: 1234, Width: 5},
		"2/x001/x000/067": {Level: 2, Index: 1_000_067, Width: 256},
		"7/255.p/255":     {Level: 7, Index: 255, Width: 255},
	} {
		got, ok := ParseTilePath(path)
		if !ok || got != want || got.String() != path {
			t.Errorf("%s: %+v %v, want %+v", path, got, ok, want)
		}
	}
	for _, path := range []string{"", "0", "0/", "8/000", "-1/000", "0/x000/001", "0/001/002", "0/1234", "0/000.p/", "0/000.p", "entries/000", "0/x1/000"} {
		if got, ok := ParseTilePath(path); ok {
			t.Errorf("%q read as %+v", path, got)
		}
	}
	if !(TilePath{Level: 1, Index: 0, Width: 3}).InTree(3<<8) || (TilePath{Level: 1, Index: 0, Width: 4}).InTree(3<<8+255) {
		t.Error("InTree")
	}
}
