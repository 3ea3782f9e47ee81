package testkit

import (
	"testing"
	"time"
)

// Eventually polls cond every 20 ms until it holds, and fails the test
// (naming what it waited for) once within has passed without it.
func Eventually(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
