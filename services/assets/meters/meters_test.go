package meters_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/assetregistry/registry/services/assets"
	"github.com/assetregistry/registry/tools/testkit"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// newAsset starts the assets service and records an asset in it.
func newAsset(t *testing.T) (*servicetest.Service, string) {
	t.Helper()
	s := servicetest.Start(t, assets.Spec())
	typ := s.Call(201, "POST", "/asset_types", s.RW, map[string]any{"brand": "Liftmaster", "model": "LM-200"}).JSON()["id"]
	asset := s.Call(201, "POST", "/assets", s.RW, map[string]any{"asset_type_id": typ, "serial_number": "SN-1"}).JSON()["id"].(string)
	return s, "/assets/" + asset + "/meter_readings"
}

func at(hour int) string { return fmt.Sprintf("2025-03-14T%02d:00:00Z", hour) }

// A meter counts up in read_at order: a reading below the one before it
// is a 422 on value unless it says reset, and one recorded in the past is
// not above the one after it unless that one was a reset.
func TestReadingsCountUp(t *testing.T) {
	t.Parallel()
	s, path := newAsset(t)
	for i, c := range []struct {
		meter  string
		value  float64
		hour   int
		reset  bool
		status int
	}{
		{"hours", 100, 10, false, 201},
		{"hours", 150, 12, false, 201},
		{"hours", 120, 14, false, 422}, // below 150, the one before it
		{"hours", 120, 14, true, 201},  // the meter was reset
		{"hours", 160, 11, false, 422}, // above 150, the one after it
		{"hours", 120, 11, false, 201}, // between 100 and 150
		{"hours", 110, 11, false, 422}, // below 120 of the same instant, recorded before it
		{"hours", 200, 13, false, 201}, // the one after it (14:00) is a reset
		{"hours", 10, 15, false, 422},  // below 120 at 14:00
		{"hours", 150, 12, false, 201}, // equal is no step down
		{"odometer_km", 5, 15, false, 201},
	} {
		body := map[string]any{"meter": c.meter, "value": c.value, "read_at": at(c.hour), "reset": c.reset}
		r := s.Call(c.status, "POST", path, s.RW, body)
		switch c.status {
		case 422:
			if p := r.JSON(); !strings.Contains(string(r.Raw), `"field":"value"`) {
				t.Errorf("reading %d: problem %v, want one naming value", i, p)
			}
		case 201:
			got := r.JSON()
			if got["value"] != c.value || got["meter"] != c.meter || got["reset"] != c.reset || got["created_by"] != "rw-client" ||
				r.Header.Get("Location") != path+"/"+got["id"].(string) {
				t.Errorf("reading %d: %s (Location %s)", i, r.Raw, r.Header.Get("Location"))
			}
		}
	}

	var values []any
	next := path + "?meter=hours&limit=2"
	for next != "" {
		r := s.Call(200, "GET", next, s.RO, nil)
		for _, item := range r.List() {
			values = append(values, fmt.Sprint(item["read_at"], "=", item["value"]))
		}
		next = strings.TrimSuffix(strings.TrimPrefix(r.Header.Get("Link"), "<"), `>; rel="next"`)
	}
	want := []any{at(10) + "=100", at(11) + "=120", at(12) + "=150", at(12) + "=150", at(13) + "=200", at(14) + "=120"}
	if fmt.Sprint(values) != fmt.Sprint(want) {
		t.Errorf("readings oldest first:\n%v\nwant\n%v", values, want)
	}
	if all := s.Call(200, "GET", path, s.RO, nil).List(); len(all) != 7 {
		t.Errorf("every meter's readings: %d, want 7", len(all))
	}
}

func TestReadingProblems(t *testing.T) {
	t.Parallel()
	s, path := newAsset(t)
	for field, body := range map[string]map[string]any{
		"meter":   {"meter": "Hours", "value": 1, "read_at": at(1)},
		"value":   {"meter": "hours", "value": -1, "read_at": at(1)},
		"read_at": {"meter": "hours", "value": 1, "read_at": "yesterday"},
		"id":      {"meter": "hours", "value": 1, "read_at": at(1), "id": "x"},
	} {
		r := s.Call(422, "POST", path, s.RW, body)
		if !strings.Contains(string(r.Raw), `"field":"`+field+`"`) {
			t.Errorf("%v: %s, want a problem naming %s", body, r.Raw, field)
		}
	}
	s.Call(422, "POST", path, s.RW, map[string]any{"meter": "hours", "read_at": at(1)})
	missing := "/assets/0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d/meter_readings"
	s.Call(404, "POST", missing, s.RW, map[string]any{"meter": "hours", "value": 1, "read_at": at(1)})
	s.Call(404, "GET", missing, s.RO, nil)
	s.Call(400, "GET", "/assets/nope/meter_readings", s.RO, nil)
}

