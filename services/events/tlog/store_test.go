package tlog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/proof"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// testEntry is the i-th entry the proofs' tests append.
func testEntry(i int) []byte { return fmt.Appendf(nil, `{"entry":%d}`, i) }

// appendBoth appends the entries from … to-1 to st and their leaves to
// tree, the proofs' reference, and returns the tree's root.
func appendBoth(t *testing.T, st *Store, tree *appender, from, to int) []byte {
	t.Helper()
	var entries, hashes [][]byte
	for i := from; i < to; i++ {
		entries, hashes = append(entries, testEntry(i)), append(hashes, LeafHash(testEntry(i)))
	}
	if err := st.AppendEntries(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	if _, err := tree.Append(hashes); err != nil {
		t.Fatal(err)
	}
	root, _ := tree.Root() // the append succeeded: there is a root
	return root
}

// Proofs read kept tiles where they hold enough hashes and the table for
// the rest: a replica that kept a tile while it was short proves leaves
// appended to it since (by another process) from the table, and every
// proof verifies against the root of its size.
func TestProofsFromKeptTiles(t *testing.T) {
	s := servicetest.StartParallel(t, testSpec())
	appending, other := NewStore(s.Built.Store), NewStore(s.Built.Store)
	tree := newAppender()
	roots := map[uint64][]byte{}
	appendEntries := func(from, to int) {
		t.Helper()
		roots[uint64(to)] = appendBoth(t, appending, tree, from, to)
	}
	prove := func(st *Store, leaf, size uint64) {
		t.Helper()
		p, err := st.InclusionProof(t.Context(), leaf, size)
		if err != nil {
			t.Fatalf("proof of %d in %d: %v", leaf, size, err)
		}
		if err := proof.VerifyInclusion(hasher, leaf, size, LeafHash(testEntry(int(leaf))), p, roots[size]); err != nil {
			t.Errorf("proof of %d in %d: %v", leaf, size, err)
		}
	}
	appendEntries(0, 300) // a full tile of leaves, and one of 44
	for _, leaf := range []uint64{0, 200, 299} {
		prove(other, leaf, 300) // keeps the tile of leaves 256… with 44 hashes
		prove(appending, leaf, 300)
	}
	appendEntries(300, 700)
	for _, leaf := range []uint64{10, 299, 350, 511, 699} {
		prove(other, leaf, 700) // its kept tiles are too short: it reads them again
		prove(appending, leaf, 700)
		prove(other, leaf, 700)
	}
	prove(other, 299, 300) // a longer kept tile answers a smaller tree
	c, err := other.ConsistencyProof(t.Context(), 300, 700)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(hasher, 300, 700, c, roots[300], roots[700]); err != nil {
		t.Errorf("consistency 300 → 700: %v", err)
	}
}

// A tree this process computed whose transaction did not commit is never
// appended to: the next append finds the stored tree's size and root and
// grows that one, also when another process has since stored a tree of
// the very size the failed one had. Every root is the root of the tree
// grown from scratch.
func TestKeptTreeIsTheStoredOne(t *testing.T) {
	s := servicetest.StartParallel(t, testSpec())
	appending, other := NewStore(s.Built.Store), NewStore(s.Built.Store)
	ctx := t.Context()
	entries := func(tag string, n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = fmt.Appendf(nil, `{%q:%d}`, tag, i)
		}
		return out
	}
	tree := newAppender()
	stored := func(st *Store, batch [][]byte) {
		t.Helper()
		if err := st.AppendEntries(ctx, batch); err != nil {
			t.Fatal(err)
		}
		hashes := make([][]byte, len(batch))
		for i, e := range batch {
			hashes[i] = LeafHash(e)
		}
		if _, err := tree.Append(hashes); err != nil {
			t.Fatal(err)
		}
		size, root, err := st.LogState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := tree.Root()
		if size != tree.Size() || !bytes.Equal(root, want) {
			t.Fatalf("the log holds %d leaves, root %x; grown from scratch: %d, %x", size, root, tree.Size(), want)
		}
	}
	rolledBack := func(batch [][]byte) {
		t.Helper()
		failed := errors.New("rolled back")
		err := store.InTx(ctx, s.Built.Store.Pool, "append, then roll back", func(tx pgx.Tx) error {
			state, err := lockLog(ctx, tx)
			if err != nil {
				return err
			}
			hashes := make([][]byte, len(batch))
			for i, e := range batch {
				hashes[i] = LeafHash(e)
			}
			if _, err := appending.tree.appendLeaves(ctx, tx, state, hashes); err != nil {
				return err
			}
			return failed
		})
		if !errors.Is(err, failed) {
			t.Fatalf("the append that should roll back: %v", err)
		}
	}
	stored(appending, entries("a", 300))
	rolledBack(entries("lost", 100)) // keeps a tree of 400 leaves that was never stored
	stored(appending, entries("b", 100))
	rolledBack(entries("lost again", 100)) // and one of 500
	stored(other, entries("c", 100))       // another process stores its own 500
	stored(appending, entries("d", 56))
	stored(appending, entries("e", 300))
}

