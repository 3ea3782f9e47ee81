package servicetest

import "github.com/assetregistry/registry/pkg/model"

// Set is a merge-patch member with a new value, as the decoder makes it
// from a patch document that names the member.
func Set[T any](v T) model.PatchField[T] { return model.PatchField[T]{Set: true, Value: v} }

// Null is a merge-patch member that removes the value (null).
func Null[T any]() model.PatchField[T] { return model.PatchField[T]{Set: true, Null: true} }
