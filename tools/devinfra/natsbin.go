package devinfra

import (
	"context"
	"fmt"
	"io"
)

// NatsVersion pins the NATS server (with JetStream) that StartNats runs, as
// a version of the Go module github.com/nats-io/nats-server/v2, which
// EnsureNatsServer builds from source with `go install`, as MinIO. NATS
// publishes release binaries too, but a module build needs nothing but the
// module proxy that every other build here already uses, and the module's
// checksum is verified by the go command. The module has no replace
// directives. A new pin must be a version the module proxy serves; a
// changed pin builds into a new cache directory.
//
// A cold build (empty module and build caches) costs about half a CPU-minute
// and 30 MB of modules; warm, it is never rebuilt.
const NatsVersion = "v2.15.2"

const natsModule = "github.com/nats-io/nats-server/v2"

// NatsServerPath returns where EnsureNatsServer keeps the pinned server:
// ${XDG_CACHE_HOME:-$HOME/.cache}/asset-registry/tools/nats-server-<version>/nats-server,
// beside MinIO's build.
func NatsServerPath() (string, error) { return toolPath("nats-server", NatsVersion) }

// EnsureNatsServer returns the path of the pinned NATS server, building it
// first if it is not cached yet (once per version and machine; progress,
// which may be nil, hears of the start and end). Concurrent callers, in
// this process or others, wait for one build.
func EnsureNatsServer(ctx context.Context, progress io.Writer) (string, error) {
	bin, err := NatsServerPath()
	if err != nil {
		return "", err
	}
	if err := buildToolOnce(ctx, bin, "the NATS server "+NatsVersion, progress, buildNats); err != nil {
		return "", fmt.Errorf("build NATS server %s: %w", NatsVersion, err)
	}
	return bin, nil
}

// buildNats installs the pinned module into scratch, outside any module
// (see buildMinio), so exactly the versions its own go.mod selects are built.
func buildNats(ctx context.Context, scratch string, log io.Writer) error {
	return runGo(ctx, scratch, log, "install", "-trimpath", "-ldflags=-s -w", natsModule+"@"+NatsVersion)
}
