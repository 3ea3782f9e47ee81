package events

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/services/events/internal/eventstest"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/services/events/tlog/witness"
	"github.com/assetregistry/registry/services/events/tlog/witness/witnesstest"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// A configured witness cosigns each new checkpoint, given the consistency
// proof from the one it saw last (and, when the registry's record of that
// is off, told by its 409); the served checkpoint carries the cosignature
// after the log's signature, in the JSON note and the text alike, and
// still opens with the log's key alone.
func TestWitnessCosignsEachCheckpoint(t *testing.T) {
	t.Parallel()
	signing, public := eventstest.NewLogKey(t, testOrigin)
	w := witnesstest.New(t, "witness.test/w1", public)
	cfg := DefaultConfig()
	cfg.Log.SigningKey = signing
	cfg.Log.Witnesses = w.URL + " " + w.VKey
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
	wkey, err := witness.ParseKey(w.VKey)
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
			if strings.HasPrefix(l, "— "+w.Name+" ") {
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
	if got := strings.Join(w.Calls(), " "); got != "0->1 1->3 0->4 3->4 4->4" {
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
