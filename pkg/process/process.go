// Package process is what every binary of the registry shares, whatever it
// serves: flags with environment fallback, the logger, signal handling, the
// HTTP middleware around every handler, and the listeners (the API and, on
// its own port, the metrics) with health and readiness endpoints and a
// graceful shutdown that drains in-flight requests. It links no datastore
// client, so the gateway and the identity provider stay free of what only
// the services need (package servicekit builds on this one for them).
package process

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/peterbourgon/ff/v3"
	// Certificate authorities compiled in, used only when the system has
	// none: the images are a static binary on an empty base, and the
	// binaries still reach HTTPS issuers, PostgreSQL with TLS and S3.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// ParseFlags parses args; each flag also reads the environment variable of
// its upper-cased name with dots and dashes as underscores
// (database.url -> DATABASE_URL).
func ParseFlags(fs *flag.FlagSet, args []string) error {
	return ff.Parse(fs, args, ff.WithEnvVars())
}

// Execute is the body of every binary's main: it parses args into the
// flags that register adds, builds the logger from the log settings
// register returns, and runs run until SIGINT or SIGTERM. It returns the
// exit code: 2 for bad flags, 1 when run fails.
func Execute(name string, args []string, register func(*flag.FlagSet) *telemetry.LogConfig,
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
	logger, flushLog := telemetry.NewFlushingLogger(os.Stdout, name, *logCfg)
	defer flushLog()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, logger); err != nil {
		level.Error(logger).Log("msg", "exiting", "err", err)
		return 1
	}
	return 0
}

// Stack is the HTTP middleware every process puts around its handlers:
// request id, tracing/metrics/access log, panic recovery, the refusal of
// requests that cannot be read completely (header size, path, query),
// the deadlines of request bodies, and path normalisation; then the
// public paths (probes, API documents) and, for everything else, the
// protected handler. limits are the process's server.Config.Read (the
// defaults when left out).
func Stack(logger log.Logger, operation string, trustIncomingIDs bool, public *http.ServeMux, protected http.Handler, limits ...httpx.ReadLimits) http.Handler {
	var read httpx.ReadLimits
	if len(limits) > 0 {
		read = limits[0]
	}
	public.Handle("/", protected)
	return httpx.Chain(recordPublicRoute(public),
		httpx.WithRequestInfo(trustIncomingIDs),
		telemetry.Observe(logger, operation),
		httpx.Recover,
		httpx.CheckRequest(read),
		httpx.BodyDeadlines(read),
		httpx.Normalize,
	)
}

// recordPublicRoute names the route of probes and documents for metrics;
// protected routes are named by their own router.
func recordPublicRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "/" && pattern != "" {
			_, path, _ := strings.Cut(pattern, " ")
			httpx.RequestInfoFrom(r.Context()).SetRoute(path)
		}
		mux.ServeHTTP(w, r)
	})
}
