// Command ensure-server builds the pinned servers that pkg/devinfra runs
// from source into the user's cache, unless they are there already, and
// prints their paths, one a line, in the order asked: minio (the object
// store of make run and the tests), nats (NATS with JetStream, the change
// events' stream) or hydra (ORY Hydra, the independent token issuer of the
// end-to-end tests); chromium (Debian's package, the browser the
// end-to-end tests check the passport page in) installs the same way.
//
//	go run ./tools/devinfra/cmd/ensure-server minio nats
//
// The first build takes minutes, so `make test` starts this in the
// background before linting and building: by the time a server is
// started the build has finished, or devinfra waits for it (the cache is
// locked while a build runs, so it is never built twice at once). The
// servers asked for build at the same time, in one process: one compile of
// this command rather than one per server. -low-priority names those that
// nothing waits for at first, built at nice 19 (devinfra.LowPriority; make
// run's launcher builds MinIO so itself, after the first call's parts are
// up).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/assetregistry/registry/tools/devinfra"
)

var servers = map[string]func(context.Context, io.Writer) (string, error){
	"minio": devinfra.EnsureMinioServer,
	"hydra": devinfra.EnsureHydraServer,
	"nats":  devinfra.EnsureNatsServer,
	"chromium": func(ctx context.Context, progress io.Writer) (string, error) {
		path, _, err := devinfra.EnsureChromium(ctx, progress)
		return path, err
	},
}

func main() {
	low := flag.String("low-priority", "", "comma-separated servers to build at nice 19 (nothing waits for them at first)")
	flag.Parse()
	names, lowNames := flag.Args(), splitList(*low)
	for _, name := range slices.Concat(names, lowNames) {
		if _, ok := servers[name]; !ok {
			names = nil
			break
		}
	}
	if len(names) == 0 {
		fmt.Fprintln(os.Stderr, "usage: ensure-server [-low-priority minio,...] minio|nats|hydra|chromium ...")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	paths, errs := make([]string, len(names)), make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			ctx := ctx
			if slices.Contains(lowNames, name) {
				ctx = devinfra.LowPriority(ctx)
			}
			if paths[i], errs[i] = servers[name](ctx, os.Stderr); errs[i] != nil {
				errs[i] = fmt.Errorf("ensure-server %s: %w", name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
