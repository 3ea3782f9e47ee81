// Command ensure-server builds a pinned server that pkg/devinfra runs from
// source into the user's cache, unless it is there already, and prints its
// path: minio (the object store of make run and the tests), nats (NATS with
// JetStream, the change events' stream) or hydra (ORY Hydra, the
// independent token issuer of the end-to-end tests).
//
//	go run ./pkg/devinfra/cmd/ensure-server minio
//
// The first build takes minutes, so `make test` (and `make run`, for MinIO)
// start this in the background before linting and building: by the time a
// server is started the build has finished, or devinfra waits for it (the
// cache is locked while a build runs, so it is never built twice at once).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/assetregistry/registry/tools/devinfra"
)

var servers = map[string]func(context.Context, io.Writer) (string, error){
	"minio": devinfra.EnsureMinioServer,
	"hydra": devinfra.EnsureHydraServer,
	"nats":  devinfra.EnsureNatsServer,
}

func main() {
	ensure, ok := servers[os.Args[len(os.Args)-1]]
	if len(os.Args) != 2 || !ok {
		fmt.Fprintln(os.Stderr, "usage: ensure-server minio|nats|hydra")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	bin, err := ensure(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ensure-server %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
