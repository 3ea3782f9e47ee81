// Command api-gateway is the registry's public entry point.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	gateway "github.com/assetregistry/registry/api-gateway"
	"github.com/assetregistry/registry/pkg/app"
	"github.com/assetregistry/registry/pkg/logging"
	"github.com/assetregistry/registry/pkg/server"
	"github.com/assetregistry/registry/pkg/telemetry"
)

func main() { os.Exit(run()) }

func run() int {
	var cfg gateway.Config
	fs := flag.NewFlagSet("api-gateway", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := app.ParseFlags(fs, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	logger := logging.New(os.Stdout, "api-gateway", cfg.Log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, logger); err != nil {
		level.Error(logger).Log("msg", "exiting", "err", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, cfg gateway.Config, logger log.Logger) error {
	shutdownTracing, err := telemetry.SetupTracing(ctx, "api-gateway", nil)
	if err != nil {
		return err
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck // best effort at exit
	handler, health, closeGateway, err := gateway.New(cfg, logger)
	if err != nil {
		return err
	}
	defer closeGateway()
	return server.Run(ctx, cfg.Server, logger, handler, health)
}
