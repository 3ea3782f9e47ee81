package e2e

import (
	"cmp"
	"path"
	"sync"
	"testing"

	"github.com/assetregistry/registry/tools/testkit"
)

// deleteRace is one kind of delete racing creates that reference its
// target, through the gateway.
type deleteRace struct {
	// target makes a new target for a round and returns its path.
	target func(round int) string
	// create is creator c's write naming the target's id; 201 or 422.
	create func(round, c int, id string) testkit.Response
	// naming counts what names the target's id now.
	naming func(id string) int
	// creators write at once against each delete; 4 when 0.
	creators int
}

// raceDeleteAgainstCreates runs many rounds of a delete released at once
// with several creates naming its target. Whatever the interleaving, a
// round either deleted the target and nothing names it, or refused the
// delete (409) and the target is still there with what names it: never a
// reference to something deleted (architecture: references kept whole).
func raceDeleteAgainstCreates(t *testing.T, r deleteRace) {
	t.Helper()
	const rounds = 25
	creators := cmp.Or(r.creators, 4)
	rw, ro := readWrite(t), readOnly(t)
	gw := gateway()
	deleted, refused := 0, 0
	for round := range rounds {
		target := r.target(round)
		id := path.Base(target)
		var wg sync.WaitGroup
		var deleteStatus int
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			deleteStatus = gw.Do(t, "DELETE", target, rw, nil).Status
		})
		for c := range creators {
			wg.Go(func() {
				<-start
				if resp := r.create(round, c, id); resp.Status != 201 && resp.Status != 422 {
					t.Errorf("create: %d %s", resp.Status, resp.Raw)
				}
			})
		}
		close(start)
		wg.Wait()
		naming, targetStatus := r.naming(id), gw.Do(t, "GET", target, ro, nil).Status
		switch deleteStatus {
		case 204:
			deleted++
			if naming > 0 || targetStatus != 404 {
				t.Fatalf("round %d: %s was deleted, and %d things still name it", round, target, naming)
			}
		case 409:
			refused++
			if naming == 0 || targetStatus != 200 {
				t.Fatalf("round %d: the delete was refused, yet %d things name %s (GET: %d)", round, naming, target, targetStatus)
			}
		default:
			t.Fatalf("round %d: delete answered %d", round, deleteStatus)
		}
	}
	t.Logf("%d rounds: %d deletes went through, %d were refused", rounds, deleted, refused)
}
