package registry

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// An auditor reads a leaf's entry and proves it: a redacted event's
// answer names its redaction's entry, which is read as one and proved
// like any leaf; what the redaction records is the leaf hash the event's
// leaf keeps.
func TestLogEntryOfARedaction(t *testing.T) {
	l := newTestLog(t, 3)
	event := l.entries[0]
	redaction := fmt.Appendf(nil, `{"type":"log.redaction","event_id":"e0","event_leaf":0,"leaf_hash":%q,"redacted_hash":%q,"person_id":"p1","reason":"erasure 7","time":"2026-01-02T03:04:05Z"}`,
		base64.StdEncoding.EncodeToString(LeafHash(event)), base64.StdEncoding.EncodeToString(LeafHash([]byte(`{}`))))
	stored, err := tlog.StoredHashes(3, redaction, tlog.HashReaderFunc(l.read))
	if err != nil {
		t.Fatal(err)
	}
	l.entries, l.hashes = append(l.entries, redaction), append(l.hashes, stored...)
	cp := l.checkpoint(t, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path + "?" + r.URL.RawQuery {
		case "/log/entry?leaf_index=0":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"type":"urn:asset-registry:problem:gone","title":"Gone","status":410,"instance":"/log/entry","request_id":"r","redaction_entry":3}`))
		case "/log/entry?leaf_index=3":
			_, _ = fmt.Fprintf(w, `{"leaf_index":3,"type":"log.redaction","entry":%q}`, base64.StdEncoding.EncodeToString(redaction))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL, Tokens: staticTokens{}})
	_, err = c.LogEntry(context.Background(), 0)
	var gone *Problem
	if !errors.As(err, &gone) || gone.Kind() != "gone" || gone.RedactionEntry == nil || *gone.RedactionEntry != 3 {
		t.Fatalf("the redacted event's entry: %v", err)
	}
	entry, err := c.LogEntry(context.Background(), *gone.RedactionEntry)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tlog.ProveRecord(4, 3, tlog.HashReaderFunc(l.read))
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyInclusion(cp, entry.Entry, InclusionProof{LeafIndex: 3, TreeSize: 4, Hashes: hashList(p)}); err != nil {
		t.Errorf("the redaction's entry: %v", err)
	}
	r, err := entry.Redaction()
	if err != nil || r.EventLeaf != 0 || r.Reason != "erasure 7" {
		t.Fatalf("the redaction: %+v, %v", r, err)
	}
	p, err = tlog.ProveRecord(4, 0, tlog.HashReaderFunc(l.read))
	if err != nil {
		t.Fatal(err)
	}
	proof := InclusionProof{LeafIndex: 0, TreeSize: 4, Hashes: hashList(p)}
	if err := VerifyLeafHash(cp, r.LeafHash, proof); err != nil {
		t.Errorf("the leaf hash the redaction records: %v", err)
	}
	if err := VerifyLeafHash(cp, r.RedactedHash, proof); !errors.Is(err, ErrUnverified) {
		t.Errorf("the hash of the bytes since the redaction proved as the logged leaf: %v", err)
	}
	if _, err := (LogEntry{Type: "event", Entry: event}).Redaction(); err == nil {
		t.Error("an event's entry read as a redaction")
	}
}
