// PatchField models JSON merge patch (RFC 7396) members as plain Go
// values: a member is absent (leave it), null (remove it) or a new value.

package model

import (
	"bytes"
	"encoding/json"
)

// PatchField is one member of a merge patch document.
type PatchField[T any] struct {
	Set   bool // the member was present in the patch
	Null  bool // ... with the value null
	Value T
}

// UnmarshalJSON is only called for members that are present, which is what
// tells "absent" from "null".
func (f *PatchField[T]) UnmarshalJSON(b []byte) error {
	f.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		f.Null = true
		return nil
	}
	return json.Unmarshal(b, &f.Value)
}

// Apply sets *dst to the patched value of a required member; removing it
// (null) is reported as false so the caller can name the field.
func (f PatchField[T]) Apply(dst *T) (ok bool) {
	if !f.Set {
		return true
	}
	if f.Null {
		return false
	}
	*dst = f.Value
	return true
}

// ApplyOptional sets *dst to the patched value of an optional member: null
// removes it.
func (f PatchField[T]) ApplyOptional(dst **T) {
	switch {
	case !f.Set:
	case f.Null:
		*dst = nil
	default:
		v := f.Value
		*dst = &v
	}
}

// DecodeTarget is how a strict decoder fills the member itself (pkg/httpx
// reads every body member with exact names and full paths): it records
// that the member is present and whether it is null, and returns where its
// value goes, or nil for null.
func (f *PatchField[T]) DecodeTarget(null bool) any {
	f.Set, f.Null = true, null
	if null {
		return nil
	}
	return &f.Value
}
