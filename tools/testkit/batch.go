package testkit

import (
	"strings"
	"testing"
)

// ItemWant is what a test expects of one result of a batch: its status
// and, for a refusal, the field its 422 names or its problem type's last
// segment (Mark; "" checks the status alone).
type ItemWant struct {
	Status int
	Mark   string
}

// CheckItems checks a batch's results against want, item by item, and
// hands each result that has the status wanted and no Mark to accepted
// (nil: none), for the test to look at what it wrote.
func CheckItems(t testing.TB, results []map[string]any, want []ItemWant, accepted func(i int, r map[string]any)) {
	t.Helper()
	if len(results) != len(want) {
		t.Fatalf("results = %v, want %d", results, len(want))
	}
	for i, r := range results {
		if r["status"] != float64(want[i].Status) {
			t.Errorf("item %d: %v, want status %d", i, r, want[i].Status)
			continue
		}
		if want[i].Mark == "" {
			if accepted != nil {
				accepted(i, r)
			}
			continue
		}
		p, _ := r["problem"].(map[string]any)
		kind, _ := p["type"].(string)
		errs, _ := p["errors"].([]any)
		named := len(errs) > 0 && errs[0].(map[string]any)["field"] == want[i].Mark
		if !named && !strings.HasSuffix(kind, ":"+want[i].Mark) {
			t.Errorf("item %d: %v, want its problem to name %s", i, r, want[i].Mark)
		}
	}
}
