package layers

// The rules between the registry's Go modules, and the build tags the
// import rules are checked under.

import (
	"bufio"
	"fmt"
	"go/build/constraint"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// Module is what a go.mod says that the rules look at.
type Module struct {
	Path     string   // "github.com/assetregistry/registry/pkg"
	Requires []string // module paths, indirect ones included
	Replaces []string // the module paths it replaces
}

// ReadModules reads the go.mod of each of dirs (relative to root).
func ReadModules(root string, dirs []string) ([]Module, error) {
	var mods []Module
	for _, dir := range dirs {
		file := filepath.Join(root, dir, "go.mod")
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		f, err := modfile.ParseLax(file, data, nil)
		if err != nil {
			return nil, err
		}
		m := Module{Path: f.Module.Mod.Path}
		for _, r := range f.Require {
			m.Requires = append(m.Requires, r.Mod.Path)
		}
		for _, r := range f.Replace {
			m.Replaces = append(m.Replaces, r.Old.Path)
		}
		mods = append(mods, m)
	}
	return mods, nil
}

// CheckModules returns every rule the modules break: a replace of a
// module the module does not require (dead: it only misleads), and
// registry modules that require each other, directly or through others
// (the modules form a DAG, so each can be understood, tested and released
// after what it builds on).
func CheckModules(mods []Module) []string {
	var problems []string
	ours := map[string][]string{} // registry module → the registry modules it requires
	for _, m := range mods {
		for _, r := range m.Replaces {
			if !slices.Contains(m.Requires, r) {
				problems = append(problems, fmt.Sprintf("%s replaces %s, which it does not require", m.Path, r))
			}
		}
		for _, r := range m.Requires {
			if strings.HasPrefix(r, ModulePath) {
				ours[m.Path] = append(ours[m.Path], r)
			}
		}
	}
	// A cycle is found from its first module in path order, once.
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(m string)
	visit = func(m string) {
		state[m] = open
		stack = append(stack, m)
		for _, r := range ours[m] {
			switch state[r] {
			case open:
				cycle := append(slices.Clone(stack[slices.Index(stack, r):]), r)
				problems = append(problems, "modules require each other: "+strings.Join(cycle, " → "))
			case unseen:
				visit(r)
			}
		}
		stack = stack[:len(stack)-1]
		state[m] = done
	}
	paths := make([]string, 0, len(ours))
	for m := range ours {
		paths = append(paths, m)
	}
	slices.Sort(paths)
	for _, m := range paths {
		if state[m] == unseen {
			visit(m)
		}
	}
	return problems
}

// toolchainTags are the tags the go command sets by itself; a build
// constraint naming only these needs no -tags to be checked.
func toolchainTag(tag string) bool {
	return tag == "ignore" || tag == "cgo" || tag == "gc" || tag == "gccgo" || tag == "unix" ||
		strings.HasPrefix(tag, "go1.") || knownOS[tag] || knownArch[tag]
}

var knownOS = map[string]bool{"aix": true, "android": true, "darwin": true, "dragonfly": true, "freebsd": true,
	"hurd": true, "illumos": true, "ios": true, "js": true, "linux": true, "nacl": true, "netbsd": true,
	"openbsd": true, "plan9": true, "solaris": true, "wasip1": true, "windows": true, "zos": true}

var knownArch = map[string]bool{"386": true, "amd64": true, "arm": true, "arm64": true, "loong64": true,
	"mips": true, "mipsle": true, "mips64": true, "mips64le": true, "ppc64": true, "ppc64le": true,
	"riscv64": true, "s390x": true, "wasm": true}

// TagsOf are the tags a //go:build line names that the toolchain does
// not set by itself.
func TagsOf(line string) ([]string, error) {
	expr, err := constraint.Parse(line)
	if err != nil {
		return nil, err
	}
	var tags []string
	expr.Eval(func(tag string) bool {
		if !toolchainTag(tag) && !slices.Contains(tags, tag) {
			tags = append(tags, tag)
		}
		return true
	})
	slices.Sort(tags)
	return tags, nil
}

// BuildTags are the tags the repository's Go files under root name in
// their //go:build lines (the fault suite's "faults"), for the import
// rules to see every file: a file behind a tag go list is not given is
// not listed, and its imports escape the rules.
func BuildTags(root string) ([]string, error) {
	var tags []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "build" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		lines := bufio.NewScanner(f)
		for lines.Scan() {
			line := strings.TrimSpace(lines.Text())
			if strings.HasPrefix(line, "package ") {
				break // constraints stand before the package clause
			}
			if !constraint.IsGoBuild(line) {
				continue
			}
			found, err := TagsOf(line)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			tags = append(tags, found...)
		}
		return lines.Err()
	})
	slices.Sort(tags)
	return slices.Compact(tags), err
}
