package model

import (
	"strings"
	"testing"
)

func TestJSONDepth(t *testing.T) {
	cases := []struct {
		raw  string
		want int
	}{
		{`1`, 0},
		{`"{[{["`, 0},
		{`{}`, 1},
		{`{"a":[1,{"b":2}]}`, 3},
		{`{"a":"}}}","b":{"c":"\"{"}}`, 2},
		{`[[],[[]]]`, 3},
		{strings.Repeat(`{"a":`, 33) + `1` + strings.Repeat(`}`, 33), 33},
	}
	for _, c := range cases {
		if got := JSONDepth([]byte(c.raw)); got != c.want {
			t.Errorf("JSONDepth(%.40s) = %d, want %d", c.raw, got, c.want)
		}
	}
}
