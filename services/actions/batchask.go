package actions

import (
	"context"

	"github.com/assetregistry/registry/pkg/refs"
)

// No owner is asked inside a transaction (pkg/refs): a batch of actions
// found or created in rounds, all in one transaction, asks about the
// targets of every round before it begins (askPending), and each round
// confirms what that ask learnt (askBatch). A round whose targets changed
// meanwhile is a 503 to try again, not an ask inside the transaction.

// askPending asks about the targets of the items not settled yet.
func (s *service) askPending(ctx context.Context, in []ActionInput, settled []bool) (*refs.Checked, error) {
	var all []refs.Target
	for i := range in {
		if !settled[i] {
			all = append(all, actionReferences(in[i], nil)...)
		}
	}
	return s.refs.Ask(ctx, all...)
}

// askBatch is the check of a batch's targets: what asked learnt of them
// when the batch is a round of a larger one, else a new ask.
func (s *service) askBatch(ctx context.Context, asked *refs.Checked, targets []refs.Target) (*refs.Checked, error) {
	if asked != nil {
		return asked.Of(targets...), nil
	}
	return s.refs.Ask(ctx, targets...)
}
