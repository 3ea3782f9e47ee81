package registry

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// testLog is a log made with golang.org/x/mod/sumdb/tlog, an independent
// implementation of the same hashing, so the SDK's checks are held to it
// and not to the registry's own code.
type testLog struct {
	entries [][]byte
	hashes  []tlog.Hash // stored hashes
	signer  note.Signer
	public  string
}

func newTestLog(t *testing.T, n int) *testLog {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, "registry.test/log")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	l := &testLog{signer: signer, public: vkey}
	for i := range n {
		entry := fmt.Appendf(nil, `{"id":"e%d","type":"asset.created"}`, i)
		stored, err := tlog.StoredHashes(int64(i), entry, tlog.HashReaderFunc(l.read))
		if err != nil {
			t.Fatal(err)
		}
		l.entries, l.hashes = append(l.entries, entry), append(l.hashes, stored...)
	}
	return l
}

func (l *testLog) read(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = l.hashes[x]
	}
	return out, nil
}

func (l *testLog) checkpoint(t *testing.T, size int64) Checkpoint {
	t.Helper()
	root, err := tlog.TreeHash(size, tlog.HashReaderFunc(l.read))
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("registry.test/log\n%d\n%s\n", size, base64.StdEncoding.EncodeToString(root[:]))
	signed, err := note.Sign(&note.Note{Text: text}, l.signer)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := VerifyCheckpoint(string(signed), l.public)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func hashList(h []tlog.Hash) [][]byte {
	out := make([][]byte, len(h))
	for i := range h {
		out[i] = h[i][:]
	}
	return out
}

func TestVerifyInclusionAndConsistency(t *testing.T) {
	l := newTestLog(t, 40)
	older, newer := l.checkpoint(t, 13), l.checkpoint(t, 40)
	for _, i := range []int64{0, 7, 12, 39} {
		p, err := tlog.ProveRecord(40, i, tlog.HashReaderFunc(l.read))
		if err != nil {
			t.Fatal(err)
		}
		proof := InclusionProof{LeafIndex: uint64(i), TreeSize: 40, Hashes: hashList(p)}
		if err := VerifyInclusion(newer, l.entries[i], proof); err != nil {
			t.Errorf("leaf %d: %v", i, err)
		}
		changed := append([]byte(nil), l.entries[i]...)
		changed[2] ^= 1
		if err := VerifyInclusion(newer, changed, proof); !errors.Is(err, ErrUnverified) {
			t.Errorf("leaf %d with a changed byte: %v", i, err)
		}
		if err := VerifyInclusion(older, l.entries[i], proof); !errors.Is(err, ErrUnverified) {
			t.Errorf("leaf %d against another checkpoint: %v", i, err)
		}
	}
	p, err := tlog.ProveTree(40, 13, tlog.HashReaderFunc(l.read))
	if err != nil {
		t.Fatal(err)
	}
	proof := ConsistencyProof{From: 13, To: 40, Hashes: hashList(p)}
	if err := VerifyConsistency(older, newer, proof); err != nil {
		t.Errorf("consistency: %v", err)
	}
	proof.Hashes[0] = make([]byte, 32)
	if err := VerifyConsistency(older, newer, proof); !errors.Is(err, ErrUnverified) {
		t.Errorf("consistency with a changed hash: %v", err)
	}
}

func TestVerifyCheckpointRefuses(t *testing.T) {
	l := newTestLog(t, 3)
	cp := l.checkpoint(t, 3)
	other := newTestLog(t, 1)
	for name, signed := range map[string]string{
		"another key":    other.checkpoint(t, 1).Note,
		"a changed size": strings.Replace(cp.Note, "\n3\n", "\n4\n", 1),
		"no signature":   strings.SplitN(cp.Note, "\n\n", 2)[0] + "\n",
	} {
		if _, err := VerifyCheckpoint(signed, l.public); !errors.Is(err, ErrUnverified) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := VerifyCheckpoint(cp.Note, "not a key"); err == nil {
		t.Error("a malformed key was taken")
	}
}
