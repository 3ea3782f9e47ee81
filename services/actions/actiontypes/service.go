// Package actiontypes is the actions service's component for action
// types: the interface's four (expert_control, maintenance,
// pre_use_inspection, repair), always there, and those an admin adds with
// POST /action_types. An action's or an inspection plan's action_type must
// be one of them (Catalog). Its layers are the service's own: Service
// (this file), endpoints (endpoint.go), HTTP transport (transport.go) and
// PostgreSQL store (store.go), composed in the service's spec.go.
package actiontypes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
)

// Service is what the action types component does. Errors are
// *apperr.Error.
type Service interface {
	ListActionTypes(ctx context.Context, f ActionTypeFilter, page model.Page) (model.Paged[ActionType], error)
	// CreateActionType adds a type (an admin's write: the route says so).
	CreateActionType(ctx context.Context, by model.Caller, in ActionTypeInput) (ActionType, error)
}

type service struct{ store *Store }

// NewService returns the service over store.
func NewService(store *Store) Service { return &service{store: store} }

func (s *service) ListActionTypes(ctx context.Context, f ActionTypeFilter, page model.Page) (model.Paged[ActionType], error) {
	return s.store.ListActionTypes(ctx, f, page)
}

func (s *service) CreateActionType(ctx context.Context, by model.Caller, in ActionTypeInput) (ActionType, error) {
	norm, err := in.Normalize()
	if err == nil {
		var t ActionType
		t, err = s.store.CreateActionType(ctx, by, norm)
		return t, refused(err, norm.Name)
	}
	return ActionType{}, err
}

// refused is the 409 of a create the store refused (errTaken, errFull),
// else err.
func refused(err error, name string) error {
	switch {
	case errors.Is(err, errTaken):
		return apperr.Conflict(fmt.Sprintf("the action type %s exists already", name))
	case errors.Is(err, errFull):
		return apperr.Conflict(fmt.Sprintf("the registry holds %d action types, the most it can", MaxTypes))
	}
	return err
}

// Catalog answers which names are action types, for the writes that name
// one. Types are never deleted nor renamed, so a name once found stays
// valid and is kept in memory; a name not found is looked up in the table
// again, so a type an admin added (on any replica) is usable on the next
// call.
type Catalog struct {
	store *Store
	mu    sync.Mutex
	known []string // sorted
}

// NewCatalog returns the catalog over store.
func NewCatalog(store *Store) *Catalog { return &Catalog{store: store} }

// Names are every type's name, sorted (byte order, as GET /compliance
// orders its rows of one asset), read from the table.
func (c *Catalog) Names(ctx context.Context) ([]string, error) {
	names, err := c.store.Names(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.known = names
	c.mu.Unlock()
	return names, nil
}

// Check is nil when name is an action type, else the 422 naming field.
func (c *Catalog) Check(ctx context.Context, field, name string) error {
	c.mu.Lock()
	_, found := slices.BinarySearch(c.known, name)
	c.mu.Unlock()
	if found {
		return nil
	}
	names, err := c.Names(ctx)
	if err != nil {
		return err
	}
	if _, found := slices.BinarySearch(names, name); found {
		return nil
	}
	return apperr.Invalid(apperr.FieldError{Field: field,
		Message: "must be one of the action types GET /action_types lists: " + strings.Join(names, ", ")})
}

// CheckFilter is Check of a filter's name, if given.
func (c *Catalog) CheckFilter(ctx context.Context, field string, name *string) error {
	if name == nil {
		return nil
	}
	return c.Check(ctx, field, *name)
}

// CheckAll is Check of each of names.
func (c *Catalog) CheckAll(ctx context.Context, field string, names []string) error {
	for _, name := range names {
		if err := c.Check(ctx, field, name); err != nil {
			return err
		}
	}
	return nil
}
