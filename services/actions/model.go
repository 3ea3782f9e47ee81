package actions

import (
	"bytes"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions/actiondocs"
	"github.com/assetregistry/registry/services/actions/actiontypes"
)

// ActionTypes are the interface's four categories (Expert Control,
// Maintenance, Pre-use Inspection, Repair): always action types, and the
// ones every asset has a compliance row of. An admin adds others
// (actiontypes); the service checks a write's action_type against them
// all (actiontypes.Catalog).
var ActionTypes = actiontypes.Builtin

// Action is something performed on an asset, as lists show it.
type Action struct {
	ID                      uuid.UUID       `json:"id" db:"id"`
	AssetID                 uuid.UUID       `json:"asset_id" db:"asset_id"`
	ActionType              string          `json:"action_type" db:"action_type"`
	ActionSubtype           *string         `json:"action_subtype" db:"action_subtype"`
	PerformedAt             model.Date      `json:"performed_at" db:"performed_at"`
	PersonID                *uuid.UUID      `json:"person_id" db:"person_id"`
	PerformedByPerson       *string         `json:"performed_by_person" db:"performed_by_person"`
	OrganizationID          *uuid.UUID      `json:"organization_id" db:"organization_id"`
	PerformedByOrganization *string         `json:"performed_by_organization" db:"performed_by_organization"`
	Reference               *string         `json:"reference" db:"reference"`
	Status                  *string         `json:"status" db:"status"`
	StatusOK                *bool           `json:"status_ok" db:"status_ok"`
	StatusUseOK             *bool           `json:"status_use_ok" db:"status_use_ok"`
	StatusFinalized         *bool           `json:"status_finalized" db:"status_finalized"`
	StatusValidThrough      *model.Date     `json:"status_valid_through" db:"status_valid_through"`
	SourceSystem            *string         `json:"source_system" db:"source_system"`
	SourceReference         *string         `json:"source_reference" db:"source_reference"`
	Data                    json.RawMessage `json:"data" db:"data"`           // a JSON object, or null
	MetaData                json.RawMessage `json:"meta_data" db:"meta_data"` // a JSON object, or null
	model.Audit
}

// ActionDetail is an action with its first action documents (at most
// model.MaxEmbedded, in creation order): the shape of every
// single-action answer. DocumentsTruncated says the action has more, which
// GET /actions/{action_id}/action_documents lists.
type ActionDetail struct {
	Action
	ActionDocuments    []actiondocs.ActionDocument `json:"action_documents" db:"action_documents"`
	DocumentsTruncated bool                        `json:"action_documents_truncated" db:"action_documents_truncated"`
}

// Size limits beyond validate's: a subtype is a short label, a status
// free text, a JSON member at most MaxJSONObject bytes.
const (
	labelLen  = 100
	statusLen = 1000
	// MaxJSONObject bounds data and meta_data: their JSON as stored and
	// answered (model.StoredJSONSize).
	MaxJSONObject = model.MaxJSONObject
)

var actionReadOnly = []string{"action_documents", "action_documents_truncated"}

// ReadOnlyFields names an action's service-set members.
func (ActionInput) ReadOnlyFields() []string { return actionReadOnly }

// ReadOnlyFields names an action's service-set members.
func (ActionPatch) ReadOnlyFields() []string { return actionReadOnly }

// ActionInput is what a client writes: the body of a create, and the
// result of applying a patch.
type ActionInput struct {
	AssetID                 model.UUID      `json:"asset_id"`
	ActionType              string          `json:"action_type"`
	ActionSubtype           *string         `json:"action_subtype"`
	PerformedAt             model.Date      `json:"performed_at"`
	PersonID                *model.UUID     `json:"person_id"`
	PerformedByPerson       *string         `json:"performed_by_person"`
	OrganizationID          *model.UUID     `json:"organization_id"`
	PerformedByOrganization *string         `json:"performed_by_organization"`
	Reference               *string         `json:"reference"`
	Status                  *string         `json:"status"`
	StatusOK                *bool           `json:"status_ok"`
	StatusUseOK             *bool           `json:"status_use_ok"`
	StatusFinalized         *bool           `json:"status_finalized"`
	StatusValidThrough      *model.Date     `json:"status_valid_through"`
	SourceSystem            *string         `json:"source_system"`
	SourceReference         *string         `json:"source_reference"`
	Data                    json.RawMessage `json:"data"`
	MetaData                json.RawMessage `json:"meta_data"`
}

// SourceKey is an action's sync key: the system it was recorded in and its
// reference there. Among the actions that name both, it is unique, so an
// import run again finds what it recorded.
type SourceKey struct {
	SourceSystem, SourceReference string
}

// sourceKey is the sync key of a normalized input, when it names both
// parts.
func (in ActionInput) sourceKey() (SourceKey, bool) {
	if in.SourceSystem == nil || in.SourceReference == nil {
		return SourceKey{}, false
	}
	return SourceKey{*in.SourceSystem, *in.SourceReference}, true
}

