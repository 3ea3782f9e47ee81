// Package app is the shared main of the registry's services: flags with
// environment fallback, logging, tracing, PostgreSQL with migrations, the
// Redis find cache, token verification and the HTTP stack around the
// service's own routes. A service's main.go names its schema, migrations,
// OpenAPI document and how to build its handler, and nothing else.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/peterbourgon/ff/v3"
	// Certificate authorities compiled in, used only when the system has
	// none: the images are a static binary on an empty base, and the
	// binaries still reach HTTPS issuers, PostgreSQL with TLS and S3.
	_ "golang.org/x/crypto/x509roots/fallback"
	"sigs.k8s.io/yaml"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/cache"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/logging"
	"github.com/assetregistry/registry/pkg/postgres"
	"github.com/assetregistry/registry/pkg/reqinfo"
	"github.com/assetregistry/registry/pkg/server"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// Spec describes one service.
type Spec struct {
	Name        string // service name in logs, traces and the cache namespace
	Schema      string // default PostgreSQL schema
	Migrations  fs.FS  // NNN_name.sql files at the root
	OpenAPIYAML []byte // served as /openapi.json
	// Build returns the service's routes; they are served behind token
	// verification.
	Build func(Deps) (http.Handler, error)
}

// Deps are what Build gets.
type Deps struct {
	Pool           *pgxpool.Pool
	Cache          *cache.Finds
	Logger         log.Logger
	RequestTimeout time.Duration
}

// Config is every flag of a service.
type Config struct {
	Server   server.Config
	Database postgres.Config
	Redis    cache.Config
	OIDC     auth.Config
	Log      logging.Config
	Timeout  time.Duration
}

// RegisterFlags adds all flags; each also reads the environment variable of
// its upper-cased name (http.addr -> HTTP_ADDR).
func (c *Config) RegisterFlags(fs *flag.FlagSet, spec Spec) {
	c.Server.RegisterFlags(fs, ":8080", ":9090")
	c.Database.RegisterFlags(fs, spec.Schema)
	c.Redis.RegisterFlags(fs)
	c.OIDC.RegisterFlags(fs)
	c.Log.RegisterFlags(fs)
	fs.DurationVar(&c.Timeout, "request.timeout", 15*time.Second, "upper bound on the work done for one request")
}

// ParseFlags parses args with environment fallback.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	return ff.Parse(fs, args, ff.WithEnvVars())
}

// Main runs the service with os.Args and returns the exit code. The first
// argument may be "migrate", which applies the migrations and exits (for a
// deploy hook), or "serve" (the default).
func Main(spec Spec) int {
	args := os.Args[1:]
	command := "serve"
	if len(args) > 0 && (args[0] == "serve" || args[0] == "migrate") {
		command, args = args[0], args[1:]
	}
	var cfg Config
	register := func(fs *flag.FlagSet) *logging.Config {
		cfg.RegisterFlags(fs, spec)
		return &cfg.Log
	}
	return Execute(spec.Name, args, register, func(ctx context.Context, logger log.Logger) error {
		if command == "migrate" {
			return migrateOnly(ctx, spec, cfg, logger)
		}
		return Serve(ctx, spec, cfg, logger)
	})
}

// Execute is the body of every binary's main: it parses args into the
// flags that register adds (with environment fallback), builds the logger
// from the log settings register returns, and runs run until SIGINT or
// SIGTERM. It returns the exit code: 2 for bad flags, 1 when run fails.
func Execute(name string, args []string, register func(*flag.FlagSet) *logging.Config,
	run func(ctx context.Context, logger log.Logger) error) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	logCfg := register(fs)
	if err := ParseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	logger := logging.New(os.Stdout, name, *logCfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, logger); err != nil {
		level.Error(logger).Log("msg", "exiting", "err", err)
		return 1
	}
	return 0
}

