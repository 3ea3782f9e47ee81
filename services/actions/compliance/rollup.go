package compliance

// include=components: a parent asset's row rolled up with its
// components' rows of the same action type (GET /compliance). The links
// come from the due component (kept from the asset events' parent_asset_id);
// the components' rows are read by the page query itself, with the
// page's day, due window, plans and tenancy, so a component's state is
// the one its own row shows.

import (
	"context"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/services/actions/due"
)

// componentPage is how many component rows one read takes.
const componentPage = 1000

// rollUp sets each row's RolledUpState: the worst of its state and its
// asset's components' (at every depth) of its action type, with the links
// that held at the end of q's as_of day, or now.
func (s *service) rollUp(ctx context.Context, q query, rows []Row) error {
	// A page has a row for each action type of an asset: each asset once.
	parents := make([]uuid.UUID, 0, len(rows))
	seen := map[uuid.UUID]bool{}
	for _, r := range rows {
		if !seen[r.AssetID] {
			seen[r.AssetID] = true
			parents = append(parents, r.AssetID)
		}
	}
	var bound *uuid.UUID
	if q.AsOf != nil {
		b := UUIDAt(endOf(*q.AsOf))
		bound = &b
	}
	links, err := s.due.Components(ctx, parents, bound)
	if err != nil {
		return err
	}
	roots := map[uuid.UUID][]uuid.UUID{} // component → the page's assets it is part of
	var components []uuid.UUID
	for _, l := range links {
		if roots[l.Component] == nil {
			components = append(components, l.Component)
		}
		roots[l.Component] = append(roots[l.Component], l.Root)
	}
	type key struct {
		asset      uuid.UUID
		actionType string
	}
	worst := map[key]string{}
	if len(components) > 0 {
		cq := q
		cq.AssetID, cq.AssetTypeID, cq.States, cq.among = nil, nil, States, components
		page := model.Page{Limit: componentPage}
		for {
			got, err := s.store.RowStates(ctx, cq, page)
			if err != nil {
				return err
			}
			for _, c := range got.Items {
				for _, root := range roots[c.AssetID] {
					k := key{root, c.ActionType}
					worst[k] = due.Worst(worst[k], c.State)
				}
			}
			if got.Next == uuid.Nil {
				break
			}
			page.After, page.AfterSub = got.Next, got.NextSub
		}
	}
	for i := range rows {
		state := rows[i].State
		if w, ok := worst[key{rows[i].AssetID, rows[i].ActionType}]; ok {
			state = due.Worst(state, w)
		}
		rows[i].RolledUpState = &state
	}
	return nil
}
