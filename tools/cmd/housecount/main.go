// Command housecount prints the figures of the registry's layout that a
// change to its structure reports before and after (tools/housecount says
// how each is counted). Run it from the repository root:
//
//	go run ./tools/cmd/housecount          # the figures
//	go run ./tools/cmd/housecount -v       # and what each figure counted
//	go run ./tools/cmd/housecount -check   # the shape's figures held to tools/housecount/limits.txt (make lint)
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/assetregistry/registry/tools/housecount"
	"github.com/assetregistry/registry/tools/layers"
)

func main() {
	verbose := flag.Bool("v", false, "list what each figure counted")
	root := flag.String("root", ".", "the repository's root")
	check := flag.Bool("check", false, "only the shape's figures, held to tools/housecount/limits.txt; fail on a new violation")
	flag.Parse()
	limits, err := housecount.ParseLimits(housecount.LimitsFile)
	if err != nil {
		fail(err)
	}
	shape, err := housecount.MeasureShape(*root)
	if err != nil {
		fail(err)
	}
	problems, notes := housecount.Check(shape, limits)
	if *check {
		for _, n := range notes {
			fmt.Fprintln(os.Stderr, "housecount: note:", n)
		}
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "housecount:", p)
		}
		if len(problems) > 0 {
			os.Exit(1)
		}
		return
	}
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
		row("duplicate pairs in "+folder+"/ (migrations left out)", n)
	}
	outside := housecount.DuplicatesOutsideImports(*root, "services", "pkg")
	for _, folder := range slices.Sorted(maps.Keys(outside)) {
		if outside[folder] >= 0 {
			row("duplicate pairs in "+folder+"/ (migrations and Go import groups left out)", outside[folder])
		}
	}
	row("largest file", fmt.Sprintf("%s, %d lines", c.LargestFile, c.LargestFileSize))
	row("longest function", fmt.Sprintf("%s, %d lines", c.LongestFunc, c.LongestFuncSize))
	printShape(shape, limits, *verbose)
	for _, n := range notes {
		fmt.Println("note:", n)
	}
	for _, p := range problems {
		fmt.Println("over its limit:", p)
	}
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

// printShape prints the figures limits.txt holds, beside their targets.
func printShape(s housecount.Shape, limits map[string]housecount.Limit, verbose bool) {
	fmt.Println("\n| rule (tools/housecount/limits.txt) | figure | target |")
	fmt.Println("|---|---|---|")
	over := func(rule string) map[string]int {
		out := map[string]int{}
		for item, v := range s.Items[rule] {
			if v > limits[rule].Target {
				out[item] = v
			}
		}
		return out
	}
	largest := func(rule string) string {
		best, at := 0, ""
		for item, v := range s.Items[rule] {
			if v > best || v == best && item < at {
				best, at = v, item
			}
		}
		return fmt.Sprintf("%d (%s)", best, at)
	}
	fmt.Printf("| files with SQL outside a store.go under services/ | %d | %d |\n", len(over(housecount.RuleSQLOutsideStore)), limits[housecount.RuleSQLOutsideStore].Target)
	fmt.Printf("| largest non-test file in services/, lines | %s | %d |\n", largest(housecount.RuleServicesFile), limits[housecount.RuleServicesFile].Target)
	fmt.Printf("| largest non-test file in the repository, lines | %s | %d |\n", largest(housecount.RuleRepositoryFile), limits[housecount.RuleRepositoryFile].Target)
	fmt.Printf("| most methods on one Store in services/ | %s | %d |\n", largest(housecount.RuleStoreMethods), limits[housecount.RuleStoreMethods].Target)
	fmt.Printf("| files writing INSERT INTO outbox under services/ | %d | %d |\n", len(over(housecount.RuleOutboxInsert)), limits[housecount.RuleOutboxInsert].Target)
	fmt.Printf("| floors of pkg/ (tools/layers.KitOrder) | %d | %d |\n", s.Counts[housecount.RulePkgFloors], limits[housecount.RulePkgFloors].Target)
	fmt.Printf("| arrows between pkg/ packages (tools/layers.KitOrder) | %d | |\n", layers.Arrows(layers.KitOrder))
	for _, r := range []string{housecount.RuleDupServices, housecount.RuleDupPkg} {
		v := fmt.Sprint(s.Counts[r])
		if s.Counts[r] < 0 {
			v = "not counted (no `duplicates` on PATH)"
		}
		fmt.Printf("| %s | %s | %d |\n", r, v, limits[r].Target)
	}
	if !verbose {
		return
	}
	for _, rule := range []string{housecount.RuleSQLOutsideStore, housecount.RuleServicesFile, housecount.RuleRepositoryFile, housecount.RuleStoreMethods, housecount.RuleOutboxInsert} {
		items := over(rule)
		fmt.Printf("\n%s over %d:", rule, limits[rule].Target)
		for _, item := range slices.Sorted(maps.Keys(items)) {
			fmt.Printf(" %s=%d", item, items[item])
		}
		fmt.Println()
	}
}
