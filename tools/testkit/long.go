package testkit

import (
	"os"
	"testing"
)

// FullEnv is the one switch between the short and the whole form of the
// suites that have both (the fault suite, the bench's quick run): `make
// test` leaves it unset and runs one short row of each kind, `make faults`
// sets it, and `make test FULL=1` runs every row inside make test too.
const FullEnv = "FULL"

// Full reports whether the long rows run (FULL=1).
func Full() bool { return os.Getenv(FullEnv) == "1" }

// Long marks the calling test (or subtest) as a long row: it runs only
// under FULL=1 and is skipped, saying where it runs, otherwise. A row
// declares that it is long and nothing else; what stands for its kind in
// make test is whichever short row of that kind is left.
func Long(t testing.TB) {
	t.Helper()
	if !Full() {
		t.Skip("a long row: runs under FULL=1 (make faults, make test FULL=1)")
	}
}
