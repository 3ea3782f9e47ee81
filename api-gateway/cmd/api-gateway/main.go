// Command api-gateway is the registry's public entry point.
package main

import (
	"context"
	"flag"
	"os"

	"github.com/go-kit/log"

	gateway "github.com/assetregistry/registry/api-gateway"
	"github.com/assetregistry/registry/pkg/process"
	"github.com/assetregistry/registry/pkg/telemetry"
)

func main() {
	var cfg gateway.Config
	register := func(fs *flag.FlagSet) *telemetry.LogConfig {
		cfg.RegisterFlags(fs)
		return &cfg.Log
	}
	os.Exit(process.Execute("api-gateway", os.Args[1:], register, func(ctx context.Context, logger log.Logger) error {
		return serve(ctx, cfg, logger)
	}))
}

func serve(ctx context.Context, cfg gateway.Config, logger log.Logger) error {
	shutdownTracing, err := telemetry.SetupTracing(ctx, "api-gateway", nil)
	if err != nil {
		return err
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck // best effort at exit
	g, err := gateway.New(cfg, logger)
	if err != nil {
		return err
	}
	defer g.Close()
	if err := g.CheckIssuer(ctx, logger); err != nil {
		return err
	}
	if err := g.CheckDocuments(ctx, cfg.DocsStartupWait, logger); err != nil {
		return err
	}
	return process.Run(ctx, cfg.Server, logger, g.Handler, g.Health)
}