func TestSpeculationHolds(t *testing.T) {
	t.Parallel()
	base := logState{Size: 10, Root: []byte("root")}
	spec := speculativeAppend{tree: newAppender(), base: base, order: []string{"a", "b"}}
	tests := []struct {
		name   string
		spec   speculativeAppend
		state  logState
		leaves map[string]int64
		want   bool
	}{
		{"the log as grown from, every event new", spec, base, map[string]int64{"a": 10, "b": 11}, true},
		{"nothing kept to grow", speculativeAppend{base: base, order: spec.order}, base, map[string]int64{"a": 10, "b": 11}, false},
		{"another size", spec, logState{Size: 12, Root: base.Root}, map[string]int64{"a": 12, "b": 13}, false},
		{"another root", spec, logState{Size: 10, Root: []byte("other")}, map[string]int64{"a": 10, "b": 11}, false},
		{"an event stored before", spec, base, map[string]int64{"b": 10}, false},
		{"leaves in another order", spec, base, map[string]int64{"a": 11, "b": 10}, false},
		{"an event the speculation lacks", spec, base, map[string]int64{"a": 10, "c": 11}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.holds(tt.state, tt.leaves); got != tt.want {
				t.Errorf("holds = %v, want %v", got, tt.want)
			}
		})
	}
}

// A log seeded in bulk (make bench's large log) is the log of its
// entries: its proofs verify, and events stored after it extend it.
// The tiles SeedTiles makes, written as the bench writes them, are the
// log's: every seeded leaf and one appended after them prove against a
// checkpoint.
func TestSeedTiles(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	st := NewStore(s.Built.Store)
	pool := s.Built.Store.Pool
	entry := func(i uint64) []byte { return fmt.Appendf(nil, `{"seed":%d}`, i) }
	const n = 70_000
	var rows [][]any
	root, err := SeedTiles(n, entry, func(level uint, index uint64, hashes []byte) error {
		rows = append(rows, []any{int16(level), int64(index), hashes})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.CopyFrom(t.Context(), pgx.Identifier{"log_tiles16"}, []string{"level", "idx", "hashes"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `UPDATE log_state SET size = $1, root = $2`, int64(n), root); err != nil {
		t.Fatal(err)
	}
	after := []byte(`{"after":"the seed"}`)
	if err := st.AppendEntries(t.Context(), [][]byte{after}); err != nil {
		t.Fatal(err)
	}
	c, _, err := st.SignCheckpoint(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, leaf := range []uint64{0, 255, 256, 65_535, 65_536, n - 1} {
		p := s.Call(200, "GET", fmt.Sprintf("/log/inclusion?leaf_index=%d", leaf), s.RO, nil).JSON()
		if err := proof.VerifyInclusion(hasher, leaf, c.Size, LeafHash(entry(leaf)), hashesOf(t, p["hashes"]), c.Root); err != nil {
			t.Errorf("seeded leaf %d: %v", leaf, err)
		}
	}
	p := s.Call(200, "GET", fmt.Sprintf("/log/inclusion?leaf_index=%d", n), s.RO, nil).JSON()
	if err := proof.VerifyInclusion(hasher, n, c.Size, LeafHash(after), hashesOf(t, p["hashes"]), c.Root); err != nil {
		t.Errorf("the entry after the seed: %v", err)
	}
}

// A checkpoint signed before the registry kept the asset heads is signed
// again, at the same size, with them: passports made right after the
// upgrade prove their completeness without waiting for the next event.
func TestCheckpointWithoutHeadsIsSignedAgain(t *testing.T) {
	t.Parallel()
	s, keys := startSigning(t)
	st := NewStore(s.Built.Store)
	if err := st.AppendEntries(t.Context(), [][]byte{[]byte(`{"before":"the upgrade"}`)}); err != nil {
		t.Fatal(err)
	}
	size, root, err := st.LogState(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	old, err := keys.Sign(size, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Built.Store.Pool.Exec(t.Context(), `INSERT INTO checkpoints (size, root, note) VALUES ($1, $2, $3)`, int64(size), root, old.Note); err != nil {
		t.Fatal(err)
	}
	c, fresh, err := st.SignCheckpoint(t.Context(), keys)
	if err != nil || !fresh || c.Size != size || !strings.Contains(c.Note, "\n"+HeadsLine+" ") {
		t.Fatalf("signed %+v (fresh %v), %v", c, fresh, err)
	}
	if latest, err := st.LatestCheckpoint(t.Context()); err != nil || latest.Note != c.Note {
		t.Errorf("the latest checkpoint is %q, %v", latest.Note, err)
	}
	if _, fresh, err := st.SignCheckpoint(t.Context(), keys); err != nil || fresh {
		t.Errorf("signed again: fresh %v, %v", fresh, err)
	}
}
