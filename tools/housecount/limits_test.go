package housecount

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The limits file's syntax, on a sample of its own (the checked-in file's
// exceptions change as the code is split), and the checked-in file itself.
func TestLimitsFileParses(t *testing.T) {
	sample := []byte(`# a comment
sql-outside-store      0       services/a/plans.go=10 services/a/roller.go=13
                               services/b/audit.go=3
services-file-lines    500     services/b/logstore.go=916
repository-file-lines  700
store-methods          20      services/b.Store=46
outbox-insert          0
store-registry         0
doc-lines              900     docs/history.md=1200
pkg-floors             9       12
duplicates-services    30      57
duplicates-pkg         25
`)
	limits, err := ParseLimits(sample)
	if err != nil {
		t.Fatal(err)
	}
	if l := limits[RuleServicesFile]; l.Target != 500 || l.Except["services/b/logstore.go"] != 916 {
		t.Errorf("%s = %+v; want the target 500 and logstore.go's exception of 916", RuleServicesFile, l)
	}
	if l := limits[RuleSQLOutsideStore]; len(l.Except) != 3 || l.Except["services/b/audit.go"] != 3 {
		t.Errorf("%s = %+v, want the 3 files of its line and its continued line", RuleSQLOutsideStore, l)
	}
	if l := limits[RuleDocLines]; l.Target != 900 || l.Except["docs/history.md"] != 1200 {
		t.Errorf("%s = %+v; want the target 900 and history.md's exception of 1200", RuleDocLines, l)
	}
	if _, err := ParseLimits(LimitsFile); err != nil {
		t.Errorf("the checked-in limits file: %v", err)
	}
}

func TestSQLLiterals(t *testing.T) {
	for _, c := range []struct {
		text string
		sql  bool
	}{
		{"SELECT id, name FROM organizations WHERE id = $1", true},
		{"\n\t\tINSERT INTO assets (id) VALUES ($1)", true},
		{"UPDATE plans SET due = $2 WHERE id = $1", true},
		{"DELETE FROM loose_objects WHERE key = $1", true},
		{"WITH latest AS (SELECT 1) SELECT * FROM latest", true},
		{"SELECT pg_advisory_xact_lock($1)", true},
		{"INSERT INTO outbox (id) VALUES ($1)", true},
		{"select the plan to update", false},
		{"the service's API document", false},
		{"UPDATE", false},
	} {
		if got := sqlLiteral.MatchString(c.text); got != c.sql {
			t.Errorf("%q: SQL = %v, want %v", c.text, got, c.sql)
		}
	}
	for _, c := range []struct {
		text  string
		match bool
	}{
		{"INSERT INTO outbox (id, subject) VALUES ($1, $2)", true},
		{"insert into actions.outbox(id) values ($1)", true},
		{"INSERT INTO outbox_state (id) VALUES ($1)", false},
		{"INSERT INTO actions (id) VALUES ($1)", false},
	} {
		if got := outboxInsert.MatchString(c.text); got != c.match {
			t.Errorf("%q: an outbox insert = %v, want %v", c.text, got, c.match)
		}
	}
}

