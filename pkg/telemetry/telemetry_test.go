package telemetry_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"go.opentelemetry.io/otel/trace"

	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/telemetry"
)

// With tracing off (no exporter, as in this test binary) Observe makes no
// spans but still adopts the caller's trace context, so the access log
// names the trace and calls made from the request carry it on.
func TestObserveContinuesTheCallersTraceWhenTracingIsOff(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if _, err := telemetry.SetupTracing(t.Context(), "test", nil); err != nil {
		t.Fatal(err)
	}
	if telemetry.TracingEnabled() {
		t.Fatal("tracing is on without an exporter")
	}
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tests := []struct {
		name        string
		traceparent string
		want        string // trace id seen by the handler; "" for none
	}{
		{"with a traceparent", "00-" + traceID + "-" + spanID + "-01", traceID},
		{"without one", "", ""},
		{"with a malformed one", "00-zz-" + spanID + "-01", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen trace.SpanContext
			h := httpx.Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = trace.SpanContextFromContext(r.Context())
				w.WriteHeader(http.StatusNoContent)
			}), httpx.WithRequestInfo(false), telemetry.Observe(log.NewNopLogger(), "test"))
			r := httptest.NewRequest("GET", "/x", nil)
			if tt.traceparent != "" {
				r.Header.Set("Traceparent", tt.traceparent)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusNoContent {
				t.Fatalf("status %d", w.Code)
			}
			got := ""
			if seen.HasTraceID() {
				got = seen.TraceID().String()
			}
			if got != tt.want {
				t.Errorf("trace id %q, want %q", got, tt.want)
			}
			if seen.IsRemote() != (tt.want != "") {
				t.Errorf("remote = %v", seen.IsRemote())
			}
		})
	}
}

// The access log of a request whose client hung up says 499 at info
// level, with where the cancellation hit, rather than a 500 at error level.
func TestAccessLogOfAClientThatHungUp(t *testing.T) {
	var out bytes.Buffer
	h := httpx.Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteProblem(r.Context(), fmt.Errorf("read reference targets: %w", context.Canceled), w)
	}), httpx.WithRequestInfo(false), telemetry.Observe(log.NewLogfmtLogger(&out), "test"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/actions", nil).WithContext(ctx))
	line := out.String()
	for _, want := range []string{"level=info", "status=499", `err="the client closed the request before it was answered: read reference targets: context canceled"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the log line %q lacks %s", line, want)
		}
	}
}
