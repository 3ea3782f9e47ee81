package housecount

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/assetregistry/registry/tools/layers"
)

// LimitsFile holds the registry's shape as make lint checks it: one rule
// a line, its target and today's known exceptions (see its header).
//
//go:embed limits.txt
var LimitsFile []byte

// The rules of limits.txt.
const (
	RuleSQLOutsideStore = "sql-outside-store"     // SQL literals in a services/ file not named store.go
	RuleServicesFile    = "services-file-lines"   // lines of a non-test .go file under services/
	RuleRepositoryFile  = "repository-file-lines" // lines of any non-test .go file
	RuleStoreMethods    = "store-methods"         // methods of a type named Store in services/
	RuleOutboxInsert    = "outbox-insert"         // INSERT INTO outbox under services/
	RuleStoreRegistry   = "store-registry"        // refs.Registry named in a services/ store file
	RuleDocLines        = "doc-lines"             // lines of a .md file under docs/, and of README.md
	RulePkgFloors       = "pkg-floors"            // floors of pkg/ (layers.Floors)
	RuleDupServices     = "duplicates-services"   // pairs `duplicates` finds in services/
	RuleDupPkg          = "duplicates-pkg"        // pairs `duplicates` finds in pkg/
)

// itemRules count per item (a file, a Store); the others are one count.
var itemRules = []string{RuleSQLOutsideStore, RuleServicesFile, RuleRepositoryFile, RuleStoreMethods, RuleOutboxInsert, RuleStoreRegistry, RuleDocLines}

// Limit is one rule's line.
type Limit struct {
	Rule   string
	Target int
	// Except are the known exceptions: item → today's figure (-1: any)
	// for an item rule; "" → today's figure for a count rule.
	Except map[string]int
}

// ParseLimits reads a limits file.
func ParseLimits(raw []byte) (map[string]Limit, error) {
	limits := map[string]Limit{}
	// A line that begins with a space goes on with the line above's
	// exceptions.
	var lines []string
	var numbers []int
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && len(lines) > 0 {
			lines[len(lines)-1] += " " + line
			continue
		}
		lines, numbers = append(lines, line), append(numbers, n)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i, line := range lines {
		n := numbers[i]
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return nil, fmt.Errorf("limits line %d: a rule and a target", n)
		}
		target, err := strconv.Atoi(fields[1])
		if err != nil {
			return nil, fmt.Errorf("limits line %d: target %q: %w", n, fields[1], err)
		}
		l := Limit{Rule: fields[0], Target: target, Except: map[string]int{}}
		item := slices.Contains(itemRules, l.Rule)
		if _, dup := limits[l.Rule]; dup {
			return nil, fmt.Errorf("limits line %d: %s twice", n, l.Rule)
		}
		for _, e := range fields[2:] {
			if !item {
				v, err := strconv.Atoi(e)
				if err != nil || len(fields) > 3 {
					return nil, fmt.Errorf("limits line %d: %s takes one figure as its exception, not %q", n, l.Rule, strings.Join(fields[2:], " "))
				}
				l.Except[""] = v
				continue
			}
			name, figure, hasFigure := strings.Cut(e, "=")
			v := -1
			if hasFigure {
				if v, err = strconv.Atoi(figure); err != nil {
					return nil, fmt.Errorf("limits line %d: %q: %w", n, e, err)
				}
			}
			l.Except[name] = v
		}
		limits[l.Rule] = l
	}
	for _, r := range append(slices.Clone(itemRules), RulePkgFloors, RuleDupServices, RuleDupPkg) {
		if _, ok := limits[r]; !ok {
			return nil, fmt.Errorf("limits: no line for %s", r)
		}
	}
	return limits, nil
}

// Shape are the figures the limits hold.
type Shape struct {
	Items  map[string]map[string]int // rule → item → figure (only items with a figure above 0)
	Counts map[string]int            // rule → figure; -1: not counted
}

// sqlLiteral finds SQL in a string literal: a statement's keywords in
// capitals, as the registry writes its SQL (prose in capitals is rare).
var sqlLiteral = regexp.MustCompile(`(?s)^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\s|\bSELECT\s.+\sFROM\s|\bINSERT\s+INTO\s|\bUPDATE\s+\S+\s+SET\s|\bDELETE\s+FROM\s|\bON\s+CONFLICT\b|\b(CREATE|ALTER|DROP)\s+(TABLE|INDEX|SCHEMA)\b`)

// outboxInsert is an event written to the outbox by hand, beside the
// outbox package that owns the table.
var outboxInsert = regexp.MustCompile(`(?i)\bINSERT\s+INTO\s+("?\w+"?\.)?"?outbox"?[\s(]`)

