// Package actions is the registry's service for actions (inspections,
// repairs and other work performed on an asset). Its layers follow go-kit: Service
// (this file, plain Go types), endpoints (endpoint.go), HTTP transport
// (transport.go) and PostgreSQL store (store.go). Assets, people,
// organizations and documents belong to other services: references to
// them are kept whole with pkg/refs.
//
// The root is one of the service's components, each of the same shape
// over the one schema, which spec.go composes (docs/architecture.md,
// Components): actiondocs (action documents, the links from an action to
// a document), actiontypes (the action types), plans (inspection plans),
// compliance (GET /compliance, its read model and the projection of the
// assets; compliance/roller its transitions' events) and due (the SQL of
// when a planned row falls due).
package actions

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/refs"
	"github.com/assetregistry/registry/services/actions/actiondocs"
	"github.com/assetregistry/registry/services/actions/actiontypes"
)

// Service is what the actions service does. Errors are *apperr.Error.
type Service interface {
	CreateAction(ctx context.Context, by model.Caller, in ActionInput) (ActionDetail, error)
	// FindAction is the action holding in's (source_system,
	// source_reference), both required; with create, in is recorded when no
	// action holds them (find-or-create), and created says so.
	FindAction(ctx context.Context, by model.Caller, in ActionInput, create bool) (a ActionDetail, created bool, err error)
	// CreateActions records a batch, each item as CreateAction would, with
	// their references asked about together; errs[i] is item i's decoding
	// error. With find, an item that names both source fields is found by
	// them first, as FindAction with create does. Each outcome is an
	// item's; the error fails the whole batch.
	CreateActions(ctx context.Context, by model.Caller, in []ActionInput, errs []error, find bool) ([]model.ItemOutcome, error)
	GetAction(ctx context.Context, by model.Caller, id uuid.UUID) (ActionDetail, error)
	ListActions(ctx context.Context, by model.Caller, f ActionFilter, page model.Page) (model.Paged[Action], error)
	UpdateAction(ctx context.Context, g model.Guard, id uuid.UUID, p ActionPatch) (ActionDetail, error)
	// UpdateActions applies each item of a batch as UpdateAction would (updates.go).
	UpdateActions(ctx context.Context, g model.Guard, items []model.PatchItem[ActionPatch], errs []error) ([]model.ItemOutcome, error)
	// DeleteAction deletes the action with its action documents.
	DeleteAction(ctx context.Context, g model.Guard, id uuid.UUID) error

	// Actions are the rules of an action its action documents follow
	// (actiondocs): who sees it, who may change it.
	actiondocs.Actions
}

// service holds the rules: what an input must be, which references an
// action or an action document makes, and which list filters agree. It
// asks the owners of those references (refs.Registry.Checking, or Ask for
// a batch) and hands the store the check, which the store confirms under
// the targets' locks inside its transaction. The store speaks SQL.
type service struct {
	store *Store
	refs  *refs.Registry // the peers asked about references and deletes
	types *actiontypes.Catalog
	// tenancy is asked for callers bound to an organization only
	// (tenancy.go).
	tenancy Tenancy
}

// NewService returns the service over store, asking peers through r; the
// action types a write may name are read from the same schema (actiontypes);
// t decides what a caller bound to an organization sees and records on.
func NewService(store *Store, r *refs.Registry, t Tenancy) Service {
	return &service{store: store, refs: r,
		types: actiontypes.NewCatalog(actiontypes.NewStore(store.Store)), tenancy: t}
}

// actionReferences are the references an action makes that must exist: its
// asset and, when given, its person and organization. With old (a patch),
// only those that differ from old's: nothing left alone is asked again.
func actionReferences(in ActionInput, old *Action) []refs.Target {
	var was Action
	if old != nil {
		was = *old
	}
	changed := func(now, before *uuid.UUID) bool {
		return now != nil && (old == nil || before == nil || *before != *now)
	}
	var out []refs.Target
	if old == nil || was.AssetID != in.AssetID.UUID {
		out = append(out, refs.Target{Field: "asset_id", Kind: "asset", ID: in.AssetID.UUID})
	}
	if id := in.PersonID.Ptr(); changed(id, was.PersonID) {
		out = append(out, refs.Target{Field: "person_id", Kind: "person", ID: *id})
	}
	if id := in.OrganizationID.Ptr(); changed(id, was.OrganizationID) {
		out = append(out, refs.Target{Field: "organization_id", Kind: "organization", ID: *id})
	}
	return out
}

func (s *service) CreateAction(ctx context.Context, by model.Caller, in ActionInput) (ActionDetail, error) {
	in, err := in.Normalize()
	if err == nil {
		err = s.types.Check(ctx, "action_type", in.ActionType)
	}
	if err != nil {
		return ActionDetail{}, err
	}
	if err := s.recordableOn(ctx, by, in.AssetID.UUID); err != nil {
		return ActionDetail{}, err
	}
	a, err := refs.CheckingFor(ctx, s.refs, func(checked *refs.Checked) (ActionDetail, error) {
		return s.store.CreateAction(ctx, by, in, checked.Of(actionReferences(in, nil)...))
	})
	return a, s.hideHolder(ctx, by, err)
}