// findKey is the criterion of a find by source: both parts are required,
// as a create would store them (trimmed, within their sizes).
func (in ActionInput) findKey() (SourceKey, error) {
	var v apperr.Validation
	text := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	key := SourceKey{
		SourceSystem:    model.Required(&v, "source_system", text(in.SourceSystem), model.NumberLen),
		SourceReference: model.Required(&v, "source_reference", text(in.SourceReference), model.NameLen),
	}
	return key, v.Err()
}

// Normalize trims the text, fills in status_use_ok and checks every field.
// status_use_ok left out (or null) is status_ok: clients that do not tell
// the two apart send only status_ok.
func (in ActionInput) Normalize() (ActionInput, error) {
	if in.StatusUseOK == nil {
		in.StatusUseOK = in.StatusOK
	}
	return in.check()
}

// check trims the text and checks every field, without defaults.
func (in ActionInput) check() (ActionInput, error) {
	var v apperr.Validation
	model.RequiredID(&v, "asset_id", in.AssetID)
	actiontypes.RequireName(&v, in.ActionType)
	in.ActionSubtype = model.Optional(&v, "action_subtype", in.ActionSubtype, labelLen)
	if in.PerformedAt.IsZero() {
		v.Add("performed_at", "is required, a date in YYYY-MM-DD format")
	}
	in.PerformedByPerson = model.Optional(&v, "performed_by_person", in.PerformedByPerson, model.NameLen)
	in.PerformedByOrganization = model.Optional(&v, "performed_by_organization", in.PerformedByOrganization, model.NameLen)
	in.Reference = model.Optional(&v, "reference", in.Reference, model.NumberLen)
	in.Status = model.Optional(&v, "status", in.Status, statusLen)
	in.SourceSystem = model.Optional(&v, "source_system", in.SourceSystem, model.NumberLen)
	in.SourceReference = model.Optional(&v, "source_reference", in.SourceReference, model.NameLen)
	in.Data = jsonObject(&v, "data", in.Data)
	in.MetaData = jsonObject(&v, "meta_data", in.MetaData)
	return in, v.Err()
}

// jsonObject checks that raw (nil or null: none) is a JSON object of at
// most MaxJSONObject bytes as stored and returns it in one canonical form (compact,
// members sorted, numbers as written), so that an unchanged object
// compares equal whatever the order the client or PostgreSQL wrote its
// members in.
func jsonObject(v *apperr.Validation, field string, raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		v.Add(field, "must be a JSON object")
		return raw
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		v.Add(field, "must be a JSON object")
		return raw
	}
	// Measured as stored: PostgreSQL writes numbers out in full (1e6 as
	// 1000000), so the limit holds for what is answered and put in events.
	if size := model.StoredJSONSize(compact.Bytes()); size > MaxJSONObject {
		v.Add(field, "must be at most %d bytes of JSON (%d KiB) as stored, without insignificant whitespace and with numbers written out in full; it is %d", MaxJSONObject, MaxJSONObject>>10, size)
		return raw
	}
	if depth := model.JSONDepth(compact.Bytes()); depth > model.MaxJSONDepth {
		v.Add(field, "must nest at most %d levels of objects and arrays; it nests %d", model.MaxJSONDepth, depth)
		return raw
	}
	canonical, err := canonicalJSON(compact.Bytes())
	if err != nil {
		v.Add(field, "must be a JSON object")
		return raw
	}
	return canonical
}

// canonicalJSON re-encodes a JSON value with object members sorted and
// numbers kept exactly as written.
func canonicalJSON(raw []byte) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var value any
	if err := d.Decode(&value); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	e := json.NewEncoder(&out)
	e.SetEscapeHTML(false)
	if err := e.Encode(value); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// ActionPatch is a JSON merge patch of an action. data and meta_data are
// merged into the stored objects as RFC 7396 says (members of the patch's
// object replace or, with null, remove those of the stored one; the rest
// stay); null removes the whole object.
type ActionPatch struct {
	AssetID                 model.PatchField[model.UUID]      `json:"asset_id"`
	ActionType              model.PatchField[string]          `json:"action_type"`
	ActionSubtype           model.PatchField[string]          `json:"action_subtype"`
	PerformedAt             model.PatchField[model.Date]      `json:"performed_at"`
	PersonID                model.PatchField[model.UUID]      `json:"person_id"`
	PerformedByPerson       model.PatchField[string]          `json:"performed_by_person"`
	OrganizationID          model.PatchField[model.UUID]      `json:"organization_id"`
	PerformedByOrganization model.PatchField[string]          `json:"performed_by_organization"`
	Reference               model.PatchField[string]          `json:"reference"`
	Status                  model.PatchField[string]          `json:"status"`
	StatusOK                model.PatchField[bool]            `json:"status_ok"`
	StatusUseOK             model.PatchField[bool]            `json:"status_use_ok"`
	StatusFinalized         model.PatchField[bool]            `json:"status_finalized"`
	StatusValidThrough      model.PatchField[model.Date]      `json:"status_valid_through"`
	SourceSystem            model.PatchField[string]          `json:"source_system"`
	SourceReference         model.PatchField[string]          `json:"source_reference"`
	Data                    model.PatchField[json.RawMessage] `json:"data"`
	MetaData                model.PatchField[json.RawMessage] `json:"meta_data"`
}

