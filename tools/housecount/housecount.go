// Package housecount measures how the registry's code is laid out, so a
// change to its structure can say before and after what it changed, by
// numbers anyone can count again (`go run ./tools/cmd/housecount`):
//
//   - context keys: the distinct types used as a key of context.WithValue
//     outside tools/ (tests excluded), and the WithValue calls themselves;
//   - peer calls in stores: calls, in a service's store files (store*.go),
//     of the reference protocol's operations (every method of
//     *refs.Registry but the declarations Owns, PointsAt and Lists), which
//     ask other services;
//   - the walk of POST /actions: the registry's own files and packages that
//     the call graph (interface and function-value calls resolved by VTA,
//     over the actions service and pkg/ alone, never through a library's
//     code) reaches from the actions
//     service's CreateAction method: what a reader follows below the
//     transport and the endpoint, which every route shares;
//   - duplicate pairs in services/ and pkg/, as the `duplicates` command
//     counts them (when it is installed) with the migrations left out;
//   - the largest file and the longest function (non-test Go code).
package housecount

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/callgraph/cha"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

// ModulePath is the registry's module path prefix.
const ModulePath = "github.com/assetregistry/registry/"

// Counts are the figures of one tree.
type Counts struct {
	ContextKeys     []string // "pkg/store.txKey"
	WithValueCalls  int
	StorePeerCalls  map[string]int // file → calls
	WalkFiles       []string       // repository-relative
	WalkPackages    []string
	Duplicates      map[string]int // folder → pairs; -1 when not counted
	LargestFile     string
	LargestFileSize int
	LongestFunc     string
	LongestFuncSize int
}

// skipped are folders that hold no code of the registry's own.
func skipped(rel string) bool {
	base := filepath.Base(rel)
	return base == ".git" || base == ".local" || base == "bin" || base == "build" || base == "node_modules" || base == "testdata"
}

// goFiles lists the repository's non-test Go files (relative paths).
func goFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && skipped(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// Syntax counts what the files' syntax alone tells: context keys,
// WithValue calls, the largest file and the longest function.
func Syntax(root string, c *Counts) error {
	files, err := goFiles(root)
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	fset := token.NewFileSet()
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		if lines := strings.Count(string(src), "\n"); lines > c.LargestFileSize {
			c.LargestFile, c.LargestFileSize = rel, lines
		}
		f, err := parser.ParseFile(fset, rel, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Body == nil {
					break
				}
				size := fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
				if size > c.LongestFuncSize {
					name := n.Name.Name
					if n.Recv != nil && len(n.Recv.List) == 1 {
						name = recvName(n.Recv.List[0].Type) + "." + name
					}
					c.LongestFunc, c.LongestFuncSize = rel+": "+name, size
				}
			case *ast.CallExpr:
				if strings.HasPrefix(rel, "tools/") || !isWithValue(n) || len(n.Args) != 3 {
					break
				}
				c.WithValueCalls++
				if key := keyType(n.Args[1]); key != "" {
					keys[filepath.ToSlash(filepath.Dir(rel))+"."+key] = true
				}
			}
			return true
		})
	}
	for k := range keys {
		c.ContextKeys = append(c.ContextKeys, k)
	}
	slices.Sort(c.ContextKeys)
	return nil
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

func isWithValue(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "WithValue" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "context"
}

// keyType names the key of a WithValue call when it is a composite
// literal of a type of the file's own package (the idiom: key{}), or a
// qualified one (oauth2.HTTPClient is a library's key, not ours).
func keyType(e ast.Expr) string {
	if lit, ok := e.(*ast.CompositeLit); ok {
		if id, ok := lit.Type.(*ast.Ident); ok {
			return id.Name
		}
	}
	return ""
}

// storeFile reports whether a file is a service's store.
func storeFile(rel string) bool {
	return strings.HasPrefix(rel, "services/") && strings.HasPrefix(filepath.Base(rel), "store") &&
		!strings.HasSuffix(rel, "_test.go")
}

// declarations are the registry's methods that only declare what a
// service owns or points at: they ask nobody.
var declarations = []string{"Owns", "PointsAt", "Lists"}

