package model_test

import (
	"encoding/json"
	"testing"

	"github.com/assetregistry/registry/pkg/model"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"2024-02-29", true},
		{"2023-02-29", false},
		{"2023-13-01", false},
		{"2023-04-31", false},
		{"2023-4-1", false},
		{"2023-04-01T00:00:00Z", false},
		{"", false},
		{"0001-01-01", true},
	}
	for _, tt := range tests {
		d, err := model.ParseDate(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("Parse(%q) err = %v, want ok=%v", tt.in, err, tt.ok)
		}
		if tt.ok && d.String() != tt.in {
			t.Errorf("Parse(%q).String() = %q", tt.in, d)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var v struct{ D *model.Date }
	if err := json.Unmarshal([]byte(`{"D":"1999-12-31"}`), &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	if string(out) != `{"D":"1999-12-31"}` {
		t.Errorf("round trip = %s", out)
	}
	if err := json.Unmarshal([]byte(`{"D":19991231}`), &v); err == nil {
		t.Error("a number must not parse as a date")
	}
}
