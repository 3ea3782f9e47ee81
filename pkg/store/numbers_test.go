package store_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/model"
)

// TestNumbersAsPostgresStoresThem holds model.NumberStored, the rule of
// which numbers a body may hold, to PostgreSQL itself: every number the
// rule accepts, jsonb stores, and prints back in as many characters as
// the rule says (the stored size of data and meta_data, and so of the
// largest event, rests on it). Random numbers join the rule's edges.
func TestNumbersAsPostgresStoresThem(t *testing.T) {
	t.Parallel()
	pool := migrated(t, open(t), migrations)
	lits := []string{"0", "-0", "-0.000", "42", "-12.50", "1e6", "1E+2", "1.5e-3", "120e-1", "0.10000", "0e5", "0.00e1",
		"1e19", "1e20", "-1e-15", "6.02214076e23", "1e-16", "0e-16", "0.0e16", "9.99e18", "123456789012345678901234567890",
		"17976931348623157" + strings.Repeat("0", 292), "1e131071", "1e-16383", "0.1" + strings.Repeat("0", 16382),
		"0." + strings.Repeat("0", 16383) + "1", "1.0e131071", "5e-324", "2e-324", "1e308", "1e400"}
	rng := rand.New(rand.NewPCG(26, 1))
	for range 300 {
		lit := strconv.FormatInt(rng.Int64N(2000)-1000, 10)
		if rng.IntN(2) == 0 {
			lit += "." + strconv.FormatInt(rng.Int64N(100000), 10)
		}
		if rng.IntN(2) == 0 {
			lit += "e" + strconv.Itoa(rng.IntN(60)-30)
		}
		lits = append(lits, lit)
	}
	accepted := 0
	for _, lit := range lits {
		stored, problem := model.NumberStored([]byte(lit))
		if problem != "" {
			continue
		}
		accepted++
		var printed string
		if err := pool.QueryRow(t.Context(), `SELECT ($1::text::jsonb)::text`, "["+lit+"]").Scan(&printed); err != nil {
			t.Errorf("%.40s: accepted, but PostgreSQL refuses it: %v", lit, err)
			continue
		}
		if got := len(printed) - 2; got != stored {
			t.Errorf("%.40s: PostgreSQL prints %d characters (%.40s), the rule says %d", lit, got, printed, stored)
		}
	}
	if accepted < len(lits)/2 {
		t.Errorf("the rule accepted %d of %d numbers; the check would check little", accepted, len(lits))
	}
}
