//go:build faults

package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The leader rows: the replica that leads a schema's work is
// frozen with SIGSTOP (it keeps its connections open and says nothing,
// as a process in a long pause or on a node cut off does) beside a
// standby of the same service, under the load. PostgreSQL ends the
// silent leader's session after database.leader-silence (10 s), which
// releases the lock the standby waits for: the standby must lead within
// takeoverGoal. After SIGCONT the old leader must find its session gone
// and stand by, and once the standby stops it must lead again; no event
// may be lost, doubled or reordered meanwhile.

// takeoverGoal is how soon a standby must lead once the leader froze.
const takeoverGoal = 30 * time.Second

func TestFrozenLeaderIsReplaced(t *testing.T) {
	for i, lead := range []struct {
		service, lock string
		long          bool
	}{
		{service: "parties", lock: "outbox relay", long: true},
		// The events consumer stands for both in make test: its takeover
		// also proves that no event is lost, doubled or reordered.
		{service: "events", lock: "events consumer"},
	} {
		t.Run(lead.service+" "+lead.lock, func(t *testing.T) {
			if lead.long {
				long(t)
			}
			freezeLeader(t, 70+i, lead.service, lead.lock)
		})
	}
}

func freezeLeader(t *testing.T, i int, service, lock string) {
	standby := service + "-standby"
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := stack.StartCopy(ctx, service, standby); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stopStandby := func() {
		if !stopped {
			stopped = true
			must(t, stack.Processes[standby].Stop())
		}
	}
	t.Cleanup(stopStandby)
	leads := func(name string) bool { return leaderMetric(t, name, lock) == 1 }
	if !waitFor(30*time.Second, func() bool { return leads(service) && !leads(standby) }) {
		t.Fatalf("%s does not lead its %s beside its standby", service, lock)
	}

	c := newClient(t)
	l := newLoad(c, tag(i))
	stopLoad := l.run(loadClients, loadPause())
	time.Sleep(2 * time.Second)

	pid := stack.Processes[service].Pid()
	frozenAt := time.Now()
	must(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // never left stopped, whatever fails
	tookOver := waitFor(2*takeoverGoal, func() bool { return leads(standby) })
	takeover := time.Since(frozenAt)
	time.Sleep(2 * time.Second) // the standby leads for a while: the relay publishes, the consumer stores
	must(t, syscall.Kill(pid, syscall.SIGCONT))
	stoodBy := waitFor(takeoverGoal, func() bool { return !leads(service) && leads(standby) })
	// The woken relay's publishes of the round it was frozen in, refused by
	// the stream (the new leader fenced it out); 0 when it froze outside a
	// round's publish, when its next statement found its session gone.
	refused := metricValue(t, service, "outbox_stale_publishes_refused_total{", `schema="`)
	stopStandby()
	ledAgain := waitFor(takeoverGoal, func() bool { return leads(service) })
	recovered := waitRecovered(t, c, l.tag)
	calls := stopLoad()

	if !tookOver || takeover > takeoverGoal {
		t.Errorf("the standby led %s's %s %s after the leader froze (led: %v), want within %s", service, lock, takeover.Round(100*time.Millisecond), tookOver, takeoverGoal)
	}
	if !stoodBy {
		t.Errorf("%s, woken, did not give the %s up to the standby within %s", service, lock, takeoverGoal)
	}
	if !ledAgain {
		t.Errorf("%s did not lead its %s again within %s of its standby stopping", service, lock, takeoverGoal)
	}
	if t.Failed() {
		for _, name := range []string{service, standby} {
			logTail(t, name)
		}
	}
	r := checkRow(t, fault{name: fmt.Sprintf("%s: leader of its %s frozen (SIGSTOP) beside a standby", service, lock), unavailable: true},
		c, l, calls, nil, recovered)
	record(r)
	reportMu.Lock()
	figure := fmt.Sprintf("%s's %s: the standby led %s after the leader froze (goal %s); the woken leader stood by: %v; led again once the standby stopped: %v",
		service, lock, takeover.Round(100*time.Millisecond), takeoverGoal, stoodBy, ledAgain)
	if lock == "outbox relay" {
		figure += fmt.Sprintf("; stale publishes of the woken leader refused by the stream: %.0f", refused)
	}
	leaderFigures = append(leaderFigures, figure)
	reportMu.Unlock()
}

// leaderFigures are the frozen leaders' takeover times, printed under the table.
var leaderFigures []string

func printLeaderReport() {
	for _, f := range leaderFigures {
		fmt.Println(f)
	}
}

// leaderMetric reads registry_leader{lock} from a process's metrics: 1
// while it leads, 0 (or absent) otherwise.
func leaderMetric(t *testing.T, process, lock string) float64 {
	t.Helper()
	return metricValue(t, process, "registry_leader{", `lock="`+lock+`"`)
}

// metricValue reads the first sample of a process's metrics whose line
// begins with prefix and holds label; 0 when there is none (or the
// process says nothing).
func metricValue(t *testing.T, process, prefix, label string) float64 {
	t.Helper()
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(stack.MetricsURLs[process])
	if err != nil {
		return 0 // frozen or stopped: it says nothing
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, prefix) || !strings.Contains(line, label) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		return v
	}
	return 0
}

// waitFor polls cond every 100 ms until it holds or within has passed.
func waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logTail logs what a process of the stack logged at warn and above.
func logTail(t *testing.T, name string) {
	raw, err := os.ReadFile(filepath.Join(stack.LogDir, name+".log"))
	if err != nil {
		t.Logf("%s's log: %v", name, err)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	t.Logf("%s's log, its last lines:\n%s", name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
}
