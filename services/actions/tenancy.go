package actions

// Organizations as tenants (docs/tenancy.md): what a caller bound
// to an organization sees and records on. An action is seen with its asset,
// its action documents with their action (actiondocs asks the root,
// SeesAction and ChangesAction); model.Access decides, over the
// service's copy of who sees which asset (pkg/access), refreshed before
// each call of a bound caller. A caller bound to no organization (and an
// admin) takes none of these steps: its calls cost what they did before.

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
)

// Tenancy is what the service asks to apply the rule: the copy of the
// assets' access.
type Tenancy struct {
	Seen *access.Copy
}

// bound reports whether by sees only its organization's rows.
func bound(by model.Caller) bool { return by.Organization != "" }

// unknownAsset is what a caller is told of an asset it does not see: the
// 422 of an asset that does not exist.
func unknownAsset(id uuid.UUID) error {
	return refs.Known(nil).Missing(refs.Target{Field: "asset_id", Kind: "asset", ID: id})
}

// recordable is, for each asset of ids, nil when by may record an action
// on it, else the item's error: a 422 on asset_id for an asset by does not
// see (or that does not exist), a 403 not-permitted for one by sees
// through a read grant. An unbound caller gets no answers (all nil).
func (s *service) recordable(ctx context.Context, by model.Caller, ids []uuid.UUID) (map[uuid.UUID]error, error) {
	out := map[uuid.UUID]error{}
	if !bound(by) || len(ids) == 0 {
		return out, nil
	}
	if err := s.tenancy.Seen.Refresh(ctx); err != nil {
		return nil, err
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = id.String()
	}
	found, err := s.tenancy.Seen.Lookup(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		a, ok := found[id.String()]
		switch {
		case !ok || !a.Sees(by):
			out[id] = unknownAsset(id)
		default:
			out[id] = a.MayRecord(by)
		}
	}
	return out, nil
}

// recordableOn is recordable of one asset.
func (s *service) recordableOn(ctx context.Context, by model.Caller, id uuid.UUID) error {
	errs, err := s.recordable(ctx, by, []uuid.UUID{id})
	if err != nil {
		return err
	}
	return errs[id]
}

// seesAction is nil when by sees the action (its asset): else the 404 of
// an action that does not exist.
func (s *service) seesAction(ctx context.Context, by model.Caller, a Action) error {
	if !bound(by) {
		return nil
	}
	seen, err := s.tenancy.Seen.Sees(ctx, by, a.AssetID.String())
	if err != nil {
		return err
	}
	if !seen {
		return apperr.NotFound("action", a.ID.String())
	}
	return nil
}

// SeesAction is GetAction's answer without the action: what action
// documents ask of their action (actiondocs.Actions).
func (s *service) SeesAction(ctx context.Context, by model.Caller, id uuid.UUID) error {
	_, err := s.GetAction(ctx, by, id)
	return err
}

// ChangesAction is changesAction, for action documents (actiondocs.Actions).
func (s *service) ChangesAction(ctx context.Context, by model.Caller, id uuid.UUID) error {
	return s.changesAction(ctx, by, id)
}

// changesAction is nil when by may change the action with id (or link
// documents to it): 404 when it does not see it (or there is none), 403
// not-permitted when it sees its asset through a read grant. Only a bound
// caller is asked about; the rest of the rules are the store's, in its
// transaction.
func (s *service) changesAction(ctx context.Context, by model.Caller, id uuid.UUID) error {
	if !bound(by) {
		return nil
	}
	a, err := s.store.GetAction(ctx, id)
	if err != nil {
		return err
	}
	if err := s.seesAction(ctx, by, a.Action); err != nil {
		return err
	}
	if err := s.recordableOn(ctx, by, a.AssetID); apperr.Is(err, apperr.KindInvalid) {
		return apperr.NotFound("action", id.String()) // gone from its view since
	} else if err != nil {
		return err
	}
	return nil
}

// hideHolder is err, unless it is a 409 duplicate naming an action a
// bound caller does not see: then a conflict that names none.
func (s *service) hideHolder(ctx context.Context, by model.Caller, err error) error {
	holder, ok := existingID(err)
	if !ok || !bound(by) {
		return err
	}
	if _, gerr := s.GetAction(ctx, by, holder); apperr.Is(gerr, apperr.KindNotFound) {
		var dup *apperr.Error
		errors.As(err, &dup)
		return apperr.Conflict(dup.Detail)
	} else if gerr != nil {
		return gerr
	}
	return err
}

// hiddenHolders are, of the source pairs found (each with the action
// holding it), those whose action a bound caller does not see: their
// items answer a conflict that names no action. found loses them.
func (s *service) hiddenHolders(ctx context.Context, by model.Caller, found map[SourceKey]uuid.UUID) (map[SourceKey]bool, error) {
	hidden := map[SourceKey]bool{}
	if !bound(by) {
		return hidden, nil
	}
	for k, id := range found {
		_, err := s.GetAction(ctx, by, id)
		switch {
		case apperr.Is(err, apperr.KindNotFound):
			hidden[k] = true
			delete(found, k)
		case err != nil:
			return nil, err
		}
	}
	return hidden, nil
}
