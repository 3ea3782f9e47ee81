package events

import (
	"os"
	"testing"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// testStore is the feed's store and the log's it appends through, as the
// service wires them, for the tests of the whole service.
type testStore struct {
	*feed.Store
	*logStore
}

type logStore = tlog.Store

func newTestStore(s *servicetest.Service) testStore { return storesOver(s.Built.Store) }

func storesOver(s *store.Store) testStore {
	log := tlog.NewStore(s)
	return testStore{feed.NewStore(s, log), log}
}

// hasher is RFC 6962's, which the log's proofs are checked with.
var hasher = rfc6962.DefaultHasher

// referenceTree is the log's tree as the library grows it, leaf hash by
// leaf hash, to compare the stored one with.
type referenceTree struct{ r *compact.Range }

func newReferenceTree() *referenceTree {
	return &referenceTree{(&compact.RangeFactory{Hash: hasher.HashChildren}).NewEmptyRange(0)}
}

func (t *referenceTree) Append(hashes [][]byte) (struct{}, error) {
	for _, h := range hashes {
		if err := t.r.Append(h, nil); err != nil {
			return struct{}{}, err
		}
	}
	return struct{}{}, nil
}

func (t *referenceTree) Root() ([]byte, error) { return t.r.GetRootHash(nil) }

func (t *referenceTree) Size() uint64 { return t.r.End() }
