package auth_test

import (
	"testing"

	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/tools/testkit"
)

// BenchmarkVerify is the per-request cost of token verification (RS256),
// paid once in the gateway and once in the service.
func BenchmarkVerify(b *testing.B) {
	iss := testkit.NewIssuer(b, audience)
	v, err := auth.NewVerifier(auth.Config{Issuer: iss.URL, Audience: iss.Audience, Leeway: testkit.Leeway})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	token := iss.ReadWrite(b)
	if _, err := v.Verify(b.Context(), token); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.Verify(b.Context(), token); err != nil {
				b.Fatal(err)
			}
		}
	})
}
