package model_test

import (
	"errors"
	"testing"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

func TestAccessRelationOf(t *testing.T) {
	const a, b, c = "a0000000-0000-4000-8000-000000000000", "b0000000-0000-4000-8000-000000000000", "c0000000-0000-4000-8000-000000000000"
	owned := model.Access{AssetID: "x", OwnerOrganizationID: a,
		Grants: []model.AssetGrant{{OrganizationID: b, Role: model.GrantRead}, {OrganizationID: c, Role: model.GrantInspect}}}
	shared := model.Access{AssetID: "y"}
	cases := []struct {
		name     string
		access   model.Access
		caller   model.Caller
		relation model.Relation
		record   apperr.Kind // 0: allowed
		manages  bool
	}{
		{"unbound client", owned, model.Caller{Subject: "u"}, model.Everything, 0, false},
		{"admin", owned, model.Caller{Subject: "u", Admin: true}, model.Everything, 0, true},
		{"owner", owned, model.Caller{Organization: a}, model.Owner, 0, true},
		{"read grantee", owned, model.Caller{Organization: b}, model.Reader, apperr.KindForbidden, false},
		{"inspect grantee", owned, model.Caller{Organization: c}, model.Inspector, 0, false},
		{"stranger", owned, model.Caller{Organization: "d0000000-0000-4000-8000-000000000000"}, model.Unseen, apperr.KindNotFound, false},
		{"no owner, bound", shared, model.Caller{Organization: b}, model.Shared, 0, false},
		{"no owner, unbound", shared, model.Caller{}, model.Everything, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.access.RelationOf(tc.caller); got != tc.relation {
				t.Fatalf("RelationOf = %d, want %d", got, tc.relation)
			}
			if got := tc.access.Sees(tc.caller); got != (tc.relation != model.Unseen) {
				t.Fatalf("Sees = %v", got)
			}
			err := tc.access.MayRecord(tc.caller)
			var e *apperr.Error
			switch {
			case tc.record == 0 && err != nil:
				t.Fatalf("MayRecord = %v, want nil", err)
			case tc.record != 0 && (!errors.As(err, &e) || e.Kind != tc.record):
				t.Fatalf("MayRecord = %v, want kind %d", err, tc.record)
			}
			if got := tc.access.ManagesAsset(tc.caller); got != tc.manages {
				t.Fatalf("ManagesAsset = %v, want %v", got, tc.manages)
			}
		})
	}
}
