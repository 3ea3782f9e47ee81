package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The soak's memory: what every process holds, less what its bounded
// caches say they hold, and its heap when asked.

// benchOnly are the processes start adds for the bench's rows, idle in a
// soak: not the registry's.
var benchOnly = map[string]bool{unlimitedGateway: true, "parties-events-off": true, "reference": true, "proxy": true}

// soakRSS is every registry process's resident set and every datastore's
// (summed over its processes without the shared memory each PostgreSQL
// backend maps again), in MiB.
func (e *Env) soakRSS() map[string]float64 {
	out := map[string]float64{}
	for name, p := range e.processes {
		if !benchOnly[name] {
			out[name] = rssMiB(p.pid)
		}
	}
	e.eachDatastoreProcess(func(pid int, name string, _ float64) {
		out[name] += privateRSSMiB(pid)
	})
	for name, v := range out {
		out[name] = math.Round(v*10) / 10
	}
	return out
}

// soakCacheMiB is what every registry process's bounded caches hold by
// their own count (registry_cache_bytes), in MiB; a process that reports
// none, or did not answer, is left out, and its whole resident set judged.
func (e *Env) soakCacheMiB(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	for name := range e.processes {
		if benchOnly[name] {
			continue
		}
		scrapeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		bytes, err := e.metricSum(scrapeCtx, name, "registry_cache_bytes")
		cancel()
		if err == nil && bytes > 0 {
			out[name] = math.Round(bytes/(1<<20)*10) / 10
		}
	}
	return out
}

// soakHeapProfiles saves every registry process's heap, after a garbage
// collection (so that inuse_space is what the process holds live now), as
// <dir>/<process>.<at>s.heap.pprof.
func (e *Env) soakHeapProfiles(ctx context.Context, dir string, atS float64) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	for name, p := range e.processes {
		if !benchOnly[name] {
			save(ctx, p.debugURL+"/debug/pprof/heap?gc=1", filepath.Join(dir, fmt.Sprintf("%s.%.0fs.heap.pprof", name, atS)))
		}
	}
}

// privateRSSMiB is a process's resident set without its shared memory.
func privateRSSMiB(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	var rss, shared float64
	for line := range strings.SplitSeq(string(raw), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kb); err == nil {
			rss = kb
		} else if _, err := fmt.Sscanf(line, "RssShmem: %f kB", &kb); err == nil {
			shared = kb
		}
	}
	return (rss - shared) / 1024
}
