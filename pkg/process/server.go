// Run serves a process's HTTP listeners (the API and, on its own
// port, the metrics) with health and readiness endpoints and a graceful
// shutdown that drains in-flight requests.

package process

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"golang.org/x/sync/errgroup"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// ServerConfig of the listeners, of reading requests and of shutdown.
type ServerConfig struct {
	Addr            string
	MetricsAddr     string
	ShutdownDelay   time.Duration
	ShutdownTimeout time.Duration
	// Read bounds reading one request (header size, body time); the
	// process's middleware (process.Stack) applies it.
	Read httpx.ReadLimits
}

// RegisterFlags adds http.addr, metrics.addr, the read limits (http.*) and
// shutdown.* (env HTTP_ADDR, ...).
func (c *ServerConfig) RegisterFlags(fs *flag.FlagSet, defaultAddr, defaultMetricsAddr string) {
	fs.StringVar(&c.Addr, "http.addr", defaultAddr, "API listen address")
	c.Read.RegisterFlags(fs)
	fs.StringVar(&c.MetricsAddr, "metrics.addr", defaultMetricsAddr, "Prometheus /metrics and /debug/pprof listen address (never exposed through the gateway)")
	fs.DurationVar(&c.ShutdownDelay, "shutdown.delay", 0, "after SIGTERM, keep serving with /readyz failing this long so load balancers stop sending traffic")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown.timeout", 30*time.Second, "how long in-flight requests may take to finish after SIGTERM")
}

// Run serves api on cfg.Addr and metrics on cfg.MetricsAddr until ctx is
// cancelled (SIGTERM), then fails readiness, waits cfg.ShutdownDelay, and
// stops accepting while letting in-flight requests finish.
func Run(ctx context.Context, cfg ServerConfig, logger log.Logger, api http.Handler, health *Health) error {
	apiLn, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen %s: %w", cfg.Addr, err)
	}
	var metricsLn net.Listener
	if cfg.MetricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			apiLn.Close()
			return fmt.Errorf("server: listen %s: %w", cfg.MetricsAddr, err)
		}
	}
	return Serve(ctx, cfg, logger, api, health, apiLn, metricsLn)
}

// Serve is Run on listeners the caller opened (tests use port 0).
func Serve(ctx context.Context, cfg ServerConfig, logger log.Logger, api http.Handler, health *Health, apiLn, metricsLn net.Listener) error {
	if err := cfg.Read.Validate(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	servers := []*http.Server{newServer(api, cfg.Read)}
	listeners := []net.Listener{ProblemListener(apiLn, logger)}
	if metricsLn != nil {
		servers = append(servers, newServer(metricsHandler(), cfg.Read))
		listeners = append(listeners, metricsLn)
	}
	level.Info(logger).Log("msg", "listening", "addr", apiLn.Addr().String(), "metrics_addr", addrOf(metricsLn))

	g, gctx := errgroup.WithContext(ctx)
	for i, srv := range servers {
		g.Go(func() error {
			if err := srv.Serve(listeners[i]); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		if health != nil {
			health.draining.Store(true)
		}
		level.Info(logger).Log("msg", "shutting down", "delay", cfg.ShutdownDelay, "timeout", cfg.ShutdownTimeout)
		time.Sleep(cfg.ShutdownDelay)
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		var errs []error
		for _, srv := range servers {
			errs = append(errs, srv.Shutdown(sctx))
		}
		return errors.Join(errs...)
	})
	err := g.Wait()
	level.Info(logger).Log("msg", "stopped", "err", err)
	return err
}

// metricsHandler is what the metrics port serves: /metrics and the Go
// profiler under /debug/pprof/ (`make bench PROFILE=1` reads it under
// load). Profiles expose internals and cost CPU on demand, so, like the
// metrics, they are only ever on this private port: the handlers are
// mounted on this mux explicitly and never on http.DefaultServeMux, which
// no listener serves.
func metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", telemetry.MetricsHandler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func newServer(h http.Handler, read httpx.ReadLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    NetHTTPHeaderLimit(read),
	}
}

// NetHTTPHeaderLimit is net/http's own bound on the header for the limits
// read: well above read.MaxHeaderBytes, so that a header over the
// registry's limit is still read whole and answered by
// httpx.CheckRequest with a problem that names the request, and only a
// header too large to be worth reading at all meets net/http's limit
// (whose answer ProblemListener rewrites).
func NetHTTPHeaderLimit(read httpx.ReadLimits) int {
	return max(http.DefaultMaxHeaderBytes, 2*read.MaxHeaderBytes)
}

func addrOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}
