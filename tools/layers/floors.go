package layers

// Floors is the height of the kit's layering: the number of packages on
// its longest chain of imports (a package that imports nothing of pkg/ is
// the ground floor, one that imports it the first, and so on). order is a
// DAG (KitOrder is; a test says so).
func Floors(order map[string][]string) int {
	floor := map[string]int{}
	var of func(p string, seen map[string]bool) int
	of = func(p string, seen map[string]bool) int {
		if f, ok := floor[p]; ok {
			return f
		}
		if seen[p] { // a cycle: counted once, the DAG test reports it
			return 0
		}
		seen[p] = true
		f := 1
		for _, dep := range order[p] {
			f = max(f, of(dep, seen)+1)
		}
		floor[p] = f
		return f
	}
	highest := 0
	for p := range order {
		highest = max(highest, of(p, map[string]bool{}))
	}
	return highest
}

// Arrows is the number of imports order allows between kit packages.
func Arrows(order map[string][]string) int {
	n := 0
	for _, deps := range order {
		n += len(deps)
	}
	return n
}
