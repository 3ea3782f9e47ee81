package actions

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/tools/testkit/servicetest"
)

var day = model.Date{Year: 2025, Month: 3, Day: 14}

func TestActionInputNormalize(t *testing.T) {
	valid := ActionInput{AssetID: model.ID(uuid.New()), ActionType: "repair", PerformedAt: day}
	with := func(f func(*ActionInput)) ActionInput { in := valid; f(&in); return in }
	tests := []struct {
		name   string
		in     ActionInput
		fields []string
		check  func(t *testing.T, got ActionInput)
	}{
		{name: "required members", in: ActionInput{}, fields: []string{"asset_id", "action_type", "performed_at"}},
		{name: "every action type", in: with(func(in *ActionInput) { in.ActionType = "pre_use_inspection" })},
		{name: "a label, not a wire value", in: with(func(in *ActionInput) { in.ActionType = "Pre-use Inspection" }), fields: []string{"action_type"}},
		{name: "status_use_ok follows status_ok", in: with(func(in *ActionInput) { in.StatusOK = new(false) }),
			check: func(t *testing.T, got ActionInput) {
				if got.StatusUseOK == nil || *got.StatusUseOK {
					t.Errorf("status_use_ok = %v", got.StatusUseOK)
				}
			}},
		{name: "status_use_ok given stays", in: with(func(in *ActionInput) { in.StatusOK, in.StatusUseOK = new(false), new(true) }),
			check: func(t *testing.T, got ActionInput) {
				if !*got.StatusUseOK {
					t.Error("status_use_ok was overwritten")
				}
			}},
		{name: "blank text is none", in: with(func(in *ActionInput) { in.Status, in.SourceSystem = new("  "), new(" app ") }),
			check: func(t *testing.T, got ActionInput) {
				if got.Status != nil || *got.SourceSystem != "app" {
					t.Errorf("status %v, source_system %v", got.Status, got.SourceSystem)
				}
			}},
		{name: "long text", in: with(func(in *ActionInput) {
			in.ActionSubtype, in.Reference, in.PerformedByPerson = new(strings.Repeat("s", 101)), new(strings.Repeat("r", 101)), new(strings.Repeat("p", 301))
		}), fields: []string{"action_subtype", "performed_by_person", "reference"}},
		{name: "data in canonical form", in: with(func(in *ActionInput) { in.Data = json.RawMessage(` { "b": 1.50, "a": {"d": [1, 2], "c": "<&>"} } `) }),
			check: func(t *testing.T, got ActionInput) {
				if string(got.Data) != `{"a":{"c":"<&>","d":[1,2]},"b":1.50}` {
					t.Errorf("data = %s", got.Data)
				}
			}},
		{name: "data null is none", in: with(func(in *ActionInput) { in.Data = json.RawMessage(`null`) }),
			check: func(t *testing.T, got ActionInput) {
				if got.Data != nil {
					t.Errorf("data = %s", got.Data)
				}
			}},
		{name: "data and meta_data not objects", in: with(func(in *ActionInput) { in.Data, in.MetaData = json.RawMessage(`[1]`), json.RawMessage(`"x"`) }),
			fields: []string{"data", "meta_data"}},
		{name: "data of 256 KiB exactly", in: with(func(in *ActionInput) { in.Data = object(MaxJSONObject) })},
		{name: "data one byte over", in: with(func(in *ActionInput) { in.Data = object(MaxJSONObject + 1) }), fields: []string{"data"}},
		{name: "data nested 32 levels", in: with(func(in *ActionInput) { in.Data = nested(32) })},
		{name: "data nested 33 levels", in: with(func(in *ActionInput) { in.Data = nested(33) }), fields: []string{"data"}},
		{name: "meta_data nested 5000 levels", in: with(func(in *ActionInput) { in.MetaData = nested(5000) }), fields: []string{"meta_data"}},
		{name: "numbers count written out in full", in: with(func(in *ActionInput) {
			// 26,215 numbers of 4 characters (with their commas) are under
			// the limit as sent and 21 each, 550 KB, as stored.
			in.Data = json.RawMessage(`{"n":[` + strings.Repeat("1e19,", MaxJSONObject/5-2) + `1]}`)
		}), fields: []string{"data"}},
		{name: "numbers written out in full just within the limit", in: with(func(in *ActionInput) {
			in.Data = json.RawMessage(`{"n":[` + strings.Repeat("1e19,", (MaxJSONObject-len(`{"n":[1]}`))/21) + `1]}`)
		})},
		{name: "whitespace does not count", in: with(func(in *ActionInput) {
			in.MetaData = json.RawMessage(" " + string(object(MaxJSONObject)) + strings.Repeat(" ", 1000))
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Normalize()
			servicetest.WantFields(t, err, tt.fields...)
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

// object is a JSON object of exactly n bytes.
func object(n int) json.RawMessage {
	return json.RawMessage(`{"k":"` + strings.Repeat("x", n-len(`{"k":""}`)) + `"}`)
}

func TestActionPatchApply(t *testing.T) {
	stored := Action{AssetID: uuid.New(), ActionType: "repair", PerformedAt: day, StatusOK: new(true), StatusUseOK: new(true),
		Data: json.RawMessage(`{"brakes": "ok", "load": 1.5, "nested": {"a": 1, "b": 2}}`)}
	tests := []struct {
		name   string
		patch  ActionPatch
		fields []string
		check  func(t *testing.T, got ActionInput)
	}{
		{name: "nothing", check: func(t *testing.T, got ActionInput) {
			if got.Data == nil || *got.StatusUseOK != true {
				t.Errorf("got %+v", got)
			}
		}},
		{name: "status_ok alone sets status_use_ok", patch: ActionPatch{StatusOK: servicetest.Set(false)}, check: func(t *testing.T, got ActionInput) {
			if *got.StatusOK || *got.StatusUseOK {
				t.Errorf("status_ok %v, status_use_ok %v", *got.StatusOK, *got.StatusUseOK)
			}
		}},
		{name: "both apart", patch: ActionPatch{StatusOK: servicetest.Set(false), StatusUseOK: servicetest.Set(true)}, check: func(t *testing.T, got ActionInput) {
			if *got.StatusOK || !*got.StatusUseOK {
				t.Errorf("status_ok %v, status_use_ok %v", *got.StatusOK, *got.StatusUseOK)
			}
		}},
		{name: "status_ok removed removes status_use_ok", patch: ActionPatch{StatusOK: servicetest.Null[bool]()}, check: func(t *testing.T, got ActionInput) {
			if got.StatusOK != nil || got.StatusUseOK != nil {
				t.Errorf("status_ok %v, status_use_ok %v", got.StatusOK, got.StatusUseOK)
			}
		}},
		{name: "data merges", patch: ActionPatch{Data: servicetest.Set(json.RawMessage(`{"brakes":"worn","load":null,"nested":{"b":3}}`))},
			check: func(t *testing.T, got ActionInput) {
				if string(got.Data) != `{"brakes":"worn","nested":{"a":1,"b":3}}` {
					t.Errorf("data = %s", got.Data)
				}
			}},
		{name: "data removed", patch: ActionPatch{Data: servicetest.Null[json.RawMessage]()}, check: func(t *testing.T, got ActionInput) {
			if got.Data != nil {
				t.Errorf("data = %s", got.Data)
			}
		}},
		{name: "data replaced by a non-object", patch: ActionPatch{Data: servicetest.Set(json.RawMessage(`[1]`))}, fields: []string{"data"}},
		{name: "required members removed", patch: ActionPatch{AssetID: servicetest.Null[model.UUID](), ActionType: servicetest.Null[string](), PerformedAt: servicetest.Null[model.Date]()},
			fields: []string{"asset_id", "action_type", "performed_at"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.patch.Apply(stored)
			servicetest.WantFields(t, err, tt.fields...)
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
	// The same object in another order is no change.
	same, _ := ActionPatch{Data: servicetest.Set(json.RawMessage(`{"nested":{"b":2,"a":1},"load":1.5,"brakes":"ok"}`))}.Apply(stored)
	if string(same.Data) != string(actionInputOf(stored).Data) {
		t.Errorf("%s differs from %s", same.Data, actionInputOf(stored).Data)
	}
}

// nested is an object that nests levels objects and arrays.
func nested(levels int) json.RawMessage {
	return json.RawMessage(`{"a":` + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + `}`)
}
