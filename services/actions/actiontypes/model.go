package actiontypes

import (
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Builtin are the interface's four action types (Expert Control,
// Maintenance, Pre-use Inspection, Repair): always listed, and the ones
// GET /compliance has a row of for every asset.
var Builtin = []string{"expert_control", "maintenance", "pre_use_inspection", "repair"}

// ActionType is a kind of action: one of the four, or one an admin added.
type ActionType struct {
	ID          uuid.UUID `json:"-" db:"id"` // creation order, for pages
	Name        string    `json:"name" db:"name"`
	Description *string   `json:"description" db:"description"`
	CreatedAt   time.Time `json:"created_at" db:"created_at"`
	CreatedBy   string    `json:"created_by" db:"created_by"`
}

// key places a type in the list's pages.
func (t ActionType) key() uuid.UUID { return t.ID }

// ActionTypeInput is the body of POST /action_types.
type ActionTypeInput struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// ReadOnlyFields are the fields the service sets.
func (ActionTypeInput) ReadOnlyFields() []string { return []string{"created_at", "created_by"} }

// namePattern is an action type's name: a lowercase token of two to 64
// characters.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{1,63}$`)

// What a create is refused for, besides its input: the service's 409s.
var (
	errTaken = errors.New("the name is taken")
	errFull  = errors.New("the registry holds MaxTypes action types")
)

// IsName reports whether s is shaped like an action type's name.
func IsName(s string) bool { return namePattern.MatchString(s) }

// RequireName is the part of action_type's rule that needs no lookup:
// present, and shaped like a type's name. The catalog says whether the
// type exists (Catalog.Check).
func RequireName(v *apperr.Validation, actionType string) {
	switch {
	case actionType == "":
		v.Add("action_type", "is required; one of the action types GET /action_types lists, e.g. %s", strings.Join(Builtin, ", "))
	case !IsName(actionType):
		v.Add("action_type", "must be one of the action types GET /action_types lists, e.g. %s", strings.Join(Builtin, ", "))
	}
}

// descriptionLen bounds a description.
const descriptionLen = 1000

// MaxTypes bounds how many action types the registry holds: GET
// /compliance's cursor places a type by its rank in one byte.
const MaxTypes = 255

// Normalize checks the name and trims the description.
func (in ActionTypeInput) Normalize() (ActionTypeInput, error) {
	var v apperr.Validation
	switch {
	case in.Name == "":
		v.Add("name", "is required, a lowercase token such as load_test")
	case !namePattern.MatchString(in.Name):
		v.Add("name", "must match %s: a lowercase letter, then 1 to 63 lowercase letters, digits or underscores", namePattern)
	}
	in.Description = model.Optional(&v, "description", in.Description, descriptionLen)
	return in, v.Err()
}

// ActionTypeFilter narrows the list (nothing today: every type is listed).
type ActionTypeFilter struct{}
