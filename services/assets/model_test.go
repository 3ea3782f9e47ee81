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
	t.Parallel()
	next := time.Now().UTC().Year() + 1
	valid := AssetInput{SerialNumber: "SN-1", AssetTypeID: model.ID(uuid.New())}
	with := func(f func(*AssetInput)) AssetInput { in := valid; f(&in); return in }
	servicetest.Validations(t, AssetInput.Normalize, []servicetest.Validation[AssetInput, AssetInput]{
		{Name: "minimal", In: valid},
		{Name: "serial number and type required", In: AssetInput{}, Fields: []string{"serial_number", "asset_type_id"}},
		{Name: "blank serial number", In: with(func(in *AssetInput) { in.SerialNumber = " \t" }), Fields: []string{"serial_number"}},
		{Name: "first production year", In: with(func(in *AssetInput) { in.ProductionYear = new(1900) })},
		{Name: "before 1900", In: with(func(in *AssetInput) { in.ProductionYear = new(1899) }), Fields: []string{"production_year"}},
		{Name: "next year", In: with(func(in *AssetInput) { in.ProductionYear = new(next) })},
		{Name: "the year after next", In: with(func(in *AssetInput) { in.ProductionYear = new(next + 1) }), Fields: []string{"production_year"}},
		{Name: "two digits", In: with(func(in *AssetInput) { in.ProductionYear = new(21) }), Fields: []string{"production_year"}},
		{Name: "status too long", In: with(func(in *AssetInput) { in.Status = new(strings.Repeat("s", statusLen+1)) }), Fields: []string{"status"}},
		{Name: "external ids checked", In: with(func(in *AssetInput) { in.ExternalIDs = []assettypes.ExternalID{{SourceSystem: "erp"}} }), Fields: []string{"external_ids[0].external_id"}},
	})
}

func TestAssetPatchApply(t *testing.T) {
	t.Parallel()
	person := uuid.New()
	current := Asset{SerialNumber: "SN-1", AssetTypeID: uuid.New(), ProductionYear: new(2020), ResponsiblePersonID: &person, ExternalIDs: []assettypes.ExternalID{}}
	apply := func(p AssetPatch) (AssetInput, error) { return p.Apply(current) }
	servicetest.Validations(t, apply, []servicetest.Validation[AssetPatch, AssetInput]{
		{Name: "empty patch changes nothing", Want: func(in AssetInput) bool { return reflect.DeepEqual(in, assetInputOf(current)) }},
		{Name: "null removes the responsible person", In: AssetPatch{ResponsiblePersonID: servicetest.Null[model.UUID]()},
			Want: func(in AssetInput) bool { return in.ResponsiblePersonID == nil && in.ProductionYear != nil }},
		{Name: "null removes the production year", In: AssetPatch{ProductionYear: servicetest.Null[int]()},
			Want: func(in AssetInput) bool { return in.ProductionYear == nil }},
		{Name: "required members cannot be removed", In: AssetPatch{SerialNumber: servicetest.Null[string](),
			AssetTypeID: servicetest.Null[model.UUID]()}, Fields: []string{"serial_number", "asset_type_id"}},
		{Name: "the year is checked", In: AssetPatch{ProductionYear: servicetest.Set(1800)}, Fields: []string{"production_year"}},
	})
}

func TestAssetQueryNormalize(t *testing.T) {
	t.Parallel()
	servicetest.Validations(t, AssetQuery.Normalize, []servicetest.Validation[AssetQuery, AssetQuery]{
		{Name: "serial number only", In: AssetQuery{SerialNumber: "SN-1"}},
		{Name: "with brand and model", In: AssetQuery{SerialNumber: "SN-1", Brand: new("B"), Model: new("M")}},
		{Name: "with version", In: AssetQuery{SerialNumber: "SN-1", Brand: new("B"), Model: new("M"), Version: new("1")}},
		{Name: "serial number required", In: AssetQuery{Brand: new("B"), Model: new("M")}, Fields: []string{"serial_number"}},
		{Name: "brand without model", In: AssetQuery{SerialNumber: "SN-1", Brand: new("B")}, Fields: []string{"model"}},
		{Name: "model without brand", In: AssetQuery{SerialNumber: "SN-1", Model: new("M")}, Fields: []string{"brand"}},
		{Name: "blank model is none", In: AssetQuery{SerialNumber: "SN-1", Brand: new("B"), Model: new(" ")}, Fields: []string{"model"}},
		{Name: "version alone", In: AssetQuery{SerialNumber: "SN-1", Version: new("1")}, Fields: []string{"version"}},
	})
}
