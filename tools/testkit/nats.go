package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/assetregistry/registry/tools/devinfra"
)

const (
	natsURLEnv      = "TEST_NATS_URL"
	natsUserEnv     = "TEST_NATS_USER"
	natsPasswordEnv = "TEST_NATS_PASSWORD"
)

// NATSServer is the test NATS server (JetStream on) and its user.
type NATSServer struct {
	URL            string // nats://host:port, without credentials
	User, Password string
}

// Connect opens a connection as the server's user; it is closed when the
// test ends.
func (s NATSServer) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.URL, nats.UserInfo(s.User, s.Password), nats.Name(t.Name()), nats.Timeout(10*time.Second))
	if err != nil {
		t.Fatalf("testharness: connect to nats: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// NATSStream is one test's stream on the test NATS server: a stream name
// and subject prefix no other test uses, so that tests sharing the server
// (every package under `make test`) never see each other's events.
type NATSStream struct {
	NATSServer
	// Stream is a name such as "T_3F2A9C1B0D4E5F67" and SubjectPrefix
	// "t_3f2a9c1b0d4e5f67.registry.events": what a relay configured with
	// them publishes to instead of the production ones. The stream, if
	// anything created it, is deleted when the test ends.
	Stream, SubjectPrefix string
}

// NATS returns a stream name and subject prefix of the test's own on the
// test NATS server, starting the server on first use. It creates nothing
// (the relay under test ensures its stream) but deletes the stream when
// the test ends.
func NATS(t testing.TB) NATSStream {
	t.Helper()
	h.requireMain(t)
	srv := h.natsServer.url(t, h.startNATS)
	id := randomHex(t)
	s := NATSStream{NATSServer: srv, Stream: "T_" + strings.ToUpper(id), SubjectPrefix: "t_" + id + ".registry.events"}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := deleteStream(ctx, srv, s.Stream); err != nil {
			t.Errorf("testharness: %v", err)
		}
	})
	return s
}

func deleteStream(ctx context.Context, srv NATSServer, stream string) error {
	nc, err := nats.Connect(srv.URL, nats.UserInfo(srv.User, srv.Password), nats.Timeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("delete stream %s: %w", stream, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("delete stream %s: %w", stream, err)
	}
	if err := js.DeleteStream(ctx, stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("delete stream %s: %w", stream, err)
	}
	return nil
}

func (h *harness) startNATS() (NATSServer, error) {
	if url := os.Getenv(natsURLEnv); url != "" {
		return NATSServer{URL: url, User: os.Getenv(natsUserEnv), Password: os.Getenv(natsPasswordEnv)}, nil
	}
	dir, err := h.dataDir()
	if err != nil {
		return NATSServer{}, err
	}
	// The first start may build the server (once per machine).
	ctx, cancel := context.WithTimeout(context.Background(), minioBuildTimeout)
	defer cancel()
	n, err := devinfra.StartNats(ctx, devinfra.NatsOptions{DataDir: filepath.Join(dir, "nats")})
	if err != nil {
		return NATSServer{}, fmt.Errorf("%w (or set %s, %s and %s)", err, natsURLEnv, natsUserEnv, natsPasswordEnv)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shutDown {
		return NATSServer{}, errors.Join(errors.New("shutting down"), n.Stop())
	}
	h.nats = n
	return NATSServer{URL: n.URL, User: n.User, Password: n.Password}, nil
}

// Nats is a private NATS server a test starts, kills and restarts itself,
// for tests of the stream going away (the shared one of NATS must stay up).
type Nats = devinfra.Nats

// StartNats starts a private NATS server with its store in dataDir on port
// (0: a free one); it is stopped when the test ends.
func StartNats(t testing.TB, dataDir string, port int) *Nats {
	return StartNatsWith(t, NatsOptions{DataDir: dataDir, Port: port})
}

// NatsOptions are a private NATS server's settings (its max_payload, say).
type NatsOptions = devinfra.NatsOptions

// NatsMaxPayload is the max_payload of every server the kit and make run
// start.
const NatsMaxPayload = devinfra.NatsMaxPayload

// StartNatsWith starts a private NATS server as o says; it is stopped
// when the test ends.
func StartNatsWith(t testing.TB, o NatsOptions) *Nats {
	t.Helper()
	n, err := devinfra.StartNats(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	return n
}
