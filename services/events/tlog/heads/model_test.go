package heads

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"
)

// fullRoot is the map's root from every bucket's hash, level by level,
// as a reader that holds the whole map would compute it.
func fullRoot(buckets map[uint32][]byte) []byte {
	level := make([][]byte, 1<<Depth)
	for i := range level {
		if h, ok := buckets[uint32(i)]; ok {
			level[i] = h
		} else {
			level[i] = empty[0]
		}
	}
	for len(level) > 1 {
		up := make([][]byte, len(level)/2)
		for i := range up {
			up[i] = nodeHash(level[2*i], level[2*i+1])
		}
		level = up
	}
	return level[0]
}

// The map rehashed a few buckets at a time (what a checkpoint does, from
// the stored nodes) has the root of the whole map rehashed at once, and
// each bucket's path leads from it to that root.
func TestIncrementalUpdateIsTheWholeMaps(t *testing.T) {
	stored := map[nodeID][]byte{}
	buckets := map[uint32][]byte{}
	read := func(ids []nodeID) (map[nodeID][]byte, error) {
		out := map[nodeID][]byte{}
		for _, id := range ids {
			if h, ok := stored[id]; ok {
				out[id] = h
			}
		}
		return out, nil
	}
	for round := range 5 {
		changed := map[uint32][]byte{}
		for i := range 7 {
			b := BucketOf(fmt.Sprintf("asset-%d-%d", round, i))
			if i == 0 && round > 0 {
				b = BucketOf("asset-0-0") // a bucket changed again
			}
			sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d", round, i))
			changed[b], buckets[b] = sum[:], sum[:]
		}
		nodes, err := update(changed, read)
		if err != nil {
			t.Fatal(err)
		}
		for id, h := range nodes {
			stored[id] = h
		}
		want := fullRoot(buckets)
		if !bytes.Equal(stored[nodeID{Depth, 0}], want) {
			t.Fatalf("round %d: the root rehashed from the changed buckets is not the whole map's", round)
		}
		for b, h := range buckets {
			root, err := RootOf(b, h, pathOf(b, stored))
			if err != nil || !bytes.Equal(root, want) {
				t.Fatalf("round %d: bucket %d's path leads to another root (%v)", round, b, err)
			}
		}
	}
}

// A bucket's hash binds every head in it, in the order of the asset ids.
func TestBucketHashBindsItsHeads(t *testing.T) {
	a := Head{AssetID: "a", AssetSeq: 2, Chain: ChainNext(ChainStart(), make([]byte, 32))}
	b := Head{AssetID: "b", AssetSeq: 1, Chain: ChainStart()}
	base, err := BucketHash([]Head{a, b})
	if err != nil {
		t.Fatal(err)
	}
	shorter := a
	shorter.AssetSeq = 1
	for name, heads := range map[string][]Head{"a head left out": {a}, "a count changed": {shorter, b}} {
		if h, _ := BucketHash(heads); bytes.Equal(h, base) {
			t.Errorf("%s: the same hash", name)
		}
	}
	if _, err := BucketHash([]Head{b, a}); err == nil {
		t.Error("heads out of order are hashed")
	}
}
