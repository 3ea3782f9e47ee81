package meters_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/assetregistry/registry/pkg/servicekit"
	"github.com/assetregistry/registry/services/assets"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// A batch answers each reading as the single create would have, one after
// the other: readings in and out of read_at order, before, between and
// after the ones recorded before the batch, resets, several meters and
// refused items that the ones after them do not count. The same readings
// go one by one to one asset and as one batch to another, each after the
// same readings recorded one by one; the answers and what is recorded must
// be the same.
func TestBatchAnswersAsSingles(t *testing.T) {
	s := servicetest.StartParallel(t, assets.Spec())
	typ := s.Call(201, "POST", "/asset_types", s.RW, map[string]any{"brand": "Liftmaster", "model": "LM-300"}).JSON()["id"]
	newPath := func(serial string) string {
		id := s.Call(201, "POST", "/assets", s.RW, map[string]any{"asset_type_id": typ, "serial_number": serial}).JSON()["id"].(string)
		return "/assets/" + id + "/meter_readings"
	}
	rng := rand.New(rand.NewPCG(7, 49))
	reading := func() map[string]any {
		meter := []string{"hours", "hours", "hours", "km"}[rng.IntN(4)]
		return map[string]any{"meter": meter, "value": float64(rng.IntN(40)), "read_at": at(rng.IntN(24)), "reset": rng.IntN(8) == 0}
	}
	before, items := make([]map[string]any, 12), make([]map[string]any, 120)
	for i := range before {
		before[i] = reading()
	}
	for i := range items {
		items[i] = reading()
	}
	singles, batch := newPath("SN-singles"), newPath("SN-batch")
	for _, path := range []string{singles, batch} {
		for _, r := range before {
			s.Do("POST", path, s.RW, r)
		}
	}
	var want, got []int
	for _, r := range items {
		want = append(want, s.Do("POST", singles, s.RW, r).Status)
	}
	for _, r := range s.Call(200, "POST", batch+"/batch", s.RW, map[string]any{"items": items}).List() {
		got = append(got, int(r["status"].(float64)))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batch answered\n%v\none by one\n%v", got, want)
	}
	accepted := 0
	for _, st := range want {
		if st == 201 {
			accepted++
		}
	}
	if accepted < len(items)/4 || accepted > len(items)*3/4 {
		t.Fatalf("%d of %d readings accepted: the sequence does not test refusals and acceptances both", accepted, len(items))
	}
	recorded := func(path string) []string {
		var out []string
		for _, r := range s.Call(200, "GET", path+"?limit=1000", s.RO, nil).List() {
			out = append(out, fmt.Sprint(r["meter"], " ", r["read_at"], "=", r["value"], " ", r["reset"]))
		}
		return out
	}
	if a, b := recorded(singles), recorded(batch); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("recorded by the batch\n%s\none by one\n%s", strings.Join(b, "\n"), strings.Join(a, "\n"))
	}
}

// A batch costs the database a few statements whatever its size: a batch
// of 1,000 readings is not a thousand savepoints, neighbour reads, inserts
// and event inserts. The service's connections go through a proxy that
// counts the statements they send.
func TestBatchStatementsDoNotGrowWithItems(t *testing.T) {
	t.Parallel()
	var statements atomic.Int64
	s := servicetest.Start(t, assets.Spec(), func(c *servicekit.Config) {
		c.Database.URL = testkit.CountingStatements(t, c.Database.URL, &statements)
	})
	typ := s.Call(201, "POST", "/asset_types", s.RW, map[string]any{"brand": "Liftmaster", "model": "LM-400"}).JSON()["id"]
	asset := s.Call(201, "POST", "/assets", s.RW, map[string]any{"asset_type_id": typ, "serial_number": "SN-count"}).JSON()["id"].(string)
	path := "/assets/" + asset + "/meter_readings/batch"
	next := 0 // the readings in order so far: value n at second n
	batch := func(n int) int64 {
		items, recorded := make([]map[string]any, n), next
		for i := range items {
			// In order on one meter, and every tenth after the fact,
			// beside a reading recorded before the batch.
			second := next
			if i%10 == 9 && recorded > 0 {
				second = i / 10 % recorded
			} else {
				next++
			}
			items[i] = map[string]any{"meter": "hours", "value": float64(second), "read_at": atSecond(second)}
		}
		before := statements.Load()
		for _, r := range s.Call(200, "POST", path, s.RW, map[string]any{"items": items}).List() {
			if r["status"] != float64(201) {
				t.Fatalf("item answered %v", r)
			}
		}
		return statements.Load() - before
	}
	batch(10) // the statements are prepared on the connection
	small, large := batch(10), batch(1000)
	testkit.StatementsDoNotGrow(t, "readings", 10, 1000, small, large, 20)
}

// atSecond is the time of a reading numbered n.
func atSecond(n int) string {
	return fmt.Sprintf("2025-03-14T%02d:%02d:%02dZ", n/3600, n/60%60, n%60)
}
