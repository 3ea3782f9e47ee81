//go:build faults

package faults

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/catalog"
)

// The transparency log's row: the events deployable, which
// leads the consumer (it stores each batch of events with their leaves and
// the tiles in one transaction) and signs the log's checkpoints, is killed
// while it works through a backlog: it is paused until the stream holds
// events it has not stored, woken, and killed a moment later, amid the
// batches and between a batch and the checkpoint that would sign it. Once
// it is back, every event recorded must be stored once, each the next leaf
// (none doubled, none missed), a checkpoint must sign the whole tree, and
// `events audit` must find the tree the stored events derive to be the
// one the tiles hold and every checkpoint signed. Only in `make faults`:
// the row waits for the log to settle, which make test's budget has no
// room for.

func TestLogSurvivesItsLeaderKilled(t *testing.T) {
	skipOnClusters(t)
	long(t)
	events := stack.Processes["events"]
	exercise(t, 80, fault{
		name: "events: leader killed (SIGKILL) while storing a backlog and signing the log, restarted",
		inject: func(t *testing.T) {
			must(t, syscall.Kill(events.Pid(), syscall.SIGSTOP))
			t.Cleanup(func() { _ = syscall.Kill(events.Pid(), syscall.SIGCONT) })
			time.Sleep(3 * time.Second) // the load's events wait in the stream
			must(t, syscall.Kill(events.Pid(), syscall.SIGCONT))
			time.Sleep(150 * time.Millisecond)
			must(t, events.Kill())
		},
		heal: restart("events"), hold: 2 * time.Second, unavailable: true,
		observe: func(*testing.T) func(*testing.T) { return checkLogWhole },
	})
}

// logFigures is what the log's row found, printed under the table.
var logFigures []string

func printLogReport() {
	for _, f := range logFigures {
		fmt.Println(f)
	}
}

// checkLogWhole waits (90 s at most) until every event the services
// recorded is stored and a checkpoint signs the whole tree, then holds the
// stored log to the events: leaves 0…n-1 each once, and a clean audit.
func checkLogWhole(t *testing.T) {
	conn := admin(t)
	ctx := t.Context()
	var unstored, withoutLeaf int
	var size, signed int64
	settled := waitFor(90*time.Second, func() bool {
		unstored = 0
		for _, s := range catalog.Services {
			if !s.NeedsStore(catalog.NATS) {
				continue
			}
			var n int
			// Published events are kept (outbox.retention) in outbox_published.
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT event_id FROM `+pgx.Identifier{s.Name, "outbox_published"}.Sanitize()+
				` UNION ALL SELECT event_id FROM `+pgx.Identifier{s.Name, "outbox"}.Sanitize()+
				`) o WHERE NOT EXISTS (SELECT 1 FROM events.events e WHERE e.id = o.event_id)`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			unstored += n
		}
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events.events WHERE leaf IS NULL), (SELECT size FROM events.log_state),
			(SELECT coalesce(max(size), -1) FROM events.checkpoints)`).Scan(&withoutLeaf, &size, &signed); err != nil {
			t.Fatal(err)
		}
		return unstored == 0 && withoutLeaf == 0 && signed == size
	})
	if !settled {
		t.Errorf("the log: 90 s after the fault, %d recorded events not stored, %d stored without a leaf, the latest checkpoint signs %d of %d leaves",
			unstored, withoutLeaf, signed, size)
	}
	var leaves, distinct, last int64
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT leaf), coalesce(max(leaf), -1)
		FROM (SELECT leaf FROM events.events WHERE leaf IS NOT NULL UNION ALL SELECT leaf FROM events.redactions) l`).Scan(&leaves, &distinct, &last); err != nil {
		t.Fatal(err)
	}
	if leaves != distinct || leaves != last+1 || leaves != size {
		t.Errorf("the log: %d leaves stored (%d distinct, the last %d) for a tree of %d: a leaf doubled or missed", leaves, distinct, last, size)
	}
	// The audit runs as an operator would: the deployable's binary, with
	// its settings (and key), beside it.
	running := stack.Processes["events"].Command()
	auditCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	audit := exec.CommandContext(auditCtx, running.Path, "audit")
	audit.Env, audit.Dir = running.Env, running.Dir
	out, err := audit.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "everything stored matches the signed checkpoints") {
		t.Errorf("events audit after the fault: %v\n%s", err, out)
	}
	reportMu.Lock()
	logFigures = append(logFigures, fmt.Sprintf("the log after its leader was killed: %d leaves, each once; checkpoint %d signs them all: %v; events audit clean: %v",
		leaves, signed, settled && signed == size, err == nil))
	reportMu.Unlock()
}
