package leader

import (
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A UUIDv7 partition bound sorts below every id made from its millisecond
// on and above every one made before, and reads back as its millisecond.
func TestUUIDv7Bound(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{time.UnixMilli(0), time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), time.UnixMilli(1<<48 - 1)} {
		ms := at.UnixMilli()
		bound := UUIDv7Bound(ms)
		if _, err := uuid.Parse(bound); err != nil {
			t.Fatalf("UUIDv7Bound(%d) = %q: %v", ms, bound, err)
		}
		back, err := TimeKey{}.parse("'" + bound + "'")
		if err != nil || back != ms {
			t.Errorf("parse(%q) = %d (%v), want %d", bound, back, err, ms)
		}
		id := uuid.Must(uuid.NewV7())
		copy(id[:6], []byte{byte(ms >> 40), byte(ms >> 32), byte(ms >> 24), byte(ms >> 16), byte(ms >> 8), byte(ms)})
		if id.String() < bound {
			t.Errorf("an id made at %d (%s) sorts below its bound %s", ms, id, bound)
		}
		if ms > 0 {
			before := UUIDv7Bound(ms - 1)[:14] + "ffff-ffff-ffffffffffff"
			if before >= bound {
				t.Errorf("the last id of %d (%s) does not sort below %s", ms-1, before, bound)
			}
		}
	}
}

func TestSeqKeyParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "'20000000'": 20000000, "9223372036854775807": math.MaxInt64} {
		if got, err := (SeqKey{}).parse(in); err != nil || got != want {
			t.Errorf("parse(%q) = %d (%v), want %d", in, got, err, want)
		}
	}
	if _, err := (SeqKey{}).parse("MAXVALUE"); err == nil {
		t.Error("parse(MAXVALUE) succeeded; a partition of the registry never ends at MAXVALUE")
	}
}
