// Command ensure-minio builds the pinned MinIO server that pkg/devinfra runs
// into the user's cache, unless it is there already, and prints its path.
//
//	go run ./pkg/devinfra/cmd/ensure-minio
//
// The first build takes minutes, so `make test` and `make run` start this in
// the background before linting and building: by the time a server is
// started the build has finished, or devinfra.StartMinio waits for it (the
// cache is locked while a build runs, so it is never built twice at once).
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
	bin, err := devinfra.EnsureMinioServer(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ensure-minio:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
