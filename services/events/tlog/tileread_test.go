package tlog

import (
	"fmt"
	"sync"
	"testing"

	"github.com/transparency-dev/merkle/proof"

	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// Proofs asked at the same time read their tiles together, fewer
// statements than proofs, and each is still the proof of its own leaf.
func TestConcurrentProofsShareTheirReads(t *testing.T) {
	s := servicetest.Start(t, testSpec())
	st := NewStore(s.Built.Store)
	entry := func(i int) []byte { return fmt.Appendf(nil, `{"entry":%d}`, i) }
	const size, proofs = 4096, 64
	var entries, hashes [][]byte
	for i := range size {
		entries, hashes = append(entries, entry(i)), append(hashes, LeafHash(entry(i)))
	}
	if err := st.AppendEntries(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	tree := newAppender()
	if _, err := tree.Append(hashes); err != nil {
		t.Fatal(err)
	}
	root, err := tree.Root()
	if err != nil {
		t.Fatal(err)
	}
	// A store that has read nothing yet, so that every proof needs its
	// leaf's tile from the table.
	st = NewStore(s.Built.Store)
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, proofs)
	for i := range proofs {
		leaf := uint64(i * size / proofs) // each in a tile of its own
		wg.Go(func() {
			<-start
			p, err := st.InclusionProof(t.Context(), leaf, size)
			if err == nil {
				err = proof.VerifyInclusion(hasher, leaf, size, LeafHash(entry(int(leaf))), p, root)
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("proof %d: %v", i, err)
		}
	}
	n := st.tree.reads.statements.Load()
	t.Logf("%d proofs at once: %d statements", proofs, n)
	if n < 1 || n >= proofs {
		t.Errorf("%d proofs at once read their tiles in %d statements, want at least one and fewer than the proofs", proofs, n)
	}
}
