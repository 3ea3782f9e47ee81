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
	tests := []struct {
		name   string
		in     AssetTypeInput
		fields []string
		check  func(t *testing.T, out AssetTypeInput)
	}{
		{name: "minimal", in: valid, check: func(t *testing.T, out AssetTypeInput) {
			if out.ExternalIDs == nil || out.Version != nil {
				t.Errorf("out = %+v; external_ids must be an empty list", out)
			}
		}},
		{name: "brand and model required", in: AssetTypeInput{}, fields: []string{"brand", "model"}},
		{name: "blank brand", in: with(func(in *AssetTypeInput) { in.Brand = "  " }), fields: []string{"brand"}},
		{name: "blank version is none", in: with(func(in *AssetTypeInput) { in.Version = new(" ") }),
			check: func(t *testing.T, out AssetTypeInput) {
				if out.Version != nil {
					t.Errorf("version = %q", *out.Version)
				}
			}},
		{name: "text is trimmed", in: with(func(in *AssetTypeInput) { in.Brand, in.Version = " Liftmaster ", new(" 2 ") }),
			check: func(t *testing.T, out AssetTypeInput) {
				if out.Brand != "Liftmaster" || *out.Version != "2" {
					t.Errorf("out = %+v", out)
				}
			}},
		{name: "version too long", in: with(func(in *AssetTypeInput) { in.Version = new(strings.Repeat("v", LabelLen+1)) }), fields: []string{"version"}},
		{name: "external ids are trimmed", in: with(func(in *AssetTypeInput) {
			in.ExternalIDs = []ExternalID{{SourceSystem: " erp ", ExternalID: " 1 "}}
		}), check: func(t *testing.T, out AssetTypeInput) {
			if out.ExternalIDs[0] != (ExternalID{SourceSystem: "erp", ExternalID: "1"}) {
				t.Errorf("external_ids = %+v", out.ExternalIDs)
			}
		}},
		{name: "external id parts required", in: with(func(in *AssetTypeInput) {
			in.ExternalIDs = []ExternalID{{SourceSystem: "erp", ExternalID: "1"}, {SourceSystem: "", ExternalID: " "}}
		}), fields: []string{"external_ids[1].source_system", "external_ids[1].external_id"}},
		{name: "a pair given twice", in: with(func(in *AssetTypeInput) {
			in.ExternalIDs = []ExternalID{{SourceSystem: "erp", ExternalID: "1"}, {SourceSystem: "erp", ExternalID: "2"}, {SourceSystem: "erp ", ExternalID: "1"}}
		}), fields: []string{"external_ids[2]"}},
		{name: "same id in two systems", in: with(func(in *AssetTypeInput) {
			in.ExternalIDs = []ExternalID{{SourceSystem: "erp", ExternalID: "1"}, {SourceSystem: "crm", ExternalID: "1"}}
		})},
		{name: "too many external ids", in: with(func(in *AssetTypeInput) { in.ExternalIDs = many }), fields: []string{"external_ids"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.in.Normalize()
			servicetest.WantFields(t, err, tt.fields...)
			if tt.check != nil {
				tt.check(t, out)
			}
		})
	}
}

func TestAssetTypePatchApply(t *testing.T) {
	thumb := uuid.New()
	current := AssetType{Brand: "Liftmaster", Model: "LM-200", Version: new("2"), ThumbnailDocumentID: &thumb,
		ExternalIDs: []ExternalID{{SourceSystem: "erp", ExternalID: "1"}}}
	tests := []struct {
		name   string
		patch  AssetTypePatch
		fields []string
		want   func(in AssetTypeInput) bool
	}{
		{name: "empty patch changes nothing", want: func(in AssetTypeInput) bool { return reflect.DeepEqual(in, assetTypeInputOf(current)) }},
		{name: "set a field", patch: AssetTypePatch{Model: servicetest.Set("LM-300")}, want: func(in AssetTypeInput) bool { return in.Model == "LM-300" && *in.Version == "2" }},
		{name: "null removes the version", patch: AssetTypePatch{Version: servicetest.Null[string]()}, want: func(in AssetTypeInput) bool { return in.Version == nil }},
		{name: "null removes the thumbnail", patch: AssetTypePatch{ThumbnailDocumentID: servicetest.Null[model.UUID]()},
			want: func(in AssetTypeInput) bool { return in.ThumbnailDocumentID == nil }},
		{name: "null removes every external id", patch: AssetTypePatch{ExternalIDs: servicetest.Null[[]ExternalID]()},
			want: func(in AssetTypeInput) bool { return in.ExternalIDs != nil && len(in.ExternalIDs) == 0 }},
		{name: "external ids are replaced", patch: AssetTypePatch{ExternalIDs: servicetest.Set([]ExternalID{{SourceSystem: "crm", ExternalID: "9"}})},
			want: func(in AssetTypeInput) bool {
				return len(in.ExternalIDs) == 1 && in.ExternalIDs[0].SourceSystem == "crm"
			}},
		{name: "brand and model cannot be removed", patch: AssetTypePatch{Brand: servicetest.Null[string](), Model: servicetest.Null[string]()}, fields: []string{"brand", "model"}},
		{name: "the result is validated", patch: AssetTypePatch{Brand: servicetest.Set(" ")}, fields: []string{"brand"}},
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