// Typed loads the services with their types, counts the peer calls in
// their stores and walks POST /actions.
func Typed(root string, c *Counts) error {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps |
			packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo,
		Dir:   root,
		Tests: false,
	}
	// The services and the kit they build on, with syntax; the rest
	// (third parties) from their types alone.
	patterns := []string{"./pkg/..."}
	modules, err := filepath.Glob(filepath.Join(root, "services", "*", "go.mod"))
	if err != nil {
		return err
	}
	for _, m := range modules {
		patterns = append(patterns, "./"+filepath.ToSlash(relPath(root, filepath.Dir(m)))+"/...")
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return err
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		return fmt.Errorf("%d errors loading the packages", n)
	}
	c.StorePeerCalls = map[string]int{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if !strings.HasPrefix(p.PkgPath, ModulePath+"services/") {
			return
		}
		for _, f := range p.Syntax {
			rel := relPath(root, p.Fset.Position(f.Pos()).Filename)
			if !storeFile(rel) {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				fn, ok := p.TypesInfo.Uses[sel.Sel].(*types.Func)
				if !ok || fn.Pkg() == nil || fn.Pkg().Path() != ModulePath+"pkg/refs" || slices.Contains(declarations, fn.Name()) {
					return true
				}
				if recv := fn.Signature().Recv(); recv != nil && strings.HasSuffix(recv.Type().String(), "refs.Registry") {
					c.StorePeerCalls[rel]++
				}
				return true
			})
		}
	})
	// The walk sees only the actions service and the kit: a call through
	// an interface can then only land in code the service links.
	var walked []*packages.Package
	for _, p := range pkgs {
		if p.PkgPath == ModulePath+"services/actions" || strings.HasPrefix(p.PkgPath, ModulePath+"pkg/") {
			walked = append(walked, p)
		}
	}
	return walkCreateAction(root, walked, c)
}

