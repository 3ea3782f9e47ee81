package tlog

import (
	"encoding/base64"
	"os"
	"testing"

	"github.com/assetregistry/registry/pkg/endpoints"
	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/events/internal/eventstest"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// testSpec is the events service's schema and document with the log's
// routes alone: the log's tests need no feed and no webhooks.
func testSpec() servicekit.Spec { return logSpec(Settings{}) }

// logSpec is testSpec with the log's settings.
func logSpec(settings Settings) servicekit.Spec {
	spec := servicekit.Embedded("events", os.DirFS(".."))
	spec.Build = func(d servicekit.Deps) (servicekit.Handlers, error) {
		r := endpoints.NewRouter()
		endpoints.Mount(r, Routes(NewService(NewStore(d.Store), settings)), endpoints.Timeout(d.RequestTimeout))
		return servicekit.Handlers{Routes: r}, nil
	}
	return spec
}

// startSigning runs the log with a signing key; keys verify what it signs.
func startSigning(t *testing.T) (*servicetest.Service, LogKeys) {
	t.Helper()
	signing, _ := eventstest.NewLogKey(t, "registry.test/log")
	keys, err := ParseLogKeys(signing, nil)
	if err != nil {
		t.Fatal(err)
	}
	return servicetest.Start(t, logSpec(Settings{Keys: keys})), keys
}

// hashesOf reads a proof's hashes (standard base64) from a JSON answer.
func hashesOf(t *testing.T, v any) [][]byte {
	t.Helper()
	var out [][]byte
	for _, h := range v.([]any) {
		b, err := base64.StdEncoding.DecodeString(h.(string))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
