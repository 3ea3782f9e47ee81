package bench

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// A ratio that fell more than the tolerance is named; one that moved
// within it, or rose, is not; for a goal bounded from above, rising is
// falling.
func TestCompareNamesWhatFell(t *testing.T) {
	run := &Results{
		Rows: []RowResult{
			{Name: "steady", RatioToLimit: []float64{0.70, 0.66, 0.69}},
			{Name: "fell", RatioToLimit: []float64{0.50}},
			{Name: "rose", RatioToLimit: []float64{0.90}},
			{Name: "new row", RatioToLimit: []float64{0.30}},
		},
		Goals: []GoalValue{
			{Goal: Goal{Name: "p50 bounded", AtMost: 0.5}, Values: []float64{0.40}},
			{Goal: Goal{Name: "rate bounded", AtLeast: 0.8}, Values: []float64{0.85}},
		},
	}
	base := Baseline{Taken: "test", Rows: map[string]float64{"steady": 0.72, "fell": 0.70, "rose": 0.60, "gone": 1},
		Goals: map[string]float64{"p50 bounded": 0.30, "rate bounded": 0.86}}
	fell := map[string]bool{}
	changes := run.Compare(base)
	for _, c := range changes {
		fell[c.Name] = c.Fell
	}
	want := map[string]bool{"steady": false, "fell": true, "rose": false, "goal: p50 bounded": true, "goal: rate bounded": false}
	if len(fell) != len(want) {
		t.Fatalf("compared %v, want %v", fell, want)
	}
	for name, w := range want {
		if fell[name] != w {
			t.Errorf("%s: fell = %v, want %v", name, fell[name], w)
		}
	}
	var out bytes.Buffer
	PrintComparison(&out, base, changes)
	if !strings.Contains(out.String(), "2 of 5 ratios fell") {
		t.Errorf("the comparison's last line does not count what fell:\n%s", out.String())
	}
	path := filepath.Join(t.TempDir(), "baseline.json")
	if err := WriteBaseline(path, run.Baseline("a test")); err != nil {
		t.Fatal(err)
	}
	again, ok, err := ReadBaseline(path)
	if err != nil || !ok || again.Rows["fell"] != 0.50 || again.Goals["p50 bounded"] != 0.40 {
		t.Fatalf("read back %+v, %v, %v", again, ok, err)
	}
	if _, ok, err := ReadBaseline(filepath.Join(t.TempDir(), "none.json")); ok || err != nil {
		t.Fatalf("a missing baseline: ok %v, err %v", ok, err)
	}
}
