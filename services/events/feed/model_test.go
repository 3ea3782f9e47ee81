package feed

import (
	"slices"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
)

func TestParseTypes(t *testing.T) {
	tests := []struct {
		name    string
		values  []string
		types   []string
		kinds   []string
		invalid []string
	}{
		{"none selects everything", nil, nil, nil, nil},
		{"an exact type", []string{"asset.created"}, []string{"asset.created"}, nil, nil},
		{"a whole kind", []string{"action.*"}, nil, []string{"action"}, nil},
		{"a kind with an underscore", []string{"person_organization.deleted"}, []string{"person_organization.deleted"}, nil, nil},
		{"repeats collapse", []string{"asset.created", "asset.created", "action.*", "action.*"}, []string{"asset.created"}, []string{"action"}, nil},
		{"unknown kind", []string{"spaceship.created"}, nil, nil, []string{"type"}},
		{"unknown operation", []string{"asset.archived"}, nil, nil, []string{"type"}},
		{"no operation", []string{"asset"}, nil, nil, []string{"type"}},
		{"a bare star", []string{"*"}, nil, nil, []string{"type"}},
		{"upper case", []string{"Asset.created"}, nil, nil, []string{"type"}},
		{"one bad among good", []string{"asset.created", "asset.moved"}, []string{"asset.created"}, nil, []string{"type"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v apperr.Validation
			f := ParseTypes(&v, "type", tt.values, false)
			var fields []string
			for _, e := range v.Fields() {
				fields = append(fields, e.Field)
			}
			if !slices.Equal(f.Types, tt.types) || !slices.Equal(f.Kinds, tt.kinds) || !slices.Equal(fields, tt.invalid) {
				t.Errorf("got types %v kinds %v problems %v; want %v %v %v", f.Types, f.Kinds, fields, tt.types, tt.kinds, tt.invalid)
			}
		})
	}
}

func TestTypeFilterMatches(t *testing.T) {
	f := TypeFilter{Types: []string{"asset.created"}, Kinds: []string{"action"}}
	tests := []struct {
		eventType string
		want      bool
	}{
		{"asset.created", true},
		{"asset.updated", false},
		{"action.deleted", true},
		{"action_document.created", false}, // a kind is matched whole, not by prefix
		{"organization.created", false},
	}
	for _, tt := range tests {
		if got := f.Matches(tt.eventType); got != tt.want {
			t.Errorf("Matches(%q) = %v, want %v", tt.eventType, got, tt.want)
		}
	}
	if !(TypeFilter{}).Matches("document.deleted") {
		t.Error("the empty filter must match everything")
	}
}