// Apply returns the input that results from patching a. A patch that sets
// status_ok without naming status_use_ok sets both, as a create does.
func (p ActionPatch) Apply(a Action) (ActionInput, error) {
	in := actionInputOf(a)
	var v apperr.Validation
	model.Keep(&v, "asset_id", p.AssetID, &in.AssetID)
	model.Keep(&v, "action_type", p.ActionType, &in.ActionType)
	model.Keep(&v, "performed_at", p.PerformedAt, &in.PerformedAt)
	p.ActionSubtype.ApplyOptional(&in.ActionSubtype)
	p.PersonID.ApplyOptional(&in.PersonID)
	p.PerformedByPerson.ApplyOptional(&in.PerformedByPerson)
	p.OrganizationID.ApplyOptional(&in.OrganizationID)
	p.PerformedByOrganization.ApplyOptional(&in.PerformedByOrganization)
	p.Reference.ApplyOptional(&in.Reference)
	p.Status.ApplyOptional(&in.Status)
	p.StatusOK.ApplyOptional(&in.StatusOK)
	p.StatusUseOK.ApplyOptional(&in.StatusUseOK)
	if p.StatusOK.Set && !p.StatusUseOK.Set {
		in.StatusUseOK = in.StatusOK
	}
	p.StatusFinalized.ApplyOptional(&in.StatusFinalized)
	p.StatusValidThrough.ApplyOptional(&in.StatusValidThrough)
	p.SourceSystem.ApplyOptional(&in.SourceSystem)
	p.SourceReference.ApplyOptional(&in.SourceReference)
	in.Data = mergeObject(&v, "data", in.Data, p.Data)
	in.MetaData = mergeObject(&v, "meta_data", in.MetaData, p.MetaData)
	if err := v.Err(); err != nil {
		return in, err
	}
	return in.check()
}

// mergeObject applies the merge patch member f to the stored object.
func mergeObject(v *apperr.Validation, field string, stored json.RawMessage, f model.PatchField[json.RawMessage]) json.RawMessage {
	switch {
	case !f.Set:
		return stored
	case f.Null:
		return nil
	case stored == nil || bytes.TrimSpace(f.Value)[0] != '{':
		return f.Value // no object to merge into, or replaced by a non-object (refused by check)
	}
	merged, err := jsonpatch.MergePatch(stored, f.Value)
	if err != nil {
		v.Add(field, "could not be merged into the stored object: %v", err)
		return stored
	}
	return merged
}

// actionInputOf is what an action holds now, as an input. Its objects are
// in canonical form, so that a patch that leaves them alone, or sets them
// to what they are, changes nothing.
func actionInputOf(a Action) ActionInput {
	in := ActionInput{AssetID: model.ID(a.AssetID), ActionType: a.ActionType, ActionSubtype: a.ActionSubtype,
		PerformedAt: a.PerformedAt, PersonID: model.OptionalID(a.PersonID), PerformedByPerson: a.PerformedByPerson,
		OrganizationID: model.OptionalID(a.OrganizationID), PerformedByOrganization: a.PerformedByOrganization,
		Reference: a.Reference, Status: a.Status, StatusOK: a.StatusOK, StatusUseOK: a.StatusUseOK,
		StatusFinalized: a.StatusFinalized, StatusValidThrough: a.StatusValidThrough,
		SourceSystem: a.SourceSystem, SourceReference: a.SourceReference, Data: a.Data, MetaData: a.MetaData}
	for _, obj := range []*json.RawMessage{&in.Data, &in.MetaData} {
		if *obj != nil {
			if canonical, err := canonicalJSON(*obj); err == nil {
				*obj = canonical
			}
		}
	}
	return in
}

// ActionFilter narrows a list of actions. Dates are inclusive except
// ValidThroughBefore, which is strictly before and leaves out actions
// without status_valid_through.
type ActionFilter struct {
	AssetID, PersonID, OrganizationID *uuid.UUID
	ActionType                        *string
	StatusOK, StatusFinalized         *bool
	ValidThroughBefore                *model.Date
	PerformedFrom, PerformedTo        *model.Date
	SourceSystem, SourceReference     *string

	seenBy string // the organization a bound caller reads as ("" every action): the actions of assets it sees
}

// label is a few words naming the action in a 409 of another service.
func (a Action) label() string {
	return fmt.Sprintf("%s performed %s", a.ActionType, a.PerformedAt)
}

func sourceDuplicate(system, reference string) string {
	return fmt.Sprintf("an action with source_system %q and source_reference %q is recorded already", system, reference)
}

// jsonb is an optional object as a query argument: nil is SQL NULL, not
// the JSON null.
func jsonb(raw []byte) any {
	if raw == nil {
		return nil
	}
	return string(raw)
}
