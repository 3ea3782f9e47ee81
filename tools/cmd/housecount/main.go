// Command housecount prints the figures of the registry's layout that a
// change to its structure reports before and after (tools/housecount says
// how each is counted). Run it from the repository root:
//
//	go run ./tools/cmd/housecount          # the figures
//	go run ./tools/cmd/housecount -v       # and what each figure counted
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/assetregistry/registry/tools/housecount"
)

func main() {
	verbose := flag.Bool("v", false, "list what each figure counted")
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	var c housecount.Counts
	if err := housecount.Syntax(*root, &c); err != nil {
		fail(err)
	}
	if err := housecount.Typed(*root, &c); err != nil {
		fail(err)
	}
	housecount.Duplicates(*root, &c, "services", "pkg")

	peerCalls := 0
	for _, n := range c.StorePeerCalls {
		peerCalls += n
	}
	row := func(name string, value any) { fmt.Printf("| %s | %v |\n", name, value) }
	fmt.Println("| figure | count |")
	fmt.Println("|---|---|")
	row("context keys outside tools/", len(c.ContextKeys))
	row("context.WithValue calls outside tools/", c.WithValueCalls)
	row("reference-protocol calls in services' stores", peerCalls)
	row("files a POST /actions walks", len(c.WalkFiles))
	row("packages a POST /actions walks", len(c.WalkPackages))
	for _, folder := range slices.Sorted(maps.Keys(c.Duplicates)) {
		n := fmt.Sprint(c.Duplicates[folder])
		if c.Duplicates[folder] < 0 {
			n = "not counted (no `duplicates` on PATH)"
		}
		row("duplicate pairs in "+folder+"/", n)
	}
	row("largest file", fmt.Sprintf("%s, %d lines", c.LargestFile, c.LargestFileSize))
	row("longest function", fmt.Sprintf("%s, %d lines", c.LongestFunc, c.LongestFuncSize))
	if !*verbose {
		return
	}
	fmt.Println("\ncontext keys:", strings.Join(c.ContextKeys, " "))
	fmt.Println("\nreference-protocol calls in stores:")
	for _, f := range slices.Sorted(maps.Keys(c.StorePeerCalls)) {
		fmt.Printf("  %s: %d\n", f, c.StorePeerCalls[f])
	}
	fmt.Println("\npackages a POST /actions walks:", strings.Join(c.WalkPackages, " "))
	fmt.Println("\nfiles a POST /actions walks:")
	for _, f := range c.WalkFiles {
		fmt.Println(" ", f)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "housecount:", err)
	os.Exit(1)
}
