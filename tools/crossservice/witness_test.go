package crossservice

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/note"

	"github.com/assetregistry/registry/pkg/outbox"
	sdk "github.com/assetregistry/registry/sdk"
	"github.com/assetregistry/registry/services/events"
	"github.com/assetregistry/registry/services/events/feed"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/services/events/tlog/witness"
	"github.com/assetregistry/registry/services/events/tlog/witness/witnesstest"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// A passport made once a witness cosigned its checkpoint carries the
// cosignature: the SDK's VerifyCosignature (what `registry verify
// -witness` runs) accepts it with the witness's key, and refuses another
// witness's key and the same passport without the cosignature.
func TestPassportCosignedByAWitness(t *testing.T) {
	t.Parallel()
	signing, public, err := note.GenerateKey(rand.Reader, "registry.test/log")
	if err != nil {
		t.Fatal(err)
	}
	w := witnesstest.New(t, "witness.test/one", public)
	other := witnesstest.New(t, "witness.test/two", public)
	cfg := events.DefaultConfig()
	cfg.Log.SigningKey = signing
	cfg.Log.Witnesses = w.URL + " " + w.VKey
	keys, err := cfg.Log.Keys()
	if err != nil {
		t.Fatal(err)
	}
	s := servicetest.Start(t, events.SpecWith(cfg))
	log_ := tlog.NewStore(s.Built.Store)
	asset, assetType := uuid.NewString(), uuid.NewString()
	var batch []feed.Incoming
	for _, e := range []struct{ kind, id, data string }{
		{"asset_type", assetType, `{"id":"` + assetType + `","brand":"Liftco","model":"L-1"}`},
		{"asset", asset, `{"id":"` + asset + `","serial_number":"SN-1","asset_type_id":"` + assetType + `"}`},
	} {
		ev := outbox.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: e.kind + ".created", Time: time.Now().UTC().Truncate(time.Millisecond),
			Subject: outbox.EventSubject{Kind: e.kind, ID: e.id}, Actor: "inspector-app", RequestID: "req", Data: json.RawMessage(e.data)}
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, feed.Incoming{Event: ev, Raw: raw})
	}
	if _, err := feed.NewStore(s.Built.Store, log_).StoreEvents(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	if _, _, err := log_.SignCheckpoint(t.Context(), keys); err != nil {
		t.Fatal(err)
	}
	witnesses, err := witness.ParseWitnesses(cfg.Log.Witnesses)
	if err != nil {
		t.Fatal(err)
	}
	witness.Submitter(log_, witness.NewStore(s.Built.Store), witnesses, http.DefaultClient, log.NewNopLogger())(t.Context())

	bundle := s.Call(200, "GET", "/assets/"+asset+"/passport", s.RO, nil).Raw
	r, err := sdk.VerifyPassport(bundle, []string{public}, nil)
	if err != nil {
		t.Fatalf("the cosigned passport: %v", err)
	}
	if at, err := sdk.VerifyCosignature(r.Checkpoint.Note, w.VKey); err != nil || time.Since(at) > time.Minute {
		t.Errorf("the witness's cosignature: %v at %v", err, at)
	}
	if _, err := sdk.VerifyCosignature(r.Checkpoint.Note, other.VKey); !errors.Is(err, sdk.ErrUnverified) {
		t.Errorf("another witness's key: %v", err)
	}
	logOnly, _, _ := strings.Cut(r.Checkpoint.Note, "— "+w.Name+" ")
	if _, err := sdk.VerifyCosignature(logOnly, w.VKey); !errors.Is(err, sdk.ErrUnverified) {
		t.Errorf("the checkpoint without the cosignature: %v", err)
	}

	// The command: -witness requires the cosignature, offline.
	cli := filepath.Join(t.TempDir(), "registry")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", cli, "github.com/assetregistry/registry/sdk/cmd/registry")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the registry command: %v\n%s", err, out)
	}
	file := filepath.Join(t.TempDir(), "passport.json")
	if err := os.WriteFile(file, bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	verify := func(witnessKey string) (string, error) {
		out, err := exec.CommandContext(t.Context(), cli, "verify", file, "-key", public, "-witness", witnessKey).CombinedOutput()
		return string(out), err
	}
	if out, err := verify(w.VKey); err != nil || !strings.Contains(out, "cosigned: witness "+w.Name+" signed the checkpoint at ") {
		t.Errorf("registry verify -witness (its witness): %v\n%s", err, out)
	}
	if out, err := verify(other.VKey); err == nil || !strings.Contains(out, "no valid cosignature") {
		t.Errorf("registry verify -witness (another witness): %v\n%s", err, out)
	}
}
