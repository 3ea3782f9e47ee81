// FindOne is the rule every find operation answers by: one match
// is the answer, none is a 404, several are a 409 that lists them so the
// caller can narrow the criteria.

package model

import (
	"fmt"

	"github.com/assetregistry/registry/pkg/apperr"
)

// MaxCandidates bounds what an ambiguous find lists; stores read one row
// more than this to know whether the list was cut.
const MaxCandidates = 10

// FindLimit is the LIMIT a find query uses.
const FindLimit = MaxCandidates + 1

// FindOne returns the one match of a find. summary picks what a candidate of
// an ambiguous find shows (enough to tell them apart).
func FindOne[T any](matches []T, resource string, summary func(T) any) (T, error) {
	var zero T
	switch len(matches) {
	case 0:
		return zero, apperr.New(apperr.KindNotFound, "no "+resource+" matches the criteria")
	case 1:
		return matches[0], nil
	}
	candidates := make([]any, 0, min(len(matches), MaxCandidates))
	for _, m := range matches[:min(len(matches), MaxCandidates)] {
		candidates = append(candidates, summary(m))
	}
	more := ""
	if len(matches) > MaxCandidates {
		more = fmt.Sprintf(" (first %d listed)", MaxCandidates)
	}
	return zero, apperr.Ambiguous(fmt.Sprintf("the criteria match more than one %s%s; add criteria to narrow them", resource, more), candidates)
}