// MeasureShape counts the figures of every rule in the tree at root;
// the duplicate pairs are -1 when the `duplicates` command is missing.
func MeasureShape(root string) (Shape, error) {
	s := Shape{Items: map[string]map[string]int{}, Counts: map[string]int{}}
	for _, r := range itemRules {
		s.Items[r] = map[string]int{}
	}
	files, err := goFiles(root)
	if err != nil {
		return s, err
	}
	fset := token.NewFileSet()
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return s, err
		}
		lines := strings.Count(string(src), "\n")
		inServices := strings.HasPrefix(rel, "services/")
		if lines > 0 {
			s.Items[RuleRepositoryFile][rel] = lines
			if inServices {
				s.Items[RuleServicesFile][rel] = lines
			}
		}
		if !inServices {
			continue
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			return s, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					break
				}
				text, err := strconv.Unquote(n.Value)
				if err != nil {
					break
				}
				if filepath.Base(rel) != "store.go" && sqlLiteral.MatchString(text) {
					s.Items[RuleSQLOutsideStore][rel]++
				}
				if outboxInsert.MatchString(text) {
					s.Items[RuleOutboxInsert][rel]++
				}
			case *ast.SelectorExpr:
				// A store is given what it declares of the reference
				// protocol (refs.Kinds), never the registry that asks
				// other services (pkg/refs, check.go).
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "refs" && n.Sel.Name == "Registry" && storeFile(rel) {
					s.Items[RuleStoreRegistry][rel]++
				}
			case *ast.FuncDecl:
				if n.Recv != nil && len(n.Recv.List) == 1 && recvName(n.Recv.List[0].Type) == "Store" {
					s.Items[RuleStoreMethods][filepath.ToSlash(filepath.Dir(rel))+".Store"]++
				}
			}
			return true
		})
	}
	if err := measureDocs(root, s.Items[RuleDocLines]); err != nil {
		return s, err
	}
	s.Counts[RulePkgFloors] = layers.Floors(layers.KitOrder)
	var c Counts
	Duplicates(root, &c, "services", "pkg")
	s.Counts[RuleDupServices], s.Counts[RuleDupPkg] = c.Duplicates["services"], c.Duplicates["pkg"]
	return s, nil
}

// Check holds the shape to the limits: problems are new violations (or
// known ones that got worse) and fail make lint; notes say what was not
// counted and which exceptions may go.
func Check(s Shape, limits map[string]Limit) (problems, notes []string) {
	for _, rule := range itemRules {
		l := limits[rule]
		figures := s.Items[rule]
		for _, item := range slices.Sorted(maps.Keys(figures)) {
			v := figures[item]
			if v <= l.Target {
				continue
			}
			known, excepted := l.Except[item]
			switch {
			case !excepted:
				problems = append(problems, fmt.Sprintf("%s: %s has %d, the target is %d (tools/housecount/limits.txt)", rule, item, v, l.Target))
			case known >= 0 && v > known:
				problems = append(problems, fmt.Sprintf("%s: %s has %d, more than the %d it is allowed until it is split (tools/housecount/limits.txt)", rule, item, v, known))
			}
		}
		for _, item := range slices.Sorted(maps.Keys(l.Except)) {
			if figures[item] <= l.Target {
				notes = append(notes, fmt.Sprintf("%s: %s meets the target now; delete its exception from tools/housecount/limits.txt", rule, item))
			}
		}
	}
	for _, rule := range []string{RulePkgFloors, RuleDupServices, RuleDupPkg} {
		l := limits[rule]
		v := s.Counts[rule]
		if v < 0 {
			notes = append(notes, fmt.Sprintf("%s: not counted (no `duplicates` command on PATH); skipped", rule))
			continue
		}
		allowed := l.Target
		if known, ok := l.Except[""]; ok {
			allowed = max(allowed, known)
		}
		switch {
		case v > allowed:
			problems = append(problems, fmt.Sprintf("%s: %d, more than the %d allowed (target %d; tools/housecount/limits.txt)", rule, v, allowed, l.Target))
		case v < allowed && allowed > l.Target:
			notes = append(notes, fmt.Sprintf("%s: %d now; lower its exception in tools/housecount/limits.txt to %d (target %d)", rule, v, max(v, l.Target), l.Target))
		}
	}
	return problems, notes
}

// measureDocs counts the lines of the docs a reader looks things up in:
// every .md file under docs/ and the README at the root. A reference that
// grows past a screenful of sections stops being read as one, so its
// history goes to bench/results.json and git, not into the doc.
func measureDocs(root string, lines map[string]int) error {
	docs := []string{}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		docs = append(docs, filepath.Join(root, "README.md"))
	}
	for _, path := range docs {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(src), "\n"); n > 0 {
			lines[filepath.ToSlash(rel)] = n
		}
	}
	return nil
}
