package model

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
)

// UUID is an identifier in a request body (asset_type_id, document_id).
// It takes only the canonical 36-character form, as paths do, so one id
// has one spelling, and says so when the value is anything else: a bare
// uuid.UUID would take braces and urn:uuid: prefixes, and would report a
// number as "must be an array".
type UUID struct{ uuid.UUID }

var errNotUUID = errors.New("must be a UUID in its canonical lowercase form, e.g. 0190f5d2-7c1e-7a3b-9c4d-5e6f7a8b9c0d")

// UnmarshalJSON reads a JSON string; null leaves the zero id, which
// Required reports.
func (u *UUID) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil || len(s) != 36 || s != strings.ToLower(s) {
		return errNotUUID
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return errNotUUID
	}
	u.UUID = id
	return nil
}

// ID wraps an id the service already holds as the input type.
func ID(id uuid.UUID) UUID { return UUID{id} }

// OptionalID wraps an optional id.
func OptionalID(id *uuid.UUID) *UUID {
	if id == nil {
		return nil
	}
	return &UUID{*id}
}

// RequiredID reports a missing (or nil) id.
func RequiredID(v *apperr.Validation, field string, id UUID) uuid.UUID {
	if id.UUID == uuid.Nil {
		v.Add(field, "is required")
	}
	return id.UUID
}

// Ptr returns the optional id as the service holds it.
func (u *UUID) Ptr() *uuid.UUID {
	if u == nil {
		return nil
	}
	return &u.UUID
}