// FindAction finds first, so that the usual answer (an import run again)
// asks no peer and writes nothing. A concurrent create of the same pair
// between the look and the insert makes the insert a 409 naming its
// holder, which is then the answer: any number of concurrent calls create
// one action.
func (s *service) FindAction(ctx context.Context, by model.Caller, in ActionInput, create bool) (ActionDetail, bool, error) {
	key, err := in.findKey()
	if err != nil {
		return ActionDetail{}, false, err
	}
	found, err := s.store.ActionBySource(ctx, key)
	if err == nil {
		// Held by an action the caller does not see: not found, and
		// a conflict that names nothing for a create.
		if err = s.seesAction(ctx, by, found.Action); apperr.Is(err, apperr.KindNotFound) {
			if create {
				return ActionDetail{}, false, apperr.Conflict(sourceDuplicate(key.SourceSystem, key.SourceReference))
			}
			return ActionDetail{}, false, apperr.New(apperr.KindNotFound, fmt.Sprintf("no action has source_system %q and source_reference %q",
				key.SourceSystem, key.SourceReference))
		}
	}
	if !create || !apperr.Is(err, apperr.KindNotFound) {
		return found, false, err
	}
	a, err := s.CreateAction(ctx, by, in)
	if holder, ok := existingID(err); ok {
		if found, err = s.GetAction(ctx, by, holder); apperr.Is(err, apperr.KindNotFound) {
			err = apperr.Conflict(sourceDuplicate(key.SourceSystem, key.SourceReference))
		}
		return found, false, err
	}
	return a, err == nil, err
}

// existingID is the holder a 409 duplicate names.
func existingID(err error) (uuid.UUID, bool) {
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != "duplicate" {
		return uuid.Nil, false
	}
	id, parseErr := uuid.Parse(fmt.Sprint(e.Extensions["existing_id"]))
	return id, parseErr == nil
}

func (s *service) CreateActions(ctx context.Context, by model.Caller, in []ActionInput, errs []error, find bool) ([]model.ItemOutcome, error) {
	out := make([]model.ItemOutcome, len(in))
	for i := range in {
		if out[i].Err = errs[i]; out[i].Err == nil {
			in[i], out[i].Err = in[i].Normalize()
		}
		if out[i].Err == nil {
			out[i].Err = s.types.Check(ctx, "action_type", in[i].ActionType)
		}
	}
	if find {
		return out, s.findOrCreateActions(ctx, by, in, out)
	}
	return out, s.createActions(ctx, by, in, out, nil)
}

// createActions asks about the targets of the whole batch together, each
// owner once, before the store's transaction: an owner that cannot answer
// fails the batch, a target that does not exist only its items (asked: see askBatch).
func (s *service) createActions(ctx context.Context, by model.Caller, in []ActionInput, out []model.ItemOutcome, asked *refs.Checked) error {
	targetsOf := func(in ActionInput) []refs.Target { return actionReferences(in, nil) }
	var assets []uuid.UUID
	for i := range in {
		if out[i].Err == nil {
			assets = append(assets, in[i].AssetID.UUID)
		}
	}
	refused, err := s.recordable(ctx, by, assets)
	if err != nil {
		return err
	}
	var all []refs.Target
	for i := range in {
		if out[i].Err == nil {
			out[i].Err = refused[in[i].AssetID.UUID]
		}
		if out[i].Err == nil {
			all = append(all, targetsOf(in[i])...)
		}
	}
	checked, err := s.askBatch(ctx, asked, all)
	if err != nil {
		return err
	}
	for i := range in {
		if out[i].Err == nil {
			out[i].Err = checked.Missing(targetsOf(in[i])...)
		}
	}
	if err := s.refs.CheckingFrom(ctx, checked, func(checked *refs.Checked) error {
		return s.store.CreateActions(ctx, by, in, out, checked, targetsOf)
	}); err != nil {
		return err
	}
	for i := range out {
		out[i].Err = s.hideHolder(ctx, by, out[i].Err)
	}
	return nil
}

