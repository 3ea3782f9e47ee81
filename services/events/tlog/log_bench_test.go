package tlog

import (
	"crypto/rand"
	"testing"

	"github.com/transparency-dev/merkle/compact"
)

// deepAppender is an appender of a tree of size leaves whose border and
// last tiles hold random hashes: what the store keeps between batches of
// a log that deep, without hashing size leaves first.
func deepAppender(b *testing.B, size uint64) *appender {
	border := make([][]byte, len(compact.RangeNodes(0, size, nil)))
	for i := range border {
		border[i] = make([]byte, hashSize)
		rand.Read(border[i])
	}
	tiles := tileSet{}
	for id := range treeTiles(size) {
		row := make([]byte, tileWidth*hashSize)
		rand.Read(row)
		tiles[id] = row
	}
	rng, err := ranges.NewRange(0, size, border)
	if err != nil {
		b.Fatal(err)
	}
	a, err := loadAppender(size, tiles)
	if err != nil {
		b.Fatal(err)
	}
	a.rng = rng
	return a
}

// BenchmarkAppendBatch is the in-process part of appending a batch of 256
// leaves to a log of ten million (what the store does under the feed's
// lock): the kept tree's copy, the append, the root.
func BenchmarkAppendBatch(b *testing.B) {
	kept := deepAppender(b, 10_000_000)
	leaves := make([][]byte, 256)
	for i := range leaves {
		leaves[i] = leafOf(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		a := kept.clone()
		if _, err := a.Append(leaves); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Root(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeafHashes is the leaf hashes of a batch of 256 events' bytes
// (made before the lock).
func BenchmarkLeafHashes(b *testing.B) {
	entry := make([]byte, 330)
	rand.Read(entry)
	b.Run("one at a time", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range 256 {
				LeafHash(entry)
			}
		}
	})
	b.Run("together", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			leafHashes(256, func(int) []byte { return entry })
		}
	})
}
