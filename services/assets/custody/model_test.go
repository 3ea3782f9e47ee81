package custody

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
)

func fieldsOf(err error) string {
	e, ok := err.(*apperr.Error)
	if !ok {
		return ""
	}
	var names []string
	for _, f := range e.Fields {
		names = append(names, f.Field)
	}
	return strings.Join(names, " ")
}

// normalizes checks each body's Normalize: the fields its 422 names
// ("" for none).
func normalizes[T interface{ Normalize() (T, error) }](t *testing.T, cases map[string]string) {
	t.Helper()
	for body, fields := range cases {
		var in T
		if err := json.Unmarshal([]byte(body), &in); err != nil {
			t.Fatal(err)
		}
		if _, err := in.Normalize(); fieldsOf(err) != fields {
			t.Errorf("%s: fields %q, want %q", body, fieldsOf(err), fields)
		}
	}
}

// A grant names an organization and one of the two roles.
func TestGrantInputNormalize(t *testing.T) {
	normalizes[GrantInput](t, map[string]string{
		`{"organization_id": "0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d", "role": "read"}`:    "",
		`{"organization_id": "0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d", "role": "inspect"}`: "",
		`{"organization_id": "0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d", "role": "write"}`:   "role",
		`{"role": "read"}`: "organization_id",
		`{}`:               "organization_id role",
	})
}

// An owner change names its owner (null for none) and each asset once.
func TestOwnersInputNormalize(t *testing.T) {
	const id = `"0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d"`
	normalizes[OwnersInput](t, map[string]string{
		`{"asset_ids": [` + id + `], "owner_organization_id": ` + id + `}`:       "",
		`{"asset_ids": [` + id + `], "owner_organization_id": null}`:             "",
		`{"asset_ids": [` + id + `]}`:                                            "owner_organization_id",
		`{"asset_ids": [], "owner_organization_id": null}`:                       "asset_ids",
		`{"asset_ids": [` + id + `, ` + id + `], "owner_organization_id": null}`: "asset_ids[1]",
	})
}
