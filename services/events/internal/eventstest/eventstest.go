// Package eventstest holds what the tests of the events service and of its
// components share. Only tests import it.
package eventstest

import (
	"crypto/rand"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// NewLogKey is a fresh note signing key of the log named origin and its
// verifier key.
func NewLogKey(t testing.TB, origin string) (signing, public string) {
	t.Helper()
	signing, public, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	return signing, public
}