func relPath(root, path string) string {
	abs, _ := filepath.Abs(root)
	rel, err := filepath.Rel(abs, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}

// walkCreateAction follows the call graph from POST /actions' service
// method, endpoint and decoder.
func walkCreateAction(root string, pkgs []*packages.Package, c *Counts) error {
	prog, ssaPkgs := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	var actions *ssa.Package
	for _, p := range ssaPkgs {
		if p != nil && p.Pkg.Path() == ModulePath+"services/actions" {
			actions = p
		}
	}
	if actions == nil {
		return fmt.Errorf("services/actions is not loaded")
	}
	all := ssautil.AllFunctions(prog)
	graph := vta.CallGraph(all, cha.CallGraph(prog))
	graph.DeleteSyntheticNodes()
	var roots []*ssa.Function
	for fn := range all {
		if fn.Pkg != actions {
			continue
		}
		name := fn.RelString(actions.Pkg)
		if name == "(*service).CreateAction" {
			roots = append(roots, fn)
		}
	}
	if len(roots) == 0 {
		return fmt.Errorf("no (*service).CreateAction in services/actions")
	}
	seen := map[*ssa.Function]bool{}
	queue := roots
	for len(queue) > 0 {
		fn := queue[0]
		queue = queue[1:]
		if seen[fn] {
			continue
		}
		seen[fn] = true
		node := graph.Nodes[fn]
		if node == nil {
			continue
		}
		for _, e := range node.Out {
			// Only the registry's own code is walked: a call into a
			// library ends there (what the library calls back is the
			// library's business, and through net/http it would reach
			// every handler).
			if callee := e.Callee.Func; !seen[callee] && own(callee) {
				queue = append(queue, callee)
			}
		}
	}
	files, pkgsSeen := map[string]bool{}, map[string]bool{}
	for fn := range seen {
		origin := fn
		if o := fn.Origin(); o != nil {
			origin = o
		}
		pos := prog.Fset.Position(origin.Pos())
		if !pos.IsValid() {
			continue
		}
		files[relPath(root, pos.Filename)] = true
		pkgsSeen[strings.TrimPrefix(origin.Pkg.Pkg.Path(), ModulePath)] = true
	}
	for f := range files {
		c.WalkFiles = append(c.WalkFiles, f)
	}
	for p := range pkgsSeen {
		c.WalkPackages = append(c.WalkPackages, p)
	}
	slices.Sort(c.WalkFiles)
	slices.Sort(c.WalkPackages)
	return nil
}

// own reports whether fn is the registry's code.
func own(fn *ssa.Function) bool {
	if o := fn.Origin(); o != nil {
		fn = o
	}
	return fn.Pkg != nil && strings.HasPrefix(fn.Pkg.Pkg.Path(), ModulePath)
}

var pairsLine = regexp.MustCompile(`(?m)^(\d+) pairs?\b`)

// Duplicates counts the pairs `duplicates` finds in each folder, applied
// migrations left out (Migration); -1 where the command is not installed
// or did not finish.
func Duplicates(root string, c *Counts, folders ...string) {
	c.Duplicates = duplicatePairs(root, nil, folders)
}

// DuplicatesOutsideImports is Duplicates with the lines inside Go's
// grouped imports (`import ( … )`) blanked as well. `duplicates` passes
// over import lines, but inside a group each line is a bare string, which
// it reads as code: two files that import the same packages make a pair,
// and an import list beside a few common lines lengthens a run into one.
// A figure to read beside the rule's, which counts what the command finds.
func DuplicatesOutsideImports(root string, folders ...string) map[string]int {
	return duplicatePairs(root, blankGoImports, folders)
}

func duplicatePairs(root string, edit func(rel string, data []byte) []byte, folders []string) map[string]int {
	pairs := map[string]int{}
	for _, folder := range folders {
		pairs[folder] = -1
		tree, err := withoutMigrations(filepath.Join(root, folder), edit)
		if err != nil {
			continue
		}
		out, err := exec.Command("duplicates", "--repo", tree, "--most", "1", "--seconds", "120").Output()
		os.RemoveAll(tree)
		if err != nil || strings.Contains(string(out), "incomplete:") {
			continue
		}
		if strings.HasPrefix(string(out), "no duplicates") {
			pairs[folder] = 0
			continue
		}
		if m := pairsLine.FindStringSubmatch(string(out)); m != nil {
			pairs[folder], _ = strconv.Atoi(m[1])
		}
	}
	return pairs
}

// blankGoImports empties the lines of a .go file's grouped imports,
// keeping the line count (the pairs' line numbers stay the file's).
func blankGoImports(rel string, data []byte) []byte {
	if !strings.HasSuffix(rel, ".go") {
		return data
	}
	lines := strings.Split(string(data), "\n")
	inImports := false
	for i, line := range lines {
		switch trimmed := strings.TrimSpace(line); {
		case trimmed == "import (":
			inImports = true
		case inImports && trimmed == ")":
			inImports = false
		case inImports:
			lines[i] = ""
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// Migration reports whether rel (slash-separated) is a migration file: an
// .sql file in a folder named migrations. An applied migration is history,
// never edited, so what it repeats cannot be folded and is not counted.
func Migration(rel string) bool {
	return strings.HasSuffix(rel, ".sql") && path.Base(path.Dir(rel)) == "migrations"
}

// withoutMigrations copies the files of dir that `duplicates` would read
// there (in a git checkout those git tracks and the untracked ones it does
// not ignore; elsewhere every file) but the migrations into a new
// temporary folder, each through edit when it is not nil, and returns it.
func withoutMigrations(dir string, edit func(rel string, data []byte) []byte) (string, error) {
	var files []string
	out, err := exec.Command("git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err == nil {
		for f := range strings.SplitSeq(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
	} else {
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	tree, err := os.MkdirTemp("", "housecount-")
	if err != nil {
		return "", err
	}
	for _, f := range files {
		from := filepath.Join(dir, filepath.FromSlash(f))
		if info, err := os.Lstat(from); Migration(f) || err != nil || !info.Mode().IsRegular() {
			continue // a migration; deleted in the working tree; a link (not read either)
		}
		data, err := os.ReadFile(from)
		if err == nil && edit != nil {
			data = edit(f, data)
		}
		if err == nil {
			to := filepath.Join(tree, filepath.FromSlash(f))
			if err = os.MkdirAll(filepath.Dir(to), 0o755); err == nil {
				err = os.WriteFile(to, data, 0o644)
			}
		}
		if err != nil {
			os.RemoveAll(tree)
			return "", err
		}
	}
	return tree, nil
}
