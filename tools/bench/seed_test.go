package bench

import (
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/assetregistry/registry/services/events"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// The log seedLog writes is the log the events service proves from: its
// size, root and the proofs of leaves across tiles' edges, and it refuses
// a log that has leaves.
func TestSeedLogWritesTheServicesLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	s := servicetest.Start(t, events.Spec())
	log := tlog.NewStore(s.Built.Store)
	entry := func(i uint64) []byte { return fmt.Appendf(nil, `{"seed":%d}`, i) }
	const n = 70_000
	if err := seedLog(t.Context(), s.Built.Store.Pool, log, n, entry); err != nil {
		t.Fatal(err)
	}
	if err := seedLog(t.Context(), s.Built.Store.Pool, log, 1, entry); err == nil {
		t.Error("a log with leaves was seeded again")
	}
	size, root, err := log.LogState(t.Context())
	if err != nil || size != n {
		t.Fatalf("the seeded log has %d leaves (%v), want %d", size, err, n)
	}
	for _, leaf := range []uint64{0, 255, 256, 65_535, 65_536, n - 1} {
		hashes, err := log.InclusionProof(t.Context(), leaf, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, leaf, n, tlog.LeafHash(entry(leaf)), hashes, root); err != nil {
			t.Errorf("seeded leaf %d: %v", leaf, err)
		}
	}
}