// findOrCreateActions is a batch whose items are found by their source
// pair before any is created: one query finds those recorded already (200),
// and the others are created in rounds that take each pair once, so an
// item whose pair an earlier item of the batch created or found answers
// that action (200) too. An item whose pair another request created
// meanwhile answers it as well (its 409's holder).
func (s *service) findOrCreateActions(ctx context.Context, by model.Caller, in []ActionInput, out []model.ItemOutcome) error {
	var keys []SourceKey
	for i := range in {
		if k, ok := in[i].sourceKey(); ok && out[i].Err == nil {
			keys = append(keys, k)
		}
	}
	found := map[SourceKey]uuid.UUID{}
	if len(keys) > 0 {
		var err error
		if found, err = s.store.actionsBySource(ctx, keys); err != nil {
			return err
		}
	}
	hidden, err := s.hiddenHolders(ctx, by, found)
	if err != nil {
		return err
	}
	settled := make([]bool, len(in))
	for i := range in {
		if k, ok := in[i].sourceKey(); ok && out[i].Err == nil && hidden[k] {
			out[i].Err = apperr.Conflict(sourceDuplicate(k.SourceSystem, k.SourceReference))
		}
		settled[i] = out[i].Err != nil
	}
	asked, err := s.askPending(ctx, in, settled)
	if err != nil {
		return err
	}
	return s.store.Together(ctx, func(ctx context.Context) error {
		for {
			var round []int
			taken := map[SourceKey]bool{}
			for i := range in {
				if settled[i] {
					continue
				}
				k, keyed := in[i].sourceKey()
				if id, ok := found[k]; keyed && ok {
					out[i], settled[i] = model.ItemOutcome{ID: id}, true
					continue
				}
				if keyed && taken[k] {
					continue // the next round, once the pair's first item is settled
				}
				taken[k] = keyed
				round = append(round, i)
			}
			if len(round) == 0 {
				return nil
			}
			batch, results := make([]ActionInput, len(round)), make([]model.ItemOutcome, len(round))
			for j, i := range round {
				batch[j] = in[i]
			}
			if err := s.createActions(ctx, by, batch, results, asked); err != nil {
				return err
			}
			for j, i := range round {
				out[i], settled[i] = results[j], true
				k, keyed := in[i].sourceKey()
				if holder, ok := existingID(results[j].Err); ok && keyed {
					out[i] = model.ItemOutcome{ID: holder}
				}
				if keyed && out[i].Err == nil {
					found[k] = out[i].ID
				}
			}
		}
	})
}

func (s *service) GetAction(ctx context.Context, by model.Caller, id uuid.UUID) (ActionDetail, error) {
	a, err := s.store.GetAction(ctx, id)
	if err == nil {
		err = s.seesAction(ctx, by, a.Action)
	}
	if err != nil {
		return ActionDetail{}, err
	}
	return a, nil
}

// UpdateAction: a bound caller changes only an action it may record on,
// and moves it only to an asset it may record on.
func (s *service) UpdateAction(ctx context.Context, g model.Guard, id uuid.UUID, p ActionPatch) (ActionDetail, error) {
	if bound(g.Caller) {
		if err := s.changesAction(ctx, g.Caller, id); err != nil {
			return ActionDetail{}, err
		}
		old, err := s.store.GetAction(ctx, id)
		if err != nil {
			return ActionDetail{}, err
		}
		if in, err := p.Apply(old.Action); err == nil && in.AssetID.UUID != old.AssetID {
			if err := s.recordableOn(ctx, g.Caller, in.AssetID.UUID); err != nil {
				return ActionDetail{}, err
			}
		}
	}
	changed := func(old Action, in ActionInput) []refs.Target { return actionReferences(in, &old) }
	apply := func(a Action) (ActionInput, error) {
		in, err := p.Apply(a)
		if err == nil && in.ActionType != a.ActionType {
			err = s.types.Check(ctx, "action_type", in.ActionType)
		}
		return in, err
	}
	if err := s.refs.Checking(ctx, func(checked *refs.Checked) error {
		return s.store.UpdateAction(ctx, g, id, apply, changed, checked)
	}); err != nil {
		return ActionDetail{}, s.hideHolder(ctx, g.Caller, err)
	}
	return s.store.GetAction(ctx, id)
}

// DeleteAction removes an action with its action documents unless
// something in another service still names it: the protocol asks the
// services that may, then runs the store's delete under g.
func (s *service) DeleteAction(ctx context.Context, g model.Guard, id uuid.UUID) error {
	if err := s.changesAction(ctx, g.Caller, id); err != nil {
		return err
	}
	current := func(ctx context.Context) (any, error) { return s.store.GetAction(ctx, id) }
	return s.refs.DeleteRow(ctx, g, "action", "actions", id, current, s.store.DeleteAction(g.Caller, id))
}

// ListActions refuses a performed_at range that ends before it starts:
// an empty answer would hide a client's mistake.
func (s *service) ListActions(ctx context.Context, by model.Caller, f ActionFilter, page model.Page) (model.Paged[Action], error) {
	if err := s.types.CheckFilter(ctx, "action_type", f.ActionType); err != nil {
		return model.Paged[Action]{}, err
	}
	if f.PerformedFrom != nil && f.PerformedTo != nil && f.PerformedTo.Before(*f.PerformedFrom) {
		return model.Paged[Action]{}, apperr.Invalid(apperr.FieldError{Field: "performed_to",
			Message: "must not be before performed_from " + f.PerformedFrom.String()})
	}
	var err error
	if f.seenBy, err = s.tenancy.Seen.ForRead(ctx, by); err != nil {
		return model.Paged[Action]{}, err
	}
	return s.store.ListActions(ctx, f, page)
}
