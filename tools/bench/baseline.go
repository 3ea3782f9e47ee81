package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"time"
)

// A baseline is the ratios of a run the next runs are compared with, so a
// change that costs speed is named by the run that shows it rather than
// found rounds later. Only ratios inside one run are kept (each row's
// ratio to its limit, each goal's value), never rates: the machine's own
// speed moves between runs, the ratios of rows run side by side much less.
// A comparison never fails a run: the machines are noisy, and a fall is a
// place to look, not a verdict.
type Baseline struct {
	// Taken says when and by which command the baseline was written.
	Taken string             `json:"taken"`
	Rows  map[string]float64 `json:"rows"`  // row name → median ratio to its limit
	Goals map[string]float64 `json:"goals"` // goal name → median value
}

// FallTolerance is how much worse than its baseline a ratio may come
// before the comparison names it: 10 %.
const FallTolerance = 0.10

// Baseline is this run's ratios as a baseline.
func (r *Results) Baseline(command string) Baseline {
	b := Baseline{Taken: fmt.Sprintf("%s by %s", r.Started.Format(time.RFC3339), command),
		Rows: map[string]float64{}, Goals: map[string]float64{}}
	for _, row := range r.Rows {
		if len(row.RatioToLimit) > 0 {
			b.Rows[row.Name] = median(row.RatioToLimit)
		}
	}
	for _, g := range r.Goals {
		if len(g.Values) > 0 {
			b.Goals[g.Name] = median(g.Values)
		}
	}
	return b
}

// WriteBaseline writes b to path.
func WriteBaseline(path string, b Baseline) error {
	raw, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// ReadBaseline reads the baseline at path; ok is false when there is none.
func ReadBaseline(path string) (b Baseline, ok bool, err error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Baseline{}, false, nil
	}
	if err != nil {
		return Baseline{}, false, err
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return Baseline{}, false, fmt.Errorf("bench: baseline %s: %w", path, err)
	}
	return b, true, nil
}

// Change is one ratio against its baseline.
type Change struct {
	Name     string
	Was, Now float64
	// Fell: worse than the baseline by more than FallTolerance (for a goal
	// bounded from above, such as a p50 ratio or a peak RSS, worse is
	// higher).
	Fell bool
}

// Compare sets this run's ratios beside b's, for the rows and goals both
// have.
func (r *Results) Compare(b Baseline) []Change {
	now := r.Baseline("")
	var out []Change
	add := func(name string, was, is float64, lowerIsBetter bool) {
		c := Change{Name: name, Was: was, Now: is}
		switch {
		case was <= 0:
		case lowerIsBetter:
			c.Fell = is > was*(1+FallTolerance)
		default:
			c.Fell = is < was*(1-FallTolerance)
		}
		out = append(out, c)
	}
	for name, is := range now.Rows {
		if was, ok := b.Rows[name]; ok {
			add(name, was, is, false)
		}
	}
	for _, g := range r.Goals {
		is, ok := now.Goals[g.Name]
		was, had := b.Goals[g.Name]
		if ok && had {
			add("goal: "+g.Name, was, is, g.AtMost > 0)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PrintComparison writes the comparison: every ratio both runs have, the
// ones that fell marked, and a last line that counts them.
func PrintComparison(w io.Writer, b Baseline, changes []Change) {
	fmt.Fprintf(w, "\nagainst the baseline (%s); a ratio more than %.0f %% worse is marked FELL:\n", b.Taken, FallTolerance*100)
	fell := 0
	for _, c := range changes {
		mark := ""
		if c.Fell {
			mark, fell = "FELL", fell+1
		}
		change := 0.0
		if c.Was != 0 {
			change = (c.Now/c.Was - 1) * 100
		}
		fmt.Fprintf(w, "%s %8.2f %8.2f %+7.1f %% %s\n", pad(c.Name, 70), c.Was, c.Now, change, mark)
	}
	names := make([]string, 0, fell)
	for _, c := range changes {
		if c.Fell {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names)
	if fell == 0 {
		fmt.Fprintf(w, "no ratio fell more than %.0f %% (%d compared)\n", FallTolerance*100, len(changes))
		return
	}
	fmt.Fprintf(w, "%d of %d ratios fell more than %.0f %%: %v\n", fell, len(changes), FallTolerance*100, names)
}
