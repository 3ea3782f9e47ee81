// Package telemetry is what a process tells about itself: OpenTelemetry
// tracing, Prometheus metrics and the access log around every HTTP handler,
// once, for the gateway and every service alike, and the go-kit/log logger
// (one JSON object per line).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/felixge/httpsnoop"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
)

// SetupTracing installs the global tracer provider and the W3C trace-context
// propagator. Spans are exported over OTLP/HTTP when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set, and not at
// all otherwise; context still propagates, so a collector added later sees
// whole traces. Tests pass their own exporter. Call it before building
// handlers: they leave out span bookkeeping when tracing is off.
func SetupTracing(ctx context.Context, service string, exporter sdktrace.SpanExporter) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if exporter == nil {
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return func(context.Context) error { return nil }, nil
		}
		if exporter, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
		}
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	tracing.Store(true)
	// Handlers built after the shutdown (a test's, after another test
	// traced) leave the span bookkeeping out again: otelhttp's transport
	// wraps a request's body, and a wrapped body leaves in a write of its
	// own after the header.
	return func(ctx context.Context) error {
		tracing.Store(false)
		return tp.Shutdown(ctx)
	}, nil
}

// tracing is set once SetupTracing has installed an exporting provider.
var tracing atomic.Bool

// TracingEnabled reports whether spans are exported. When they are not,
// making them costs a tenth of a request's CPU for nothing, so the HTTP
// layers built afterwards leave the span machinery out and only pass the
// caller's trace context on.
func TracingEnabled() bool { return tracing.Load() }

var (
	requests = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "http_server_requests_total",
		Help: "HTTP requests served, by route pattern, method and status.",
	}, []string{"route", "method", "status"})
	latency = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_server_request_duration_seconds",
		Help:    "HTTP request latency, by route pattern, method and status.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"route", "method", "status"})
)

// MetricsHandler serves /metrics; it is mounted on its own port so metrics
// never leak through the gateway.
func MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.Handler())
	return mux
}

// Observe traces, measures and logs every request. It must run inside
// httpx.WithRequestInfo, which provides the request id.
func Observe(logger log.Logger, operation string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		measured := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := httpx.RequestInfoFrom(r.Context())
			trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("request.id", info.ID))
			m := httpsnoop.CaptureMetrics(next, w, r)
			series := requestSeriesCache.of(info.Route(), r.Method, m.Code)
			series.count.Inc()
			series.latency.Observe(m.Duration.Seconds())
			logRequest(logger, r, info, m)
		})
		if !TracingEnabled() {
			return continueTrace(measured)
		}
		// otelhttp names the span again after the handler ran; by then the
		// router has recorded the matched pattern.
		return otelhttp.NewHandler(measured, operation,
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
				if route, ok := httpx.RequestInfoFrom(r.Context()).MatchedRoute(); ok {
					return r.Method + " " + route
				}
				return r.Method
			}))
	}
}

// continueTrace puts the caller's trace context, if it sent one, in the
// request context without starting a span: the access log still names the
// trace, and calls made from the context carry it on.
func continueTrace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Traceparent") != "" {
			r = r.WithContext(otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		next.ServeHTTP(w, r)
	})
}

func logRequest(logger log.Logger, r *http.Request, info *httpx.RequestInfo, m httpsnoop.Metrics) {
	kv := []any{
		"msg", "request",
		"method", r.Method,
		"route", info.Route(),
		"path", info.Path,
		"status", m.Code,
		"duration_ms", float64(m.Duration.Microseconds()) / 1000,
		"bytes", m.Written,
		"request_id", info.ID,
	}
	if sc := trace.SpanContextFromContext(r.Context()); sc.HasTraceID() {
		kv = append(kv, "trace_id", sc.TraceID().String())
	}
	if sub := auth.Subject(r.Context()); sub != "" {
		kv = append(kv, "sub", sub)
	}
	lvl := level.Info
	if err := info.Err(); err != nil {
		if apperr.KindOf(err) == apperr.KindInternal {
			lvl = level.Error
			kv = append(kv, "err", err.Error()) // internals go to the log only
		} else {
			kv = append(kv, "problem", httpx.ProblemFrom(r.Context(), err).Detail)
		}
		var e *apperr.Error
		if errors.As(err, &e) && (e.Kind == apperr.KindUnavailable || e.Kind == apperr.KindClientClosed) {
			if e.Kind == apperr.KindUnavailable {
				lvl = level.Warn
			}
			kv = append(kv, "err", err.Error()) // where the wait or the cancellation hit
		}
	}
	if isProbe(r.URL.Path) && m.Code < 400 {
		lvl = level.Debug
	}
	lvl(logger).Log(kv...)
}

func isProbe(path string) bool {
	return path == "/healthz" || path == "/readyz" || strings.HasPrefix(path, "/metrics")
}
