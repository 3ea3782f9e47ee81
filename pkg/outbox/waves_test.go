package outbox

import (
	"fmt"
	"testing"
)

// TestWaves: the i-th wave holds each subject's i-th event, in outbox
// order, so a wave published after the one before is acknowledged keeps
// every subject's order.
func TestWaves(t *testing.T) {
	t.Parallel()
	p := func(id int64, key string) pending { return pending{id: id, key: key} }
	for _, tc := range []struct {
		name  string
		batch []pending
		want  string
	}{
		{"nothing", nil, "[]"},
		{"distinct subjects: one wave", []pending{p(1, "a"), p(2, "b"), p(3, "c")}, "[[1 2 3]]"},
		{"one subject: a wave each", []pending{p(1, "a"), p(2, "a"), p(3, "a")}, "[[1] [2] [3]]"},
		{"interleaved: each subject's first, then second",
			[]pending{p(1, "a"), p(2, "a"), p(3, "b"), p(4, "c"), p(5, "b"), p(6, "a")}, "[[1 3 4] [2 5] [6]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids [][]int64
			for _, w := range waves(tc.batch) {
				var wave []int64
				for _, e := range w {
					wave = append(wave, e.id)
				}
				ids = append(ids, wave)
			}
			if got := fmt.Sprint(ids); got != tc.want {
				t.Fatalf("waves = %s, want %s", got, tc.want)
			}
		})
	}
}
