package events

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

	"github.com/go-kit/log"
	"github.com/google/uuid"
	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"

	"github.com/assetregistry/registry/services/events/internal/eventstest"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/services/events/tlog/witness"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// testWitness is a C2SP tlog-witness of one log, in the test's process:
// add-checkpoint checks the log's signature and the consistency proof from
// the size it saw last (409 with that size when the request's old differs),
// and cosigns (cosignature/v1, timestamped) with an Ed25519 key of type
// 0x04. Written from the specs, not from the registry's code.
type testWitness struct {
	*httptest.Server
	name  string
	vkey  string
	priv  ed25519.PrivateKey
	hash  []byte
	log   note.Verifier
	mu    sync.Mutex
	size  uint64
	root  []byte
	calls []string
}

func newTestWitness(t *testing.T, name, logKey string) *testWitness {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	raw := append([]byte{0x04}, pub...)
	sum := sha256.Sum256(append([]byte(name+"\n"), raw...))
	verifier, err := note.NewVerifier(logKey)
	if err != nil {
		t.Fatal(err)
	}
	w := &testWitness{name: name, priv: priv, hash: sum[:4], log: verifier,
		vkey: fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(sum[:4]), base64.StdEncoding.EncodeToString(raw))}
	w.Server = httptest.NewServer(http.HandlerFunc(w.addCheckpoint))
	t.Cleanup(w.Close)
	return w
}

func (w *testWitness) addCheckpoint(rw http.ResponseWriter, r *http.Request) {
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
		if err := proof.VerifyConsistency(hasher, old, size, hashes, w.root, root); err != nil {
			http.Error(rw, err.Error(), 422)
			return
		}
	}
	w.size, w.root = size, root
	at := uint64(time.Now().Unix())
	sig := ed25519.Sign(w.priv, []byte("cosignature/v1\ntime "+strconv.FormatUint(at, 10)+"\n"+n.Text))
	raw := append(append(append([]byte{}, w.hash...), binary.BigEndian.AppendUint64(nil, at)...), sig...)
	fmt.Fprintf(rw, "— %s %s\n", w.name, base64.StdEncoding.EncodeToString(raw))
}

// A configured witness cosigns each new checkpoint, given the consistency
// proof from the one it saw last (and, when the registry's record of that
// is off, told by its 409); the served checkpoint carries the cosignature
// after the log's signature, in the JSON note and the text alike, and
// still opens with the log's key alone.
func TestWitnessCosignsEachCheckpoint(t *testing.T) {
	signing, public := eventstest.NewLogKey(t, testOrigin)
	w := newTestWitness(t, "witness.test/w1", public)
	cfg := DefaultConfig()
	cfg.Log.SigningKey = signing
	cfg.Log.Witnesses = w.URL + " " + w.vkey
	keys, err := cfg.Log.Keys()
	if err != nil {
		t.Fatal(err)
	}
	s := servicetest.Start(t, SpecWith(cfg))
	witnesses, err := witness.ParseWitnesses(cfg.Log.Witnesses)
	if err != nil {
		t.Fatal(err)
	}
	submit := witness.Submitter(tlog.NewStore(s.Built.Store), witness.NewStore(s.Built.Store), witnesses, http.DefaultClient, log.NewNopLogger())
	wkey, err := witness.ParseKey(w.vkey)
	if err != nil {
		t.Fatal(err)
	}
	cosigned := func(size uint64) {
		t.Helper()
		text := fetchCheckpointText(t, s)
		if _, err := keys.Open(text); err != nil {
			t.Fatalf("the cosigned checkpoint no longer opens with the log's key: %v", err)
		}
		body, sigs, _ := strings.Cut(text, "\n\n")
		var line string
		for _, l := range strings.SplitAfter(sigs, "\n") {
			if strings.HasPrefix(l, "— "+w.name+" ") {
				line = l
			}
		}
		if _, err := wkey.Verify(body+"\n", line); err != nil || !strings.Contains(body, "\n"+strconv.FormatUint(size, 10)+"\n") {
			t.Fatalf("checkpoint %q: cosignature %v", text, err)
		}
		if note := s.Call(200, "GET", "/log/checkpoint", "", nil).JSON()["note"]; note != text {
			t.Errorf("the JSON note %q is not the text %q", note, text)
		}
	}

	publish(t, s, event("organization", "created", uuid.NewString()))
	sign(t, s, keys)
	submit(t.Context())
	cosigned(1)
	submit(t.Context()) // cosigned already: not sent again

	publish(t, s, event("organization", "created", uuid.NewString()), event("asset", "created", uuid.NewString()))
	sign(t, s, keys)
	submit(t.Context())
	cosigned(3)

	// The registry forgot what the witness saw: the witness says, and the
	// proof from there follows.
	if _, err := s.Built.Store.Pool.Exec(t.Context(), `UPDATE witness_state SET size = 0`); err != nil {
		t.Fatal(err)
	}
	publish(t, s, event("asset", "created", uuid.NewString()))
	four := sign(t, s, keys)
	submit(t.Context())
	cosigned(4)

	// A checkpoint signed again at its size (as the upgrade that added the
	// asset heads did) is served without the cosignatures of the note it
	// replaced, until the witness cosigns the new one.
	again, err := keys.Sign(four.Size, four.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Built.Store.Pool.Exec(t.Context(), `UPDATE checkpoints SET note = $1 WHERE size = 4`, again.Note); err != nil {
		t.Fatal(err)
	}
	if text := fetchCheckpointText(t, s); text != again.Note {
		t.Errorf("a checkpoint signed again is served as %q, want %q", text, again.Note)
	}
	submit(t.Context())
	cosigned(4)
	w.mu.Lock()
	defer w.mu.Unlock()
	if got := strings.Join(w.calls, " "); got != "0->1 1->3 0->4 3->4 4->4" {
		t.Errorf("the witness was asked %s", got)
	}
}

// fetchCheckpointText is the checkpoint as text, without a token.
func fetchCheckpointText(t *testing.T, s *servicetest.Service) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", s.Client.BaseURL+"/log/checkpoint", nil)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("checkpoint as text: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), text)
	}
	return string(text)
}