func TestCheckFailsOnlyForNewViolations(t *testing.T) {
	limits, err := ParseLimits([]byte(`
sql-outside-store      0   services/a/old.go=2
services-file-lines    500 services/a/big.go=600
                           services/a/gone.go=700
repository-file-lines  700
store-methods          20  services/a.Store=30
outbox-insert          0
store-registry         0
doc-lines              900 docs/long.md=950
pkg-floors             9   12
duplicates-services    30  57
duplicates-pkg         25
`))
	if err != nil {
		t.Fatal(err)
	}
	shape := func(edit func(s *Shape)) Shape {
		s := Shape{Items: map[string]map[string]int{
			RuleSQLOutsideStore: {"services/a/old.go": 2},
			RuleServicesFile:    {"services/a/big.go": 600, "services/a/store.go": 480},
			RuleRepositoryFile:  {"services/a/big.go": 600},
			RuleStoreMethods:    {"services/a.Store": 30, "services/b.Store": 12},
			RuleOutboxInsert:    {},
			RuleStoreRegistry:   {},
			RuleDocLines:        {"docs/long.md": 950, "docs/api.md": 834, "README.md": 108},
		}, Counts: map[string]int{RulePkgFloors: 12, RuleDupServices: 57, RuleDupPkg: 20}}
		if edit != nil {
			edit(&s)
		}
		return s
	}
	for _, c := range []struct {
		name     string
		edit     func(s *Shape)
		problems []string // a part of each problem, in order
		notes    []string
	}{
		{name: "today's shape", notes: []string{"services/a/gone.go meets the target"}},
		{name: "SQL in a new file", edit: func(s *Shape) { s.Items[RuleSQLOutsideStore]["services/b/plans.go"] = 1 },
			problems: []string{"sql-outside-store: services/b/plans.go has 1"}, notes: []string{"gone.go"}},
		{name: "a known file grows", edit: func(s *Shape) { s.Items[RuleServicesFile]["services/a/big.go"] = 601 },
			problems: []string{"services/a/big.go has 601, more than the 600"}, notes: []string{"gone.go"}},
		{name: "a new large Store", edit: func(s *Shape) { s.Items[RuleStoreMethods]["services/b.Store"] = 21 },
			problems: []string{"store-methods: services/b.Store has 21"}, notes: []string{"gone.go"}},
		{name: "an outbox insert", edit: func(s *Shape) { s.Items[RuleOutboxInsert]["services/a/roll.go"] = 1 },
			problems: []string{"outbox-insert: services/a/roll.go"}, notes: []string{"gone.go"}},
		{name: "a store given the registry", edit: func(s *Shape) { s.Items[RuleStoreRegistry]["services/a/store.go"] = 1 },
			problems: []string{"store-registry: services/a/store.go has 1"}, notes: []string{"gone.go"}},
		{name: "a doc over the lines", edit: func(s *Shape) { s.Items[RuleDocLines]["docs/performance.md"] = 988 },
			problems: []string{"doc-lines: docs/performance.md has 988, the target is 900"}, notes: []string{"gone.go"}},
		{name: "the README over the lines", edit: func(s *Shape) { s.Items[RuleDocLines]["README.md"] = 901 },
			problems: []string{"doc-lines: README.md has 901"}, notes: []string{"gone.go"}},
		{name: "a known long doc grows", edit: func(s *Shape) { s.Items[RuleDocLines]["docs/long.md"] = 951 },
			problems: []string{"docs/long.md has 951, more than the 950"}, notes: []string{"gone.go"}},
		{name: "a known long doc condensed", edit: func(s *Shape) { s.Items[RuleDocLines]["docs/long.md"] = 700 },
			notes: []string{"gone.go", "doc-lines: docs/long.md meets the target now"}},
		{name: "a floor more", edit: func(s *Shape) { s.Counts[RulePkgFloors] = 13 },
			problems: []string{"pkg-floors: 13, more than the 12"}, notes: []string{"gone.go"}},
		{name: "duplicates over the target", edit: func(s *Shape) { s.Counts[RuleDupPkg] = 26 },
			problems: []string{"duplicates-pkg: 26, more than the 25"}, notes: []string{"gone.go"}},
		{name: "duplicates fewer", edit: func(s *Shape) { s.Counts[RuleDupServices] = 40 },
			notes: []string{"gone.go", "duplicates-services: 40 now; lower its exception"}},
		{name: "no duplicates command", edit: func(s *Shape) { s.Counts[RuleDupServices], s.Counts[RuleDupPkg] = -1, -1 },
			notes: []string{"gone.go", "duplicates-services: not counted", "duplicates-pkg: not counted"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			problems, notes := Check(shape(c.edit), limits)
			match := func(what string, got, want []string) {
				if len(got) != len(want) || slices.ContainsFunc(want, func(w string) bool {
					return !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) })
				}) {
					t.Errorf("%s %q, want ones saying %q", what, got, want)
				}
			}
			match("problems", problems, c.problems)
			match("notes", notes, c.notes)
		})
	}
}

