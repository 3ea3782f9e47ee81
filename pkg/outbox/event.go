// Package outbox turns every committed write of a service into a change
// event: the write stores its event in the service's own schema in the same
// transaction (so a rolled-back write leaves none and a crash after the
// commit loses none), and a relay publishes the stored events, oldest
// first, to one NATS JetStream stream that the events deployable (the
// change feed, histories, webhooks) and other read models consume.
//
// This file is the wire shape every producer and consumer shares.
package outbox

import (
	"encoding/json"
	"strings"
	"time"
)

// The stream every service's relay publishes to and every consumer reads.
// A message's subject is Subject(kind, id); its Nats-Msg-Id header is the
// event's id, so JetStream drops a second publish of the same event.
const (
	StreamName    = "REGISTRY_EVENTS"
	SubjectPrefix = "registry.events"
)

// The kinds of things whose writes produce events; an event's type is
// "<kind>.<op>".
const (
	KindOrganization       = "organization"
	KindPerson             = "person"
	KindPersonOrganization = "person_organization"
	KindAssetType          = "asset_type"
	KindAsset              = "asset"
	KindAction             = "action"
	KindActionDocument     = "action_document"
	KindDocument           = "document"
	KindInspectionPlan     = "inspection_plan"
	// KindCompliance is an asset's compliance rows (subject id: the
	// asset's): compliance.updated when a row's state changes.
	KindCompliance = "compliance"
	// KindAssetComponent is a component installed in (created) or removed
	// from (deleted) an asset; subject id: that asset's.
	KindAssetComponent = "asset_component"
	// KindMeterReading is a reading of one of an asset's meters; subject
	// id: the asset's.
	KindMeterReading = "meter_reading"
	// KindActionType is an action type an admin added; subject id: its
	// name.
	KindActionType = "action_type"
	// KindAssetGrant is an organization's grant on an asset (subject id:
	// "<asset_id>:<organization_id>"; data carries asset_id).
	KindAssetGrant = "asset_grant"
	// KindTransfer is an asset's transfer to another organization.
	KindTransfer = "transfer"
)

// Kinds lists every kind, in the order the documentation names them.
var Kinds = []string{
	KindOrganization, KindPerson, KindPersonOrganization, KindAssetType,
	KindAsset, KindAction, KindActionDocument, KindDocument, KindInspectionPlan,
	KindCompliance, KindAssetComponent, KindMeterReading, KindActionType, KindAssetGrant, KindTransfer,
}

// The operations of an event's type.
const (
	OpCreated = "created"
	OpUpdated = "updated"
	OpDeleted = "deleted"
)

// Event is one committed change, as producers publish it and clients read
// it from GET /events, histories and webhook deliveries.
type Event struct {
	ID        string          `json:"id"`   // UUIDv7
	Type      string          `json:"type"` // "<kind>.<op>"
	Time      time.Time       `json:"time"` // the write's commit time, UTC
	Subject   EventSubject    `json:"subject"`
	Actor     string          `json:"actor"` // the token's sub
	RequestID string          `json:"request_id"`
	Data      json.RawMessage `json:"data"` // the resource as GET returns it after the change (before, for a delete)
	// Changes is set on updates only: {field: [old, new]} for each
	// top-level field that changed.
	Changes map[string][2]json.RawMessage `json:"changes,omitempty"`
}

// EventSubject names the thing an event is about. A person-organization
// link's id is "<person_id>:<organization_id>:<relation_type>".
type EventSubject struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// Subject is the NATS subject of an event about (kind, id). Characters a
// NATS subject token cannot hold ('.', '*', '>', spaces) do not occur in
// ids; a link's ':'-joined id is one token.
func Subject(kind, id string) string {
	return SubjectPrefix + "." + kind + "." + id
}

// KindFromSubject is the kind of a message's subject, "" when the subject
// is not one of SubjectPrefix's.
func KindFromSubject(subject string) string {
	rest, ok := strings.CutPrefix(subject, SubjectPrefix+".")
	if !ok {
		return ""
	}
	kind, _, _ := strings.Cut(rest, ".")
	return kind
}
