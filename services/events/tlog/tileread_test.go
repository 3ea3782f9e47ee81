package tlog

import (
	"sync"
	"testing"

	"github.com/transparency-dev/merkle/proof"

	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// Proofs asked at the same time read their tiles together, fewer
// statements than proofs, and each is still the proof of its own leaf.
func TestConcurrentProofsShareTheirReads(t *testing.T) {
	s := servicetest.StartParallel(t, testSpec())
	st := NewStore(s.Built.Store)
	const size, proofs = 4096, 64
	root := appendBoth(t, st, newAppender(), 0, size)
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
				err = proof.VerifyInclusion(hasher, leaf, size, LeafHash(testEntry(int(leaf))), p, root)
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
