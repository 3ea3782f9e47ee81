// Package witnesstest is a witness of the log (C2SP tlog-witness) that
// tests run in their process. Only tests import it.
package witnesstest

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// Server is a C2SP tlog-witness of one log, in the test's process:
// add-checkpoint checks the log's signature and the consistency proof from
// the size it saw last (409 with that size when the request's old differs),
// and cosigns (cosignature/v1, timestamped) with an Ed25519 key of type
// 0x04. Written from the specs, not from the registry's code.
type Server struct {
	*httptest.Server
	Name  string
	VKey  string // its verifier key, cosignature/v1 (type 0x04)
	priv  ed25519.PrivateKey
	hash  []byte
	log   note.Verifier
	mu    sync.Mutex
	size  uint64
	root  []byte
	calls []string
}

// New starts a witness named name of the log whose verifier key is logKey.
func New(t testing.TB, name, logKey string) *Server {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	raw := append([]byte{0x04}, pub...)
	sum := sha256.Sum256(append([]byte(name+"\n"), raw...))
	verifier, err := note.NewVerifier(logKey)
	if err != nil {
		t.Fatal(err)
	}
	w := &Server{Name: name, priv: priv, hash: sum[:4], log: verifier,
		VKey: fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(sum[:4]), base64.StdEncoding.EncodeToString(raw))}
	w.Server = httptest.NewServer(http.HandlerFunc(w.addCheckpoint))
	t.Cleanup(w.Close)
	return w
}

// addCheckpoint is POST /add-checkpoint.
func (w *Server) addCheckpoint(rw http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" || r.URL.Path != "/add-checkpoint" {
		http.NotFound(rw, r)
		return
	}
	in := bufio.NewReader(r.Body)
	first, _ := in.ReadString('\n')
	old, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(first, "old "), "\n"), 10, 64)
	if err != nil {
		http.Error(rw, "old", 400)
		return
	}
	var hashes [][]byte
	for {
		line, _ := in.ReadString('\n')
		if line == "\n" || line == "" {
			break
		}
		h, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(line, "\n"))
		if err != nil {
			http.Error(rw, "proof", 400)
			return
		}
		hashes = append(hashes, h)
	}
	signed, _ := io.ReadAll(in)
	n, err := note.Open(signed, note.VerifierList(w.log))
	if err != nil {
		http.Error(rw, err.Error(), 403)
		return
	}
	lines := strings.Split(n.Text, "\n")
	size, _ := strconv.ParseUint(lines[1], 10, 64)
	root, _ := base64.StdEncoding.DecodeString(lines[2])
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, fmt.Sprintf("%d->%d", old, size))
	if old != w.size {
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(409)
		fmt.Fprintf(rw, "%d\n", w.size)
		return
	}
	if old > 0 {
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, old, size, hashes, w.root, root); err != nil {
			http.Error(rw, err.Error(), 422)
			return
		}
	}
	w.size, w.root = size, root
	at := uint64(time.Now().Unix())
	sig := ed25519.Sign(w.priv, []byte("cosignature/v1\ntime "+strconv.FormatUint(at, 10)+"\n"+n.Text))
	raw := append(append(append([]byte{}, w.hash...), binary.BigEndian.AppendUint64(nil, at)...), sig...)
	fmt.Fprintf(rw, "— %s %s\n", w.Name, base64.StdEncoding.EncodeToString(raw))
}

// Calls are the add-checkpoint requests it answered, "<old>-><size>" each.
func (w *Server) Calls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string{}, w.calls...)
}
