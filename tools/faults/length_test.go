//go:build faults

package faults

import (
	"testing"
	"time"

	"github.com/assetregistry/registry/tools/testkit"
)

// The suite has two lengths, chosen by one switch (testkit.FullEnv, FULL=1):
// `make faults` sets it and runs every row whole; `make test` leaves it
// unset and runs one short row of each kind of fault (a datastore down, a
// service crashed, a service or leader frozen, the gateway down, a slow
// peer, the identity provider down, a webhook receiver failing, an event
// set aside), so each kind's checks still guard every change.
//
// A row says only whether it is long: a table row sets `long: true`, a test
// of its own calls long(t) first. A long row is one whose kind another,
// shorter row already stands for in make test, or whose setup alone takes
// minutes (a 40,000-asset compliance pass).

// fullFaults reports whether every row runs, each at its whole length
// (the frozen services' 30 s rather than 14 s).
func fullFaults() bool { return testkit.Full() }

// long skips the calling row unless FULL=1.
func long(t *testing.T) {
	t.Helper()
	testkit.Long(t)
}

// loadPause is how long each of the load's clients pauses between calls.
// In make test a few dozen calls a second still meet every fault with
// every kind of call (each row's window holds hundreds), at a third of
// the stack's work; make faults sends the whole load.
func loadPause() time.Duration {
	if fullFaults() {
		return 25 * time.Millisecond
	}
	return 75 * time.Millisecond
}
