package assettypes

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

func TestAssetTypeInputNormalize(t *testing.T) {
	valid := AssetTypeInput{Brand: "Liftmaster", Model: "LM-200"}
	with := func(f func(*AssetTypeInput)) AssetTypeInput { in := valid; f(&in); return in }
	many := make([]ExternalID, maxExternals+1)
	for i := range many {
		many[i] = ExternalID{SourceSystem: "erp", ExternalID: strconv.Itoa(i)}
	}
	servicetest.Validations(t, AssetTypeInput.Normalize, []servicetest.Validation[AssetTypeInput, AssetTypeInput]{
		{Name: "minimal", In: valid, Check: func(t *testing.T, out AssetTypeInput) {
			if out.ExternalIDs == nil || out.Version != nil {
				t.Errorf("out = %+v; external_ids must be an empty list", out)
			}
		}},
		{Name: "brand and model required", In: AssetTypeInput{}, Fields: []string{"brand", "model"}},
		{Name: "blank brand", In: with(func(in *AssetTypeInput) { in.Brand = "  " }), Fields: []string{"brand"}},
		{Name: "blank version is none", In: with(func(in *AssetTypeInput) { in.Version = new(" ") }),
			Check: func(t *testing.T, out AssetTypeInput) {
				if out.Version != nil {
					t.Errorf("version = %q", *out.Version)
				}
			}},
		{Name: "text is trimmed", In: with(func(in *AssetTypeInput) { in.Brand, in.Version = " Liftmaster ", new(" 2 ") }),
			Check: func(t *testing.T, out AssetTypeInput) {
				if out.Brand != "Liftmaster" || *out.Version != "2" {
					t.Errorf("out = %+v", out)
				}
			}},
		{Name: "version too long", In: with(func(in *AssetTypeInput) { in.Version = new(strings.Repeat("v", LabelLen+1)) }), Fields: []string{"version"}},
		{Name: "external ids are trimmed", In: with(func(in *AssetTypeInput) {
			in.ExternalIDs = []ExternalID{{SourceSystem: " erp ", ExternalID: " 1 "}}
		}), Check: func(t *testing.T, out AssetTypeInput) {
			if out.ExternalIDs[0] != (ExternalID{SourceSystem: "erp", ExternalID: "1"}) {
				t.Errorf("external_ids = %+v", out.ExternalIDs)
			}
		}},
		{Name: "external id parts required", In: with(func(in *AssetTypeInput) {
			in.ExternalIDs = []ExternalID{{SourceSystem: "erp", ExternalID: "1"}, {SourceSystem: "", ExternalID: " "}}
		}), Fields: []string{"external_ids[1].source_system", "external_ids[1].external_id"}},
		{Name: "a pair given twice", In: with(func(in *AssetTypeInput) {
			in.ExternalIDs = []ExternalID{{SourceSystem: "erp", ExternalID: "1"}, {SourceSystem: "erp", ExternalID: "2"}, {SourceSystem: "erp ", ExternalID: "1"}}
		}), Fields: []string{"external_ids[2]"}},
		{Name: "same id in two systems", In: with(func(in *AssetTypeInput) {
			in.ExternalIDs = []ExternalID{{SourceSystem: "erp", ExternalID: "1"}, {SourceSystem: "crm", ExternalID: "1"}}
		})},
		{Name: "too many external ids", In: with(func(in *AssetTypeInput) { in.ExternalIDs = many }), Fields: []string{"external_ids"}},
	})
}

func TestAssetTypePatchApply(t *testing.T) {
	thumb := uuid.New()
	current := AssetType{Brand: "Liftmaster", Model: "LM-200", Version: new("2"), ThumbnailDocumentID: &thumb,
		ExternalIDs: []ExternalID{{SourceSystem: "erp", ExternalID: "1"}}}
	apply := func(p AssetTypePatch) (AssetTypeInput, error) { return p.Apply(current) }
	servicetest.Validations(t, apply, []servicetest.Validation[AssetTypePatch, AssetTypeInput]{
		{Name: "empty patch changes nothing", Want: func(in AssetTypeInput) bool { return reflect.DeepEqual(in, assetTypeInputOf(current)) }},
		{Name: "set a field", In: AssetTypePatch{Model: servicetest.Set("LM-300")}, Want: func(in AssetTypeInput) bool { return in.Model == "LM-300" && *in.Version == "2" }},
		{Name: "null removes the version", In: AssetTypePatch{Version: servicetest.Null[string]()}, Want: func(in AssetTypeInput) bool { return in.Version == nil }},
		{Name: "null removes the thumbnail", In: AssetTypePatch{ThumbnailDocumentID: servicetest.Null[model.UUID]()},
			Want: func(in AssetTypeInput) bool { return in.ThumbnailDocumentID == nil }},
		{Name: "null removes every external id", In: AssetTypePatch{ExternalIDs: servicetest.Null[[]ExternalID]()},
			Want: func(in AssetTypeInput) bool { return in.ExternalIDs != nil && len(in.ExternalIDs) == 0 }},
		{Name: "external ids are replaced", In: AssetTypePatch{ExternalIDs: servicetest.Set([]ExternalID{{SourceSystem: "crm", ExternalID: "9"}})},
			Want: func(in AssetTypeInput) bool {
				return len(in.ExternalIDs) == 1 && in.ExternalIDs[0].SourceSystem == "crm"
			}},
		{Name: "brand and model cannot be removed", In: AssetTypePatch{Brand: servicetest.Null[string](), Model: servicetest.Null[string]()}, Fields: []string{"brand", "model"}},
		{Name: "the result is validated", In: AssetTypePatch{Brand: servicetest.Set(" ")}, Fields: []string{"brand"}},
	})
}

func TestDocumentFrom(t *testing.T) {
	id := uuid.New()
	created := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	attrs := refs.Attrs{"content_type": "image/png", "document_type": "photo", "size": "12", "sha256": "ab",
		"created_at": created.Format(time.RFC3339Nano), "created_by": "c", "sniffed_type": "image/png"}
	d, err := documentFrom(id, attrs)
	if err != nil || d.ID != id || d.Size != 12 || !d.CreatedAt.Equal(created) || d.Filename != nil || !isRasterImage(d) {
		t.Fatalf("document = %+v, %v", d, err)
	}
	attrs["filename"] = "front.png"
	if d, _ := documentFrom(id, attrs); d.Filename == nil || *d.Filename != "front.png" {
		t.Errorf("filename = %v", d.Filename)
	}
	attrs["size"] = "many"
	if _, err := documentFrom(id, attrs); err == nil {
		t.Error("a size that is not a number was accepted")
	}
	if isRasterImage(Document{ContentType: "application/pdf", SniffedType: "application/pdf"}) {
		t.Error("a PDF is not an image")
	}
}

// A thumbnail is what the file's bytes are, not what its uploader declared.
func TestIsRasterImage(t *testing.T) {
	cases := []struct {
		declared, sniffed string
		want              bool
	}{
		{"image/png", "image/png", true},
		{"image/jpeg", "image/jpeg", true},
		{"image/gif", "image/gif", true},
		{"application/octet-stream", "image/webp", true},
		{"image/svg+xml", "text/xml; charset=utf-8", false},
		{"image/png", "text/plain; charset=utf-8", false},
		{"image/bmp", "image/bmp", false},
		{"image/png", "", false}, // stored before the documents service sniffed
	}
	for _, c := range cases {
		if got := isRasterImage(Document{ContentType: c.declared, SniffedType: c.sniffed}); got != c.want {
			t.Errorf("declared %s, sniffed %q: %v, want %v", c.declared, c.sniffed, got, c.want)
		}
	}
}
