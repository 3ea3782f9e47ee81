//go:build testhooks

package main

import (
	"os"
	"runtime/pprof"
	"syscall"
)

// The test hooks, built only with -tags testhooks (tools/sdktest and the
// import row of make bench build the command so); the shipped command
// has none of them (testhooks_off.go).

// failpoint (REGISTRY_IMPORT_FAILPOINT), for the tests of the journal,
// kills the import with SIGKILL where a crash is worst: "answered" once a
// batch after the first has its answers and before its journal line,
// "torn" half-way through writing that line.
var failpoint = os.Getenv("REGISTRY_IMPORT_FAILPOINT")

func die() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// startProfiles writes the profiles make bench reads of an import:
// REGISTRY_CPU_PROFILE, the CPU profile of the run, and
// REGISTRY_HEAP_PROFILE, the heap at the end (what the run still holds,
// and what it allocated). The returned function ends them.
func startProfiles() (stop func()) {
	cpu := func() {}
	if path := os.Getenv("REGISTRY_CPU_PROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			cpu = func() { pprof.StopCPUProfile(); f.Close() }
		}
	}
	return func() {
		if path := os.Getenv("REGISTRY_HEAP_PROFILE"); path != "" {
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
		cpu()
	}
}
