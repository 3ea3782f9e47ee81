// Command ensure-hydra builds the pinned ORY Hydra that the end-to-end
// tests run as an independent token issuer (pkg/devinfra.HydraVersion) into
// the user's cache, unless it is there already, and prints its path.
//
//	go run ./pkg/devinfra/cmd/ensure-hydra
//
// `make test` starts this in the background before linting and building,
// as it does for MinIO, so the first build overlaps them; the test that
// needs the binary waits for it under the cache's lock.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/assetregistry/registry/pkg/devinfra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	bin, err := devinfra.EnsureHydraServer(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ensure-hydra:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
