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
	t.Parallel()
	valid := ActionInput{AssetID: model.ID(uuid.New()), ActionType: "repair", PerformedAt: day}
	with := func(f func(*ActionInput)) ActionInput { in := valid; f(&in); return in }
	servicetest.Validations(t, ActionInput.Normalize, []servicetest.Validation[ActionInput, ActionInput]{
		{Name: "required members", In: ActionInput{}, Fields: []string{"asset_id", "action_type", "performed_at"}},
		{Name: "every action type", In: with(func(in *ActionInput) { in.ActionType = "pre_use_inspection" })},
		{Name: "a label, not a wire value", In: with(func(in *ActionInput) { in.ActionType = "Pre-use Inspection" }), Fields: []string{"action_type"}},
		{Name: "status_use_ok follows status_ok", In: with(func(in *ActionInput) { in.StatusOK = new(false) }),
			Check: func(t *testing.T, got ActionInput) {
				if got.StatusUseOK == nil || *got.StatusUseOK {
					t.Errorf("status_use_ok = %v", got.StatusUseOK)
				}
			}},
		{Name: "status_use_ok given stays", In: with(func(in *ActionInput) { in.StatusOK, in.StatusUseOK = new(false), new(true) }),
			Check: func(t *testing.T, got ActionInput) {
				if !*got.StatusUseOK {
					t.Error("status_use_ok was overwritten")
				}
			}},
		{Name: "blank text is none", In: with(func(in *ActionInput) { in.Status, in.SourceSystem = new("  "), new(" app ") }),
			Check: func(t *testing.T, got ActionInput) {
				if got.Status != nil || *got.SourceSystem != "app" {
					t.Errorf("status %v, source_system %v", got.Status, got.SourceSystem)
				}
			}},
		{Name: "long text", In: with(func(in *ActionInput) {
			in.ActionSubtype, in.Reference, in.PerformedByPerson = new(strings.Repeat("s", 101)), new(strings.Repeat("r", 101)), new(strings.Repeat("p", 301))
		}), Fields: []string{"action_subtype", "performed_by_person", "reference"}},
		{Name: "data in canonical form", In: with(func(in *ActionInput) { in.Data = json.RawMessage(` { "b": 1.50, "a": {"d": [1, 2], "c": "<&>"} } `) }),
			Check: func(t *testing.T, got ActionInput) {
				if string(got.Data) != `{"a":{"c":"<&>","d":[1,2]},"b":1.50}` {
					t.Errorf("data = %s", got.Data)
				}
			}},
		{Name: "data null is none", In: with(func(in *ActionInput) { in.Data = json.RawMessage(`null`) }),
			Check: func(t *testing.T, got ActionInput) {
				if got.Data != nil {
					t.Errorf("data = %s", got.Data)
				}
			}},
		{Name: "data and meta_data not objects", In: with(func(in *ActionInput) { in.Data, in.MetaData = json.RawMessage(`[1]`), json.RawMessage(`"x"`) }),
			Fields: []string{"data", "meta_data"}},
		{Name: "data of 256 KiB exactly", In: with(func(in *ActionInput) { in.Data = object(MaxJSONObject) })},
		{Name: "data one byte over", In: with(func(in *ActionInput) { in.Data = object(MaxJSONObject + 1) }), Fields: []string{"data"}},
		{Name: "data nested 32 levels", In: with(func(in *ActionInput) { in.Data = nested(32) })},
		{Name: "data nested 33 levels", In: with(func(in *ActionInput) { in.Data = nested(33) }), Fields: []string{"data"}},
		{Name: "meta_data nested 5000 levels", In: with(func(in *ActionInput) { in.MetaData = nested(5000) }), Fields: []string{"meta_data"}},
		{Name: "numbers count written out in full", In: with(func(in *ActionInput) {
			// 26,215 numbers of 4 characters (with their commas) are under
			// the limit as sent and 21 each, 550 KB, as stored.
			in.Data = json.RawMessage(`{"n":[` + strings.Repeat("1e19,", MaxJSONObject/5-2) + `1]}`)
		}), Fields: []string{"data"}},
		{Name: "numbers written out in full just within the limit", In: with(func(in *ActionInput) {
			in.Data = json.RawMessage(`{"n":[` + strings.Repeat("1e19,", (MaxJSONObject-len(`{"n":[1]}`))/21) + `1]}`)
		})},
		{Name: "whitespace does not count", In: with(func(in *ActionInput) {
			in.MetaData = json.RawMessage(" " + string(object(MaxJSONObject)) + strings.Repeat(" ", 1000))
		})},
	})
}

