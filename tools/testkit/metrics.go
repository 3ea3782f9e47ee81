package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric reads a counter or gauge of the default registry (the one a
// process's metrics port serves): the first series of name that carries
// every label of labels with its value. It is false when no such series
// is exported.
func Metric(t testing.TB, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for name, want := range labels {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == name && l.GetValue() == want
				}
				if !found {
					continue next
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}
