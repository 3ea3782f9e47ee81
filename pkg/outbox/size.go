package outbox

import "github.com/assetregistry/registry/pkg/model"

// The largest event the registry makes, from the limits on what a client
// may send. NATS's max_payload and the stream's largest message are set
// from it (MaxMessageSize): the servers tools/devinfra starts, the NATS
// settings docs/operations.md gives for a cluster, and the stream each
// relay creates, so that no event a write can make is refused for its
// size (docs/events.md, "How large an event is").
//
// An event is its envelope, data (the resource as GET answers it) and,
// for an update, changes: the old and the new value of each top-level
// field that changed. So an update is at most three representations of
// the resource (data, and every field twice in changes) and the envelope.
//
// The largest representation is an action's: data and meta_data of
// model.MaxJSONObject each as stored (numbers written out in full count,
// see model.NumberStored; strings never grow in storage, and events are
// written without Go's HTML escaping, model.Marshal), and every other
// field within MaxResourceFields. The largest event is therefore the
// update that replaces both objects and every other field of an action.
// Each service's tests hold its largest resource to MaxRepresentation.
//
// The one part of a representation no body limit bounds is a list of
// what links to a resource (an organization's associated_people, an
// asset type's documents, an action's action_documents): it grows by one
// entry with each link. MaxRepresentation leaves MaxResourceFields for
// them beyond the fields themselves; an event larger than the stream
// takes is set aside (see Relay), with an alert, and replayed once the
// operator has raised the limits.
const (
	// MaxResourceFields bounds a resource's representation besides its
	// free-form objects: an action's 2,200 characters of text at most 6
	// bytes each as JSON writes them (\u0001, or \u2028 which Go always
	// escapes), its ids, dates, booleans and audit fields (subjects of
	// at most 255 characters, auth.MaxSubjectLen), 17 KB in all, with
	// room for a few hundred linked entries.
	MaxResourceFields = 64 << 10
	// MaxRepresentation is the largest resource as GET answers it.
	MaxRepresentation = 2*model.MaxJSONObject + MaxResourceFields
	// maxEnvelope bounds id, type, time, subject, actor and request id
	// (128 characters at most) with their names.
	maxEnvelope = 4 << 10
	// MaxEventSize is the largest event as published: an update's data
	// and changes.
	MaxEventSize = 3*MaxRepresentation + maxEnvelope
	// maxMessageHeaders bounds a message's NATS headers (Nats-Msg-Id,
	// Nats-Expected-Stream), which count against max_payload too.
	maxMessageHeaders = 1 << 10
	// MaxMessageSize is what NATS's max_payload and the stream's
	// max_msg_size must allow at least: the largest event and its
	// headers, rounded up to whole MiB (2 MiB).
	MaxMessageSize = (MaxEventSize + maxMessageHeaders + 1<<20 - 1) >> 20 << 20
)
