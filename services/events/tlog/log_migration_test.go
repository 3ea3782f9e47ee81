package tlog

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// wideTiles are the tiles of the first n leaves (leafOf) as the log
// stored them before migration 009: tile (k, idx) the hashes of tree level
// 8k from node 256 * idx on.
func wideTiles(t *testing.T, n int) map[tileID][]byte {
	t.Helper()
	out := map[tileID][]byte{}
	r := ranges.NewEmptyRange(0)
	for i := range n {
		if err := r.Append(leafOf(i), func(id compact.NodeID, hash []byte) {
			if id.Level%8 != 0 {
				return
			}
			at := tileID{Level: id.Level / 8, Index: id.Index / 256}
			if uint64(len(out[at])/hashSize) != id.Index%256 {
				t.Fatalf("wide tile %v holds %d hashes, node %d comes next", at, len(out[at])/hashSize, id.Index)
			}
			out[at] = append(out[at], hash...)
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// A log written before the tiles narrowed (256 hashes a row) keeps its
// tree: after the migration the table holds exactly the tiles of 16 that
// appending the same leaves writes, the state's root is the tree's, every
// proof verifies against it (checkpoints signed before stay valid), and
// the log grows on from the converted tiles.
func TestMigrationNarrowsTheTiles(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const n = 70_001 // three levels of wide tiles, the last tile of each partial
	root := rootOf(t, n)
	pool := servicetest.MigrateAcross(t, testSpec(), "009", func(pool *store.Pool) {
		var rows [][]any
		for id, hashes := range wideTiles(t, n) {
			rows = append(rows, []any{int16(id.Level), int64(id.Index), hashes})
		}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{"log_tiles"}, []string{"level", "idx", "hashes"}, pgx.CopyFromRows(rows)); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `UPDATE log_state SET size = $1, root = $2`, n, root); err != nil {
			t.Fatal(err)
		}
	})
	want := memoryTiles{}
	leaves := make([][]byte, n)
	for i := range leaves {
		leaves[i] = leafOf(i)
	}
	changed, err := newAppender().Append(leaves)
	if err != nil {
		t.Fatal(err)
	}
	want.writeAll(changed) // the partial tiles above the leaves too, as the service stored them then
	stored, err := pool.Query(ctx, `SELECT level, idx, hashes FROM log_tiles16`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[tileID][]byte{}
	var level int16
	var idx int64
	var hashes []byte
	if _, err := pgx.ForEachRow(stored, []any{&level, &idx, &hashes}, func() error {
		got[tileID{Level: uint(level), Index: uint64(idx)}] = hashes
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d tiles after the migration, want %d", len(got), len(want))
	}
	for id, hashes := range want {
		if !bytes.Equal(got[id], hashes) {
			t.Errorf("tile %d/%d: %d hashes after the migration, not the %d appending writes", id.Level, id.Index, len(got[id])/hashSize, len(hashes)/hashSize)
		}
	}
	var wideLeft bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('log_tiles') IS NOT NULL`).Scan(&wideLeft); err != nil || wideLeft {
		t.Errorf("the wide tiles' table is left (%v): a replica of the previous binary would read it", err)
	}

	st := NewStore(store.New(pool, nil))
	size, stateRoot, err := st.LogState(ctx)
	if err != nil || size != n || !bytes.Equal(stateRoot, root) {
		t.Fatalf("the log's state after the migration: %d leaves, root %x (%v); want %d, %x", size, stateRoot, err, n, root)
	}
	for _, leaf := range []uint64{0, 15, 255, 256, 4095, 65_535, 65_536, n - 1} {
		p, err := st.InclusionProof(ctx, leaf, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(hasher, leaf, n, leafOf(int(leaf)), p, root); err != nil {
			t.Errorf("proof of leaf %d after the migration: %v", leaf, err)
		}
	}
	c, err := st.ConsistencyProof(ctx, 300, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(hasher, 300, n, c, rootOf(t, 300), root); err != nil {
		t.Errorf("consistency 300 → %d after the migration: %v", n, err)
	}
	var more [][]byte
	for i := n; i < n+100; i++ {
		more = append(more, fmt.Appendf(nil, `{"n":%d}`, i)) // leafOf's bytes
	}
	if err := st.AppendEntries(ctx, more); err != nil {
		t.Fatal(err)
	}
	grownRoot := rootOf(t, n+100)
	if size, grown, err := st.LogState(ctx); err != nil || size != n+100 || !bytes.Equal(grown, grownRoot) {
		t.Errorf("the log grown after the migration: %d leaves, root %x (%v); not the tree of %d", size, grown, err, n+100)
	}
	// The partial tiles above the leaves that the migration stored are
	// short now (the append derives them, it no longer stores them): a
	// process that reads the tree from the table, proving or appending,
	// completes them from the tiles below.
	fresh := NewStore(store.New(pool, nil))
	for _, leaf := range []uint64{0, 65_535, n - 1, n, n + 99} {
		p, err := fresh.InclusionProof(ctx, leaf, n+100)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(hasher, leaf, n+100, leafOf(int(leaf)), p, grownRoot); err != nil {
			t.Errorf("proof of leaf %d after the migration and an append: %v", leaf, err)
		}
	}
	if err := fresh.AppendEntries(ctx, [][]byte{fmt.Appendf(nil, `{"n":%d}`, n+100)}); err != nil {
		t.Fatal(err)
	}
	if size, grown, err := fresh.LogState(ctx); err != nil || size != n+101 || !bytes.Equal(grown, rootOf(t, n+101)) {
		t.Errorf("the log appended to by a process that read its tree from the table: %d leaves, root %x (%v); not the tree of %d", size, grown, err, n+101)
	}
}
