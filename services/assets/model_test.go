package assets

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/assets/assettypes"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestAssetInputNormalize(t *testing.T) {
	next := time.Now().UTC().Year() + 1
	valid := AssetInput{SerialNumber: "SN-1", AssetTypeID: model.ID(uuid.New())}
	with := func(f func(*AssetInput)) AssetInput { in := valid; f(&in); return in }
	tests := []struct {
		name   string
		in     AssetInput
		fields []string
	}{
		{"minimal", valid, nil},
		{"serial number and type required", AssetInput{}, []string{"serial_number", "asset_type_id"}},
		{"blank serial number", with(func(in *AssetInput) { in.SerialNumber = " \t" }), []string{"serial_number"}},
		{"first production year", with(func(in *AssetInput) { in.ProductionYear = new(1900) }), nil},
		{"before 1900", with(func(in *AssetInput) { in.ProductionYear = new(1899) }), []string{"production_year"}},
		{"next year", with(func(in *AssetInput) { in.ProductionYear = new(next) }), nil},
		{"the year after next", with(func(in *AssetInput) { in.ProductionYear = new(next + 1) }), []string{"production_year"}},
		{"two digits", with(func(in *AssetInput) { in.ProductionYear = new(21) }), []string{"production_year"}},
		{"status too long", with(func(in *AssetInput) { in.Status = new(strings.Repeat("s", statusLen+1)) }), []string{"status"}},
		{"external ids checked", with(func(in *AssetInput) { in.ExternalIDs = []assettypes.ExternalID{{SourceSystem: "erp"}} }), []string{"external_ids[0].external_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.in.Normalize()
			servicetest.WantFields(t, err, tt.fields...)
		})
	}
}

func TestAssetPatchApply(t *testing.T) {
	person := uuid.New()
	current := Asset{SerialNumber: "SN-1", AssetTypeID: uuid.New(), ProductionYear: new(2020), ResponsiblePersonID: &person, ExternalIDs: []assettypes.ExternalID{}}
	tests := []struct {
		name   string
		patch  AssetPatch
		fields []string
		want   func(in AssetInput) bool
	}{
		{name: "empty patch changes nothing", want: func(in AssetInput) bool { return reflect.DeepEqual(in, assetInputOf(current)) }},
		{name: "null removes the responsible person", patch: AssetPatch{ResponsiblePersonID: servicetest.Null[model.UUID]()},
			want: func(in AssetInput) bool { return in.ResponsiblePersonID == nil && in.ProductionYear != nil }},
		{name: "null removes the production year", patch: AssetPatch{ProductionYear: servicetest.Null[int]()},
			want: func(in AssetInput) bool { return in.ProductionYear == nil }},
		{name: "required members cannot be removed", patch: AssetPatch{SerialNumber: servicetest.Null[string](),
			AssetTypeID: servicetest.Null[model.UUID]()}, fields: []string{"serial_number", "asset_type_id"}},
		{name: "the year is checked", patch: AssetPatch{ProductionYear: servicetest.Set(1800)}, fields: []string{"production_year"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := tt.patch.Apply(current)
			servicetest.WantFields(t, err, tt.fields...)
			if tt.want != nil && !tt.want(in) {
				t.Errorf("result %+v", in)
			}
		})
	}
}

func TestAssetQueryNormalize(t *testing.T) {
	tests := []struct {
		name   string
		q      AssetQuery
		fields []string
	}{
		{"serial number only", AssetQuery{SerialNumber: "SN-1"}, nil},
		{"with brand and model", AssetQuery{SerialNumber: "SN-1", Brand: new("B"), Model: new("M")}, nil},
		{"with version", AssetQuery{SerialNumber: "SN-1", Brand: new("B"), Model: new("M"), Version: new("1")}, nil},
		{"serial number required", AssetQuery{Brand: new("B"), Model: new("M")}, []string{"serial_number"}},
		{"brand without model", AssetQuery{SerialNumber: "SN-1", Brand: new("B")}, []string{"model"}},
		{"model without brand", AssetQuery{SerialNumber: "SN-1", Model: new("M")}, []string{"brand"}},
		{"blank model is none", AssetQuery{SerialNumber: "SN-1", Brand: new("B"), Model: new(" ")}, []string{"model"}},
		{"version alone", AssetQuery{SerialNumber: "SN-1", Version: new("1")}, []string{"version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.q.Normalize()
			servicetest.WantFields(t, err, tt.fields...)
		})
	}
}
