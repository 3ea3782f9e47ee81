package feed

import (
	"encoding/json"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
)

// kindTransfer is the kind of an asset's custody transfer, whose events
// both organizations' clients see.
const kindTransfer = "transfer"

// Scope is whose record an event is part of, which decides who sees it
// (docs/events.md, "Who sees which event").
type Scope struct {
	// Asset is the asset whose record the event is part of: the asset's
	// own events and its compliance rows', an action's, a grant's, an
	// action document's (through its action). Empty: every reader sees
	// the event, unless Parties names who does.
	Asset string
	// Action is an action document's action, whose asset becomes Asset at
	// ingest (Store.scope).
	Action string
	// Parties are a transfer's two organizations: their clients alone see
	// its events.
	Parties []string
	// Access is what an asset's creation says of who sees it (its owner),
	// which the copy learns so that it knows every asset of the feed.
	Access *model.Access
}

// ScopeOf reads e's scope from its subject and data. An id that is no
// UUID names nothing (the event is then seen as one of no asset).
func ScopeOf(e outbox.Event) Scope {
	var data struct {
		AssetID string  `json:"asset_id"`
		Action  string  `json:"action_id"`
		From    string  `json:"from_organization_id"`
		To      string  `json:"to_organization_id"`
		Owner   *string `json:"owner_organization_id"`
	}
	_ = json.Unmarshal(e.Data, &data) // a body without these fields has no scope
	switch e.Subject.Kind {
	case outbox.KindAsset:
		s := Scope{Asset: uuidOrEmpty(e.Subject.ID)}
		if s.Asset != "" && e.Type == outbox.KindAsset+"."+outbox.OpCreated {
			a := model.Access{AssetID: s.Asset}
			if data.Owner != nil {
				a.OwnerOrganizationID = uuidOrEmpty(*data.Owner)
			}
			s.Access = &a
		}
		return s
	case outbox.KindCompliance:
		return Scope{Asset: uuidOrEmpty(e.Subject.ID)}
	case kindTransfer:
		from, to := uuidOrEmpty(data.From), uuidOrEmpty(data.To)
		if from == "" || to == "" {
			return Scope{}
		}
		return Scope{Parties: []string{from, to}}
	case outbox.KindActionDocument:
		return Scope{Action: uuidOrEmpty(data.Action)}
	case outbox.KindOrganization, outbox.KindPerson, outbox.KindPersonOrganization, outbox.KindAssetType,
		outbox.KindDocument, outbox.KindInspectionPlan:
		return Scope{}
	}
	// An action, an asset's grant, and whatever else is recorded on an
	// asset names it in its data.
	return Scope{Asset: uuidOrEmpty(data.AssetID)}
}

func uuidOrEmpty(s string) string {
	id, err := uuid.Parse(s)
	if err != nil {
		return ""
	}
	return id.String()
}