// Readings of one meter are checked one after another: of two that are
// each fine alone but not together (500 at 16:00, 400 at 17:00), exactly
// one is recorded.
func TestConcurrentReadingsTakeTurns(t *testing.T) {
	t.Parallel()
	s, path := newAsset(t)
	s.Call(201, "POST", path, s.RW, map[string]any{"meter": "hours", "value": 0, "read_at": at(1)})
	for round := range 10 {
		day := fmt.Sprintf("2025-04-%02dT", round+1)
		bodies := []map[string]any{
			{"meter": "hours", "value": 500 + round*1000, "read_at": day + "16:00:00Z"},
			{"meter": "hours", "value": 400 + round*1000, "read_at": day + "17:00:00Z"},
		}
		statuses := make([]int, 2)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, body := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				statuses[i] = s.Do("POST", path, s.RW, body).Status
			}()
		}
		close(start)
		wg.Wait()
		if !(statuses[0] == 201 && statuses[1] == 422) && !(statuses[0] == 422 && statuses[1] == 201) {
			t.Fatalf("round %d: statuses %v, want one 201 and one 422", round, statuses)
		}
	}
}

// A reading is an event in its asset's history.
func TestReadingEvent(t *testing.T) {
	t.Parallel()
	s, path := newAsset(t)
	s.Events(t)
	r := s.Call(201, "POST", path, s.RW, map[string]any{"meter": "hours", "value": 1.5, "read_at": at(1)})
	asset := strings.Split(path, "/")[2]
	s.WantEvents(t, "rw-client", servicetest.Event{Type: "meter_reading.created", ID: asset,
		Data: s.GET(r.Header.Get("Location"))})
}

// A batch records each reading as its single create would, in order, each
// checked against the ones before it (the batch's own included); a bad
// item leaves the others.
func TestReadingsBatch(t *testing.T) {
	t.Parallel()
	s, path := newAsset(t)
	items := []map[string]any{
		{"meter": "hours", "value": 10, "read_at": at(1)},
		{"meter": "hours", "value": 5, "read_at": at(2)}, // below the item before it
		{"meter": "hours", "value": 5, "read_at": at(2), "reset": true},
		{"meter": "Hours", "value": 5, "read_at": at(3)},
		{"meter": "km", "value": 1, "read_at": at(3)},
	}
	var statuses []any
	for _, r := range s.Call(200, "POST", path+"/batch", s.RW, map[string]any{"items": items}).List() {
		statuses = append(statuses, r["status"])
	}
	if fmt.Sprint(statuses) != "[201 422 201 422 201]" {
		t.Errorf("statuses %v", statuses)
	}
	if all := s.Call(200, "GET", path, s.RO, nil).List(); len(all) != 3 {
		t.Errorf("recorded %d readings, want 3", len(all))
	}
	s.Call(404, "POST", "/assets/0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d/meter_readings/batch", s.RW, map[string]any{"items": items})
}

// An asset's readings go with it: no foreign key deletes them (migration
// 006), the asset's delete does, and a reading of a deleted asset is a
// 404, whether single or in a batch.
func TestReadingsGoWithTheirAsset(t *testing.T) {
	t.Parallel()
	s, path := newAsset(t)
	s.Call(201, "POST", path, s.RW, map[string]any{"meter": "hours", "value": 1, "read_at": at(1)})
	s.Call(200, "POST", path+"/batch", s.RW, map[string]any{"items": []map[string]any{
		{"meter": "hours", "value": 2, "read_at": at(2)}, {"meter": "cycles", "value": 7, "read_at": at(2)}}})
	assetPath := strings.TrimSuffix(path, "/meter_readings")
	assetID := strings.TrimPrefix(assetPath, "/assets/")
	count := func() (n int) {
		t.Helper()
		if err := s.Built.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM meter_readings WHERE asset_id = $1`, assetID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 3 {
		t.Fatalf("%d readings stored, want 3", n)
	}
	s.Call(204, "DELETE", assetPath, s.RW, nil, "If-Match", s.Call(200, "GET", assetPath, s.RW, nil).Header.Get("ETag"))
	if n := count(); n != 0 {
		t.Errorf("%d readings left of a deleted asset, want none", n)
	}
	s.Call(404, "POST", path, s.RW, map[string]any{"meter": "hours", "value": 3, "read_at": at(3)})
	s.Call(404, "POST", path+"/batch", s.RW, map[string]any{"items": []map[string]any{{"meter": "hours", "value": 3, "read_at": at(3)}}})
	s.Call(404, "GET", path, s.RW, nil)
}
