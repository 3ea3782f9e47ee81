package passport

import (
	"context"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Visible is nil when by sees asset (the copy refreshed
// first: a grant or transfer committed before the call is in force), and
// otherwise the 404 of an asset that does not exist: the one check of
// everything a passport answers for an asset (docs/events.md, "Who sees
// which event").
func Visible(ctx context.Context, st *Store, by model.Caller, asset uuid.UUID) error {
	seen, err := st.Access().Sees(ctx, by, asset.String())
	if err == nil && !seen {
		err = apperr.NotFound("asset", asset.String())
	}
	return err
}
