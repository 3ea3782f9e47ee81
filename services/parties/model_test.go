package parties

import (
	"reflect"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestOrganizationInputNormalize(t *testing.T) {
	t.Parallel()
	valid := OrganizationInput{Name: "Acme", RegistrationNumber: "123", OrganizationType: "private"}
	with := func(f func(*OrganizationInput)) OrganizationInput { in := valid; f(&in); return in }
	servicetest.Validations(t, OrganizationInput.Normalize, []servicetest.Validation[OrganizationInput, OrganizationInput]{
		{Name: "minimal", In: valid},
		{Name: "names are trimmed", In: with(func(in *OrganizationInput) { in.Name = "  Acme  " }),
			Check: func(t *testing.T, out OrganizationInput) {
				if out.Name != "Acme" {
					t.Errorf("name = %q", out.Name)
				}
			}},
		{Name: "all required missing", In: OrganizationInput{}, Fields: []string{"name", "registration_number", "organization_type"}},
		{Name: "blank name", In: with(func(in *OrganizationInput) { in.Name = "   " }), Fields: []string{"name"}},
		{Name: "name too long", In: with(func(in *OrganizationInput) { in.Name = strings.Repeat("ø", model.NameLen+1) }), Fields: []string{"name"}},
		{Name: "name at limit (runes, not bytes)", In: with(func(in *OrganizationInput) { in.Name = strings.Repeat("ø", model.NameLen) })},
		{Name: "every organization type", In: with(func(in *OrganizationInput) { in.OrganizationType = "governmental" })},
		{Name: "display name is not a wire value", In: with(func(in *OrganizationInput) { in.OrganizationType = "Private Company" }), Fields: []string{"organization_type"}},
		{Name: "country in upper case is stored lower", In: with(func(in *OrganizationInput) { in.Country = new("NO") }),
			Check: func(t *testing.T, out OrganizationInput) {
				if *out.Country != "no" {
					t.Errorf("country = %q", *out.Country)
				}
			}},
		{Name: "unknown country", In: with(func(in *OrganizationInput) { in.Country = new("xx") }), Fields: []string{"country"}},
		{Name: "reserved code is not a country", In: with(func(in *OrganizationInput) { in.Country = new("uk") }), Fields: []string{"country"}},
		{Name: "alpha-3 is not alpha-2", In: with(func(in *OrganizationInput) { in.Country = new("nor") }), Fields: []string{"country"}},
		{Name: "tax alias becomes canonical", In: with(func(in *OrganizationInput) { in.TaxIdentificationNumber = new("NO999") }),
			Check: func(t *testing.T, out OrganizationInput) {
				if out.TaxRegistrationNumber == nil || *out.TaxRegistrationNumber != "NO999" || out.TaxIdentificationNumber != nil {
					t.Errorf("tax = %v / alias %v", out.TaxRegistrationNumber, out.TaxIdentificationNumber)
				}
			}},
		{Name: "tax and equal alias", In: with(func(in *OrganizationInput) {
			in.TaxRegistrationNumber, in.TaxIdentificationNumber = new("NO1"), new("NO1")
		})},
		{Name: "tax and different alias", In: with(func(in *OrganizationInput) {
			in.TaxRegistrationNumber, in.TaxIdentificationNumber = new("NO1"), new("NO2")
		}), Fields: []string{"tax_identification_number"}},
		{Name: "blank optional means none", In: with(func(in *OrganizationInput) { in.TaxRegistrationNumber = new(" ") }),
			Check: func(t *testing.T, out OrganizationInput) {
				if out.TaxRegistrationNumber != nil {
					t.Errorf("tax = %q", *out.TaxRegistrationNumber)
				}
			}},
	})
}

func TestOrganizationPatchApply(t *testing.T) {
	t.Parallel()
	current := Organization{Name: "Acme", RegistrationNumber: "1", OrganizationType: "private", Country: new("no"), TaxRegistrationNumber: new("T")}
	null := model.PatchField[string]{Set: true, Null: true}
	apply := func(p OrganizationPatch) (OrganizationInput, error) { return p.Apply(current) }
	servicetest.Validations(t, apply, []servicetest.Validation[OrganizationPatch, OrganizationInput]{
		{Name: "empty patch changes nothing", Want: func(in OrganizationInput) bool { return reflect.DeepEqual(in, organizationUpdater.Input(current)) }},
		{Name: "set a field", In: OrganizationPatch{Name: servicetest.Set("Acme AS")}, Want: func(in OrganizationInput) bool { return in.Name == "Acme AS" && *in.Country == "no" }},
		{Name: "null removes an optional field", In: OrganizationPatch{Country: null}, Want: func(in OrganizationInput) bool { return in.Country == nil }},
		{Name: "null cannot remove a required field", In: OrganizationPatch{Name: null, OrganizationType: null}, Fields: []string{"name", "organization_type"}},
		{Name: "alias patches the canonical field", In: OrganizationPatch{TaxIdentificationNumber: servicetest.Set("T2")},
			Want: func(in OrganizationInput) bool { return *in.TaxRegistrationNumber == "T2" }},
		{Name: "alias null removes it", In: OrganizationPatch{TaxIdentificationNumber: null},
			Want: func(in OrganizationInput) bool { return in.TaxRegistrationNumber == nil }},
		{Name: "conflicting alias", In: OrganizationPatch{TaxRegistrationNumber: servicetest.Set("A"), TaxIdentificationNumber: servicetest.Set("B")}, Fields: []string{"tax_identification_number"}},
		{Name: "patched value is validated", In: OrganizationPatch{Country: servicetest.Set("zz")}, Fields: []string{"country"}},
	})
}

func TestPersonInputNormalize(t *testing.T) {
	t.Parallel()
	tomorrow := model.DateOf(model.Today().Time().AddDate(0, 0, 1))
	servicetest.Validations(t, PersonInput.Normalize, []servicetest.Validation[PersonInput, PersonInput]{
		{Name: "names only", In: PersonInput{FirstName: "Ada", LastName: "Lovelace"}},
		{Name: "with birth date", In: PersonInput{FirstName: "Ada", LastName: "Lovelace", DateOfBirth: &model.Date{Year: 1815, Month: 12, Day: 10}}},
		{Name: "names required", In: PersonInput{}, Fields: []string{"first_name", "last_name"}},
		{Name: "blank last name", In: PersonInput{FirstName: "Ada", LastName: " \t"}, Fields: []string{"last_name"}},
		{Name: "born tomorrow", In: PersonInput{FirstName: "Ada", LastName: "Lovelace", DateOfBirth: &tomorrow}, Fields: []string{"date_of_birth"}},
	})
}

func TestLinkInputValidate(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	if len(countries) != 249 {
		t.Fatalf("%d codes, ISO 3166-1 assigns 249", len(countries))
	}
}