func migrateOnly(ctx context.Context, spec Spec, cfg Config, logger log.Logger) error {
	pool, err := postgres.OpenAndMigrate(ctx, cfg.Database, spec.Migrations, retryLogger(logger))
	if err != nil {
		return err
	}
	pool.Close()
	level.Info(logger).Log("msg", "migrations applied", "schema", cfg.Database.Schema)
	return nil
}

func retryLogger(logger log.Logger) func(error) {
	return func(err error) {
		level.Warn(logger).Log("msg", "database not reachable yet; retrying", "err", err)
	}
}

// Serve runs the service until ctx ends.
func Serve(ctx context.Context, spec Spec, cfg Config, logger log.Logger) error {
	shutdownTracing, err := telemetry.SetupTracing(ctx, spec.Name, nil)
	if err != nil {
		return err
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck // best effort at exit

	handler, health, cleanup, err := Build(ctx, spec, cfg, logger)
	if err != nil {
		return err
	}
	defer cleanup()
	return server.Run(ctx, cfg.Server, logger, handler, health)
}

// Build assembles the service's full HTTP handler and its health checks;
// tests use it to run a service in-process against real datastores.
func Build(ctx context.Context, spec Spec, cfg Config, logger log.Logger) (http.Handler, *server.Health, func(), error) {
	openapiJSON, err := yaml.YAMLToJSON(spec.OpenAPIYAML)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("openapi document: %w", err)
	}
	verifier, err := auth.NewVerifier(cfg.OIDC)
	if err != nil {
		return nil, nil, nil, err
	}
	pool, err := postgres.OpenAndMigrate(ctx, cfg.Database, spec.Migrations, retryLogger(logger))
	if err != nil {
		verifier.Close()
		return nil, nil, nil, err
	}
	redisClient, err := cache.Connect(cfg.Redis)
	if err != nil {
		pool.Close()
		verifier.Close()
		return nil, nil, nil, err
	}
	cleanup := func() {
		if redisClient != nil {
			redisClient.Close()
		}
		pool.Close()
		verifier.Close()
	}
	// The namespace names the database too: installations that share a
	// Redis (test and production, say) must never see each other's finds.
	cc := pool.Config().ConnConfig
	namespace := fmt.Sprintf("%s:%s:%d/%s/%s", spec.Name, cc.Host, cc.Port, cc.Database, cfg.Database.Schema)
	finds := cache.NewFinds(redisClient, namespace, cfg.Redis, logger)
	routes, err := spec.Build(Deps{Pool: pool, Cache: finds, Logger: logger, RequestTimeout: cfg.Timeout})
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	checks := []server.Check{{Name: "postgres", Probe: postgres.Ping(pool)}}
	if redisClient != nil {
		checks = append(checks, server.Check{Name: "redis", Optional: true, Probe: func(ctx context.Context) error {
			return redisClient.Ping(ctx).Err()
		}})
	}
	health := server.NewHealth(checks...)
	public := http.NewServeMux()
	health.Mount(public)
	public.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapiJSON)
	})
	return Stack(logger, spec.Name, true, public, auth.Authenticate(verifier)(routes)), health, cleanup, nil
}

// Stack is the HTTP middleware every process puts around its handlers:
// request id, tracing/metrics/access log, panic recovery and path
// normalisation; then the public paths (probes, API documents) and, for
// everything else, the protected handler.
func Stack(logger log.Logger, operation string, trustIncomingIDs bool, public *http.ServeMux, protected http.Handler) http.Handler {
	public.Handle("/", protected)
	return httpx.Chain(recordPublicRoute(public),
		httpx.WithRequestInfo(trustIncomingIDs),
		telemetry.Observe(logger, operation),
		httpx.Recover,
		httpx.Normalize,
	)
}

// recordPublicRoute names the route of probes and documents for metrics;
// protected routes are named by their own router.
func recordPublicRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "/" && pattern != "" {
			_, path, _ := strings.Cut(pattern, " ")
			reqinfo.From(r.Context()).SetRoute(path)
		}
		mux.ServeHTTP(w, r)
	})
}
