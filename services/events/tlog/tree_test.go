package tlog

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The tile cache's bytes gauge is what it holds after any sequence of
// keeps: a tile added, replaced by a longer copy, not replaced by a
// shorter one, evicted.
func TestTileCacheCountsWhatItHolds(t *testing.T) {
	t.Parallel()
	hashes := func(n int) []byte { return make([]byte, n*hashSize) }
	entry := func(n int) float64 { return float64(n*hashSize + tileEntryBytes) }
	type keep struct {
		id     tileID
		hashes int
	}
	a, b, c := tileID{Level: 0, Index: 1}, tileID{Level: 1, Index: 0}, tileID{Level: 0, Index: 2}
	for _, tc := range []struct {
		name  string
		keeps []keep
		want  float64
	}{
		{"one tile", []keep{{a, 3}}, entry(3)},
		{"two tiles", []keep{{a, 3}, {b, tileWidth}}, entry(3) + entry(tileWidth)},
		{"replaced by a longer copy", []keep{{a, 3}, {a, 5}}, entry(5)},
		{"a shorter copy is not kept", []keep{{a, 5}, {a, 3}}, entry(5)},
		{"the oldest evicted past the bound of two", []keep{{a, 3}, {b, tileWidth}, {c, 7}}, entry(tileWidth) + entry(7)},
		{"a replaced tile evicted", []keep{{a, 3}, {a, 4}, {b, 1}, {c, 2}}, entry(1) + entry(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_cache_bytes"})
			cache := newTileCacheOf(2, gauge)
			for _, k := range tc.keeps {
				cache.keep(k.id, hashes(k.hashes))
			}
			if got := testutil.ToFloat64(gauge); got != tc.want {
				t.Errorf("gauge %v, want %v", got, tc.want)
			}
			var held float64
			for _, v := range cache.lru.Values() {
				held += tileBytes(v)
			}
			if held != tc.want {
				t.Errorf("the cache holds %v, the test expected %v", held, tc.want)
			}
		})
	}
}