// object is a JSON object of exactly n bytes.
func object(n int) json.RawMessage {
	return json.RawMessage(`{"k":"` + strings.Repeat("x", n-len(`{"k":""}`)) + `"}`)
}

func TestActionPatchApply(t *testing.T) {
	t.Parallel()
	stored := Action{AssetID: uuid.New(), ActionType: "repair", PerformedAt: day, StatusOK: new(true), StatusUseOK: new(true),
		Data: json.RawMessage(`{"brakes": "ok", "load": 1.5, "nested": {"a": 1, "b": 2}}`)}
	apply := func(p ActionPatch) (ActionInput, error) { return p.Apply(stored) }
	servicetest.Validations(t, apply, []servicetest.Validation[ActionPatch, ActionInput]{
		{Name: "nothing", Check: func(t *testing.T, got ActionInput) {
			if got.Data == nil || *got.StatusUseOK != true {
				t.Errorf("got %+v", got)
			}
		}},
		{Name: "status_ok alone sets status_use_ok", In: ActionPatch{StatusOK: servicetest.Set(false)}, Check: func(t *testing.T, got ActionInput) {
			if *got.StatusOK || *got.StatusUseOK {
				t.Errorf("status_ok %v, status_use_ok %v", *got.StatusOK, *got.StatusUseOK)
			}
		}},
		{Name: "both apart", In: ActionPatch{StatusOK: servicetest.Set(false), StatusUseOK: servicetest.Set(true)}, Check: func(t *testing.T, got ActionInput) {
			if *got.StatusOK || !*got.StatusUseOK {
				t.Errorf("status_ok %v, status_use_ok %v", *got.StatusOK, *got.StatusUseOK)
			}
		}},
		{Name: "status_ok removed removes status_use_ok", In: ActionPatch{StatusOK: servicetest.Null[bool]()}, Check: func(t *testing.T, got ActionInput) {
			if got.StatusOK != nil || got.StatusUseOK != nil {
				t.Errorf("status_ok %v, status_use_ok %v", got.StatusOK, got.StatusUseOK)
			}
		}},
		{Name: "data merges", In: ActionPatch{Data: servicetest.Set(json.RawMessage(`{"brakes":"worn","load":null,"nested":{"b":3}}`))},
			Check: func(t *testing.T, got ActionInput) {
				if string(got.Data) != `{"brakes":"worn","nested":{"a":1,"b":3}}` {
					t.Errorf("data = %s", got.Data)
				}
			}},
		{Name: "data removed", In: ActionPatch{Data: servicetest.Null[json.RawMessage]()}, Check: func(t *testing.T, got ActionInput) {
			if got.Data != nil {
				t.Errorf("data = %s", got.Data)
			}
		}},
		{Name: "data replaced by a non-object", In: ActionPatch{Data: servicetest.Set(json.RawMessage(`[1]`))}, Fields: []string{"data"}},
		{Name: "required members removed", In: ActionPatch{AssetID: servicetest.Null[model.UUID](), ActionType: servicetest.Null[string](), PerformedAt: servicetest.Null[model.Date]()},
			Fields: []string{"asset_id", "action_type", "performed_at"}},
	})
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
