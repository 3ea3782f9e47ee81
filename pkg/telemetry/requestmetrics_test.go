package telemetry

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// The kept series are the vectors' own: what a call records through them
// is what /metrics serves, whether the series was found in the map or
// made by the call.
func TestRequestSeriesAreTheVectorsSeries(t *testing.T) {
	var s requestSeries
	route, method := "/series-test/{id}", "GET"
	for range 3 {
		m := s.of(route, method, 418)
		m.count.Inc()
		m.latency.Observe(0.002)
	}
	if got := testutil.ToFloat64(requests.WithLabelValues(route, method, "418")); got != 3 {
		t.Errorf("http_server_requests_total{route=%q,status=418} = %v after 3 calls, want 3", route, got)
	}
	var observed dto.Metric
	if err := latency.WithLabelValues(route, method, "418").(prometheus.Metric).Write(&observed); err != nil {
		t.Fatal(err)
	}
	if got := observed.GetHistogram().GetSampleCount(); got != 3 {
		t.Errorf("http_server_request_duration_seconds{route=%q,status=418} counts %d calls, want 3", route, got)
	}
	if m := *s.current.Load(); len(m) != 1 {
		t.Errorf("%d series kept for one route, method and status, want 1", len(m))
	}
}
