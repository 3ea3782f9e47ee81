package parties

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

// invalidFields returns the field names of an Invalid error.
func invalidFields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.KindInvalid {
		t.Fatalf("err = %v, want an invalid-input error", err)
	}
	var fields []string
	for _, f := range e.Fields {
		fields = append(fields, f.Field)
	}
	return fields
}

func TestOrganizationInputNormalize(t *testing.T) {
	valid := OrganizationInput{Name: "Acme", RegistrationNumber: "123", OrganizationType: "private"}
	with := func(f func(*OrganizationInput)) OrganizationInput { in := valid; f(&in); return in }
	tests := []struct {
		name   string
		in     OrganizationInput
		fields []string
		check  func(t *testing.T, out OrganizationInput)
	}{
		{name: "minimal", in: valid},
		{name: "names are trimmed", in: with(func(in *OrganizationInput) { in.Name = "  Acme  " }),
			check: func(t *testing.T, out OrganizationInput) {
				if out.Name != "Acme" {
					t.Errorf("name = %q", out.Name)
				}
			}},
		{name: "all required missing", in: OrganizationInput{}, fields: []string{"name", "registration_number", "organization_type"}},
		{name: "blank name", in: with(func(in *OrganizationInput) { in.Name = "   " }), fields: []string{"name"}},
		{name: "name too long", in: with(func(in *OrganizationInput) { in.Name = strings.Repeat("ø", model.NameLen+1) }), fields: []string{"name"}},
		{name: "name at limit (runes, not bytes)", in: with(func(in *OrganizationInput) { in.Name = strings.Repeat("ø", model.NameLen) })},
		{name: "every organization type", in: with(func(in *OrganizationInput) { in.OrganizationType = "governmental" })},
		{name: "display name is not a wire value", in: with(func(in *OrganizationInput) { in.OrganizationType = "Private Company" }), fields: []string{"organization_type"}},
		{name: "country in upper case is stored lower", in: with(func(in *OrganizationInput) { in.Country = new("NO") }),
			check: func(t *testing.T, out OrganizationInput) {
				if *out.Country != "no" {
					t.Errorf("country = %q", *out.Country)
				}
			}},
		{name: "unknown country", in: with(func(in *OrganizationInput) { in.Country = new("xx") }), fields: []string{"country"}},
		{name: "reserved code is not a country", in: with(func(in *OrganizationInput) { in.Country = new("uk") }), fields: []string{"country"}},
		{name: "alpha-3 is not alpha-2", in: with(func(in *OrganizationInput) { in.Country = new("nor") }), fields: []string{"country"}},
		{name: "tax alias becomes canonical", in: with(func(in *OrganizationInput) { in.TaxIdentificationNumber = new("NO999") }),
			check: func(t *testing.T, out OrganizationInput) {
				if out.TaxRegistrationNumber == nil || *out.TaxRegistrationNumber != "NO999" || out.TaxIdentificationNumber != nil {
					t.Errorf("tax = %v / alias %v", out.TaxRegistrationNumber, out.TaxIdentificationNumber)
				}
			}},
		{name: "tax and equal alias", in: with(func(in *OrganizationInput) {
			in.TaxRegistrationNumber, in.TaxIdentificationNumber = new("NO1"), new("NO1")
		})},
		{name: "tax and different alias", in: with(func(in *OrganizationInput) {
			in.TaxRegistrationNumber, in.TaxIdentificationNumber = new("NO1"), new("NO2")
		}), fields: []string{"tax_identification_number"}},
		{name: "blank optional means none", in: with(func(in *OrganizationInput) { in.TaxRegistrationNumber = new(" ") }),
			check: func(t *testing.T, out OrganizationInput) {
				if out.TaxRegistrationNumber != nil {
					t.Errorf("tax = %q", *out.TaxRegistrationNumber)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.in.Normalize()
			if got := invalidFields(t, err); !reflect.DeepEqual(got, tt.fields) {
				t.Fatalf("invalid fields = %v, want %v", got, tt.fields)
			}
			if tt.check != nil {
				tt.check(t, out)
			}
		})
	}
}

func TestOrganizationPatchApply(t *testing.T) {
	current := Organization{Name: "Acme", RegistrationNumber: "1", OrganizationType: "private", Country: new("no"), TaxRegistrationNumber: new("T")}
	null := model.PatchField[string]{Set: true, Null: true}
	tests := []struct {
		name   string
		patch  OrganizationPatch
		fields []string
		want   func(in OrganizationInput) bool
	}{
		{name: "empty patch changes nothing", want: func(in OrganizationInput) bool { return reflect.DeepEqual(in, organizationUpdater.Input(current)) }},
		{name: "set a field", patch: OrganizationPatch{Name: servicetest.Set("Acme AS")}, want: func(in OrganizationInput) bool { return in.Name == "Acme AS" && *in.Country == "no" }},
		{name: "null removes an optional field", patch: OrganizationPatch{Country: null}, want: func(in OrganizationInput) bool { return in.Country == nil }},
		{name: "null cannot remove a required field", patch: OrganizationPatch{Name: null, OrganizationType: null}, fields: []string{"name", "organization_type"}},
		{name: "alias patches the canonical field", patch: OrganizationPatch{TaxIdentificationNumber: servicetest.Set("T2")},
			want: func(in OrganizationInput) bool { return *in.TaxRegistrationNumber == "T2" }},
		{name: "alias null removes it", patch: OrganizationPatch{TaxIdentificationNumber: null},
			want: func(in OrganizationInput) bool { return in.TaxRegistrationNumber == nil }},
		{name: "conflicting alias", patch: OrganizationPatch{TaxRegistrationNumber: servicetest.Set("A"), TaxIdentificationNumber: servicetest.Set("B")}, fields: []string{"tax_identification_number"}},
		{name: "patched value is validated", patch: OrganizationPatch{Country: servicetest.Set("zz")}, fields: []string{"country"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := tt.patch.Apply(current)
			if got := invalidFields(t, err); !reflect.DeepEqual(got, tt.fields) {
				t.Fatalf("invalid fields = %v, want %v", got, tt.fields)
			}
			if tt.want != nil && !tt.want(in) {
				t.Errorf("result %+v", in)
			}
		})
	}
}

func TestPersonInputNormalize(t *testing.T) {
	tomorrow := model.DateOf(model.Today().Time().AddDate(0, 0, 1))
	tests := []struct {
		name   string
		in     PersonInput
		fields []string
	}{
		{"names only", PersonInput{FirstName: "Ada", LastName: "Lovelace"}, nil},
		{"with birth date", PersonInput{FirstName: "Ada", LastName: "Lovelace", DateOfBirth: &model.Date{Year: 1815, Month: 12, Day: 10}}, nil},
		{"names required", PersonInput{}, []string{"first_name", "last_name"}},
		{"blank last name", PersonInput{FirstName: "Ada", LastName: " \t"}, []string{"last_name"}},
		{"born tomorrow", PersonInput{FirstName: "Ada", LastName: "Lovelace", DateOfBirth: &tomorrow}, []string{"date_of_birth"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.in.Normalize()
			if got := invalidFields(t, err); !reflect.DeepEqual(got, tt.fields) {
				t.Fatalf("invalid fields = %v, want %v", got, tt.fields)
			}
		})
	}
}

func TestLinkInputValidate(t *testing.T) {
	tests := []struct {
		relation string
		ok       bool
	}{
		{"employee", true},
		{"board_member2", true},
		{"", false},
		{"Employee", false},
		{"2nd", false},
		{"has-dash", false},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
	}
	for _, tt := range tests {
		err := LinkInput{RelationType: tt.relation}.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("relation_type %q: err = %v, want ok=%v", tt.relation, err, tt.ok)
		}
	}
}

func TestIdentityKey(t *testing.T) {
	same := [][2]string{
		{"Øyvind", "ØYVIND"},
		{"  Ada ", "ada"},
		{"Straße", "STRASSE"},
		{"e\u0301", "\u00e9"}, // decomposed and composed é
	}
	for _, pair := range same {
		if identityKey(pair[0]) != identityKey(pair[1]) {
			t.Errorf("%q and %q should be the same identity", pair[0], pair[1])
		}
	}
	if identityKey("Ada") == identityKey("Ida") {
		t.Error("different names share a key")
	}
}

func TestCountryListIsComplete(t *testing.T) {
	if len(countries) != 249 {
		t.Fatalf("%d codes, ISO 3166-1 assigns 249", len(countries))
	}
}
