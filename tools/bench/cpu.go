package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// What the run's processes spend of the CPU: whether the machine is quiet
// between rows, and what a request costs each process.

// Quiet is the machine between rows: the registry's processes and the
// datastores together using under quietCores more CPU than the idle stack
// does (Env.idleCores, measured before the first row) over quietWindow.
// The idle stack is not nothing (each process's jobs tick every second or
// so: 0.05 cores for make run's stack), and the kernel counts CPU in 10 ms
// ticks, so a threshold of 0.05 cores over 250 ms, one tick, waited up to
// 27 s before rows whose predecessors had left nothing behind.
const (
	quietCores  = 0.1
	quietWindow = 500 * time.Millisecond
	quietLimit  = 60 * time.Second
	// idleWindows is how many windows the idle stack is measured over, on
	// average: the kernel charges a process's CPU a tick at a time, so one
	// window of an idle stack may read 0 and the next 0.15 cores.
	idleWindows = 6
)

// waitQuiet waits until the work earlier rows left behind has ended (a
// batch row leaves tens of thousands of events to relay and store), so
// that a row measures its own work and not the catch-up of the one before
// it, at most quietLimit. It returns how long it waited and, when it
// waited, the processes busiest in its last window.
func (e *Env) waitQuiet(ctx context.Context) (time.Duration, string) {
	begin := time.Now()
	var busiest string
	for time.Since(begin) < quietLimit && ctx.Err() == nil {
		busy, used := e.busyOver(quietWindow)
		if busy < e.idleCores+quietCores {
			break
		}
		busiest = busiestOf(used)
	}
	return time.Since(begin), busiest
}

// measureIdle sets Env.idleCores: the CPU the stack uses doing nothing,
// over idleWindows windows.
func (e *Env) measureIdle() {
	e.idleCores, _ = e.busyOver(idleWindows * quietWindow)
}

// busyOver is the cores the run's processes (the load generator's left
// out) used over window, in all and by process.
func (e *Env) busyOver(window time.Duration) (float64, map[string]float64) {
	before := e.cpuNow()
	time.Sleep(window)
	used := map[string]float64{}
	var busy float64
	for name, secs := range e.cpuNow() {
		if name != "loadgen" {
			used[name] = (secs - before[name]) / window.Seconds()
			busy += used[name]
		}
	}
	return busy, used
}

// busiestOf names the three processes that used the most cores.
func busiestOf(used map[string]float64) string {
	names := slices.Collect(maps.Keys(used))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(used[b], used[a]) })
	var parts []string
	for _, n := range names[:min(3, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %.2f", n, used[n]))
	}
	return strings.Join(parts, ", ")
}

// cpuDuring snapshots the CPU time of every process the run knows of (the
// datastores and this one, which generates the load, included) at from and
// again d later; the returned function waits for the second snapshot and
// gives the difference in seconds.
func (e *Env) cpuDuring(from time.Time, d time.Duration) func() map[string]float64 {
	done := make(chan map[string]float64, 1)
	go func() {
		time.Sleep(time.Until(from))
		before := e.cpuNow()
		time.Sleep(d)
		after := e.cpuNow()
		for name, s := range after {
			after[name] = s - before[name]
		}
		done <- after
	}()
	return func() map[string]float64 { return <-done }
}

// cpuNow is the CPU seconds so far of every process the run knows of, by
// name: the datastores', the registry's and this one's.
func (e *Env) cpuNow() map[string]float64 { return e.newCPUMeter().seconds() }

// cpuMeter reads the CPU time of the processes cpuNow reads, as they were
// when it was made, without looking for them again: finding the
// datastores' processes walks /proc, 3 ms of CPU, and a pair measured call
// by call reads at every change of op, about once a call, which took a
// fifth of a core beside calls of 15 ms on a 2-core machine. A pair's rows
// run warm pools, so no backend joins or leaves while they are measured.
type cpuMeter struct{ processes []meteredProcess }

type meteredProcess struct {
	pid     int
	name    string
	seconds float64 // read last
}

func (e *Env) newCPUMeter() *cpuMeter {
	m := &cpuMeter{}
	e.eachDatastoreProcess(func(pid int, name string, cpu float64) {
		m.processes = append(m.processes, meteredProcess{pid: pid, name: name, seconds: cpu})
	})
	for name, p := range e.processes {
		m.processes = append(m.processes, meteredProcess{pid: p.pid, name: name, seconds: cpuSeconds(p.pid)})
	}
	m.processes = append(m.processes, meteredProcess{pid: os.Getpid(), name: "loadgen", seconds: cpuSeconds(os.Getpid())})
	return m
}

// now reads the processes again and gives their seconds. A process's CPU
// time only grows, so a reading below the last (0: the process ended) is
// passed over, and a difference of two readings is never negative.
func (m *cpuMeter) now() map[string]float64 {
	for i := range m.processes {
		p := &m.processes[i]
		p.seconds = max(p.seconds, cpuSeconds(p.pid))
	}
	return m.seconds()
}

// seconds is the CPU seconds read last, summed by process name.
func (m *cpuMeter) seconds() map[string]float64 {
	out := make(map[string]float64, len(m.processes))
	for _, p := range m.processes {
		out[p.name] += p.seconds
	}
	return out
}

// perRequest divides each process's CPU seconds by the requests, in ms,
// leaving out the processes that spent under 1 % of the whole.
func perRequest(cpu map[string]float64, requests int) map[string]float64 {
	if requests == 0 {
		return nil
	}
	var total float64
	for _, secs := range cpu {
		total += secs
	}
	out := map[string]float64{}
	for name, secs := range cpu {
		if secs >= total/100 {
			out[name] = secs * 1000 / float64(requests)
		}
	}
	return out
}
