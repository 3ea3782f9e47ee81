// Command deploygen writes the delivery files that follow from pkg/catalog
// and the chart value schema (see package deploygen): `make generate`.
// With -check it changes nothing and lists the files that are not current.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/assetregistry/registry/tools/deploygen"
)

func main() {
	root := flag.String("root", ".", "repository root")
	check := flag.Bool("check", false, "list the files that are not current and exit 1 if any")
	list := flag.Bool("list", false, "print the deployables' chart names, one a line, and exit")
	flag.Parse()
	if *list {
		for _, f := range deploygen.AllFacts() {
			fmt.Println(f.Name)
		}
		return
	}
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "deploygen:", err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	files, err := deploygen.Generate(root)
	if err != nil {
		return err
	}
	for path, data := range deploygen.Scaffold(root) {
		files[path] = data
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var stale []string
	for _, p := range paths {
		full := filepath.Join(root, p)
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, files[p]) {
			continue
		}
		stale = append(stale, p)
		if check {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", p)
	}
	if check && len(stale) > 0 {
		return fmt.Errorf("not current (run make generate): %v", stale)
	}
	return nil
}
