package auth_test

import (
	"testing"
)

// BenchmarkVerify is the per-request cost of token verification (RS256),
// paid once in the gateway and once in the service.
func BenchmarkVerify(b *testing.B) {
	iss, v := newVerifier(b)
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
