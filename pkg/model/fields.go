// The field rules every service applies to its input the same way:
// trimmed required and optional text with a length
// bound, lowercase tokens, and merge-patch members that may not be removed.
// Each rule records its problem in an apperr.Validation under the field's
// JSON name and returns the normalised value, so a Normalize method reads
// as one line per field.

package model

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/assetregistry/registry/pkg/apperr"
)

// Text size limits: generous for real names and numbers, small enough that
// a runaway client cannot fill the database through one field.
const (
	NameLen   = 300
	NumberLen = 100
)

// Required trims s; blank or longer than max is a problem.
func Required(v *apperr.Validation, field, s string, max int) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		v.Add(field, "is required and must not be blank")
	case utf8.RuneCountInString(s) > max:
		v.Add(field, "must be at most %d characters", max)
	}
	return s
}

// Optional trims s; a blank value means "none" (nil).
func Optional(v *apperr.Validation, field string, s *string, max int) *string {
	if s == nil {
		return nil
	}
	t := strings.TrimSpace(*s)
	if utf8.RuneCountInString(t) > max {
		v.Add(field, "must be at most %d characters", max)
	}
	if t == "" {
		return nil
	}
	return &t
}

// tokenRule is a lowercase token: relation types, document types.
const tokenRule = `[a-z][a-z0-9_]{0,63}`

var tokenPattern = regexp.MustCompile(`^` + tokenRule + `$`)

// IsToken reports whether s is a lowercase token.
func IsToken(s string) bool { return tokenPattern.MatchString(s) }

// Token checks that s is a lowercase token; example goes into the message
// when s is missing.
func Token(v *apperr.Validation, field, s, example string) {
	switch {
	case s == "":
		v.Add(field, "is required, e.g. %s", example)
	case !IsToken(s):
		v.Add(field, "must be a lowercase token matching %s", tokenRule)
	}
}

// OneOf checks that s is one of the wire values of an enumeration
// (organization_type, action_type); missing is a problem too.
func OneOf(v *apperr.Validation, field, s string, values []string) {
	switch {
	case s == "":
		v.Add(field, "is required; one of %s", strings.Join(values, ", "))
	case !slices.Contains(values, s):
		v.Add(field, "must be one of %s", strings.Join(values, ", "))
	}
}

// Keep applies a merge-patch member to a required field: absent leaves
// dst, a value replaces it, null (removal) is a problem.
func Keep[T any](v *apperr.Validation, field string, f PatchField[T], dst *T) {
	if !f.Apply(dst) {
		v.Add(field, "is required and cannot be removed")
	}
}

// Patched ends a merge patch's Apply: the members the patch could not
// apply (v: a required one removed) are the answer; otherwise the
// patched input is normalized as a create's input is, so an update
// obeys the same rules.
func Patched[In interface{ Normalize() (In, error) }](v *apperr.Validation, in In) (In, error) {
	if err := v.Err(); err != nil {
		return in, err
	}
	return in.Normalize()
}

// Fold is the form in which names compare where the contract says
// case-insensitively (a person's names, an asset type's brand and model):
// trimmed, Unicode-normalised (NFC) and case-folded in Go, so the
// comparison does not depend on the database's locale ("Øyvind" and
// "ØYVIND" match; so do "Straße" and "STRASSE"). Stores keep it beside the
// name and put their unique indexes on it.
func Fold(s string) string {
	return cases.Fold().String(norm.NFC.String(strings.TrimSpace(s)))
}