// The shape is measured from the files: SQL outside a store.go, the lines
// and a Store's methods.
func TestMeasureShape(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("services/a/store.go", "package a\n\ntype Store struct{}\n\nfunc (s *Store) One() string { return `SELECT 1 FROM t` }\nfunc (Store) Two() {}\n")
	write("services/a/roll.go", "package a\n\nconst q = \"INSERT INTO outbox (id) VALUES ($1)\"\n")
	write("services/a/roll_test.go", "package a\n\nconst t = \"DELETE FROM x\"\n")
	write("pkg/x/x.go", "package x\n\nconst q = \"SELECT 1 FROM t\"\n")
	write("services/b/store.go", "package b\n\nimport \"refs\"\n\ntype Store struct{ r *refs.Registry }\n\nfunc NewStore(k refs.Kinds, r *refs.Registry) {}\n")
	write("services/b/service.go", "package b\n\nimport \"refs\"\n\ntype service struct{ r *refs.Registry }\n")
	s, err := MeasureShape(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Items[RuleSQLOutsideStore]; len(got) != 1 || got["services/a/roll.go"] != 1 {
		t.Errorf("SQL outside a store: %v, want roll.go's one (store.go, tests and pkg/ are not counted)", got)
	}
	if got := s.Items[RuleOutboxInsert]; got["services/a/roll.go"] != 1 {
		t.Errorf("outbox inserts: %v", got)
	}
	if got := s.Items[RuleStoreMethods]["services/a.Store"]; got != 2 {
		t.Errorf("services/a.Store: %d methods, want 2", got)
	}
	if got := s.Items[RuleRepositoryFile]["pkg/x/x.go"]; got != 3 {
		t.Errorf("pkg/x/x.go: %d lines, want 3", got)
	}
	if got := s.Items[RuleStoreRegistry]; len(got) != 1 || got["services/b/store.go"] != 2 {
		t.Errorf("refs.Registry in stores: %v, want store.go's two (refs.Kinds and a service's registry are not counted)", got)
	}
	if _, ok := s.Items[RuleServicesFile]["pkg/x/x.go"]; ok {
		t.Error("a file of pkg/ counted as one of services/")
	}
}

// The docs' lines are counted for every .md under docs/ (its folders too)
// and the README at the root, and for nothing else.
func TestMeasureDocLines(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  map[string]int
	}{
		{name: "a doc and the README",
			files: map[string]string{"docs/api.md": "# API\n\ntext\n", "README.md": "# Registry\n"},
			want:  map[string]int{"docs/api.md": 3, "README.md": 1}},
		{name: "a doc in a folder of docs/",
			files: map[string]string{"docs/runbooks/restore.md": "a\nb\n"},
			want:  map[string]int{"docs/runbooks/restore.md": 2}},
		{name: "a last line without its newline is not a line, as wc -l counts",
			files: map[string]string{"docs/short.md": "a\nb"},
			want:  map[string]int{"docs/short.md": 1}},
		{name: "not Markdown, or not a doc",
			files: map[string]string{"docs/chart.svg": "<svg>\n</svg>\n", "charts/README.md": "# Charts\n", "services/a/NOTES.md": "x\n"},
			want:  map[string]int{}},
		{name: "no docs folder", files: map[string]string{"pkg/x/x.go": "package x\n"}, want: map[string]int{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, src := range c.files {
				path := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := MeasureShape(root)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Items[RuleDocLines]; !maps.Equal(got, c.want) {
				t.Errorf("doc lines %v, want %v", got, c.want)
			}
		})
	}
}
