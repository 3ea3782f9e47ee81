package model

import "github.com/google/uuid"

// ItemOutcome is what a service says of one item of a batch: the id of
// what it created (Created) or found, or the error the item alone would
// have been answered with.
type ItemOutcome struct {
	ID      uuid.UUID
	Created bool
	Err     error
}
