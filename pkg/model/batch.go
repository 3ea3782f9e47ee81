package model

import "github.com/google/uuid"

// ItemOutcome is what a service says of one item of a batch: the id of
// what it created (Created), found or updated, or the error the item alone
// would have been answered with. ETag is an updated resource's new ETag.
type ItemOutcome struct {
	ID      uuid.UUID
	Created bool
	ETag    string
	Err     error
}

// PatchItem is one item of a batch of updates (PATCH /<resources>/batch):
// the resource's id, the If-Match its write obeys as a single PATCH's
// header would ("": none) and its merge patch.
type PatchItem[P any] struct {
	ID      uuid.UUID
	IfMatch string
	Patch   P
}
