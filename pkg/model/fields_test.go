package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
)

func TestRules(t *testing.T) {
	long := strings.Repeat("é", NameLen+1)
	tests := []struct {
		name    string
		run     func(v *apperr.Validation) any
		want    any
		problem bool
	}{
		{"required is trimmed", func(v *apperr.Validation) any { return Required(v, "f", "  a b ", NameLen) }, "a b", false},
		{"required blank", func(v *apperr.Validation) any { return Required(v, "f", " \t", NameLen) }, "", true},
		{"required counts characters, not bytes", func(v *apperr.Validation) any {
			return Required(v, "f", strings.Repeat("é", NameLen), NameLen)
		}, strings.Repeat("é", NameLen), false},
		{"required too long", func(v *apperr.Validation) any { return Required(v, "f", long, NameLen) }, long, true},
		{"optional absent", func(v *apperr.Validation) any { return Optional(v, "f", nil, 5) == nil }, true, false},
		{"optional blank is none", func(v *apperr.Validation) any { s := "  "; return Optional(v, "f", &s, 5) == nil }, true, false},
		{"optional trimmed", func(v *apperr.Validation) any { s := " x "; return *Optional(v, "f", &s, 5) }, "x", false},
		{"optional too long", func(v *apperr.Validation) any { s := "xxxxxx"; return *Optional(v, "f", &s, 5) }, "xxxxxx", true},
		{"token", func(v *apperr.Validation) any { Token(v, "f", "expert_control_report", "e"); return nil }, nil, false},
		{"token missing", func(v *apperr.Validation) any { Token(v, "f", "", "e"); return nil }, nil, true},
		{"token uppercase", func(v *apperr.Validation) any { Token(v, "f", "Report", "e"); return nil }, nil, true},
		{"token too long", func(v *apperr.Validation) any { Token(v, "f", "a"+strings.Repeat("b", 64), "e"); return nil }, nil, true},
		{"one of", func(v *apperr.Validation) any { OneOf(v, "f", "repair", []string{"maintenance", "repair"}); return nil }, nil, false},
		{"one of missing", func(v *apperr.Validation) any { OneOf(v, "f", "", []string{"repair"}); return nil }, nil, true},
		{"one of another value", func(v *apperr.Validation) any { OneOf(v, "f", "Repair", []string{"repair"}); return nil }, nil, true},
		{"keep absent", func(v *apperr.Validation) any { s := "old"; Keep(v, "f", PatchField[string]{}, &s); return s }, "old", false},
		{"keep value", func(v *apperr.Validation) any {
			s := "old"
			Keep(v, "f", PatchField[string]{Set: true, Value: "new"}, &s)
			return s
		}, "new", false},
		{"keep null", func(v *apperr.Validation) any {
			s := "old"
			Keep(v, "f", PatchField[string]{Set: true, Null: true}, &s)
			return s
		}, "old", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v apperr.Validation
			got := tt.run(&v)
			if got != tt.want {
				t.Errorf("value = %v, want %v", got, tt.want)
			}
			if fields := v.Fields(); (len(fields) > 0) != tt.problem || (tt.problem && fields[0].Field != "f") {
				t.Errorf("problems = %v, want one for f: %v", fields, tt.problem)
			}
		})
	}
}

// label is an input whose Normalize trims it and requires it.
type label string

func (l label) Normalize() (label, error) {
	trimmed := label(strings.TrimSpace(string(l)))
	var v apperr.Validation
	if trimmed == "" {
		v.Add("label", "is required")
	}
	return trimmed, v.Err()
}

// A patch's own problems are its answer before the patched input is
// normalized; without them the normalized input is.
func TestPatched(t *testing.T) {
	invalid := func(err error) string {
		var e *apperr.Error
		if !errors.As(err, &e) || e.Kind != apperr.KindInvalid || len(e.Fields) != 1 {
			return ""
		}
		return e.Fields[0].Field
	}
	var removed apperr.Validation
	removed.Add("name", "is required and cannot be removed")
	if got, err := Patched(&removed, label(" ")); got != " " || invalid(err) != "name" {
		t.Errorf("with a removed member: %q, %v; want it unnormalized and only the member named", got, err)
	}
	if got, err := Patched(&apperr.Validation{}, label(" x ")); got != "x" || err != nil {
		t.Errorf("clean patch: %q, %v; want the normalized input", got, err)
	}
	if _, err := Patched(&apperr.Validation{}, label(" ")); invalid(err) != "label" {
		t.Errorf("clean patch of an invalid result: %v; want the input's own problem", err)
	}
}

func TestFold(t *testing.T) {
	same := [][2]string{
		{"Øyvind", "ØYVIND"},
		{"  Ada ", "ada"},
		{"Straße", "STRASSE"},
		{"e\u0301", "\u00e9"}, // decomposed and composed é
	}
	for _, pair := range same {
		if Fold(pair[0]) != Fold(pair[1]) {
			t.Errorf("%q and %q should compare equal", pair[0], pair[1])
		}
	}
	if Fold("Ada") == Fold("Ida") {
		t.Error("different names fold alike")
	}
}
