package testkit_test

import (
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

// Issuers that exist at the same time sign with different keys, and the
// keys of issuers whose test has ended serve later issuers instead of a
// new key each. Serial: a parallel test's issuer would take from the pool.
func TestIssuerKeysAreNeverSharedByLiveIssuers(t *testing.T) {
	var first, second *testkit.Issuer
	t.Run("two at once", func(t *testing.T) {
		first, second = testkit.NewIssuer(t, "aud"), testkit.NewIssuer(t, "aud")
		if first.Key.Equal(second.Key) {
			t.Error("two live issuers share a key")
		}
	})
	later := testkit.NewIssuer(t, "aud")
	if !later.Key.Equal(first.Key) && !later.Key.Equal(second.Key) {
		t.Error("an issuer made after two ended did not reuse either of their keys")
	}
}
