package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
)

// Ops are the operations of an event type, "<kind>.<op>".
var Ops = []string{outbox.OpCreated, outbox.OpUpdated, outbox.OpDeleted}

// TypeFilter selects events by type: exact types ("asset.created") and
// whole kinds ("action.*"). The zero value selects every event.
type TypeFilter struct {
	Types []string // exact "<kind>.<op>"
	Kinds []string // "<kind>" of a "<kind>.*"
}

// Empty reports whether the filter selects everything.
func (f TypeFilter) Empty() bool { return len(f.Types) == 0 && len(f.Kinds) == 0 }

// Matches reports whether an event of type t passes the filter.
func (f TypeFilter) Matches(t string) bool {
	if f.Empty() || slices.Contains(f.Types, t) {
		return true
	}
	kind, _, _ := strings.Cut(t, ".")
	return slices.Contains(f.Kinds, kind)
}

// Patterns are the filter's values as a client writes them.
func (f TypeFilter) Patterns() []string {
	out := slices.Clone(f.Types)
	for _, k := range f.Kinds {
		out = append(out, k+".*")
	}
	return out
}

// ParseTypes reads type patterns: "<kind>.<op>" or "<kind>.*" with a kind
// the registry has. Each problem names field (with its index when the
// values came as a JSON array, indexed is true).
func ParseTypes(v *apperr.Validation, field string, values []string, indexed bool) TypeFilter {
	var f TypeFilter
	for i, t := range values {
		name := field
		if indexed {
			name = fmt.Sprintf("%s[%d]", field, i)
		}
		kind, op, found := strings.Cut(t, ".")
		switch {
		case !found || !slices.Contains(outbox.Kinds, kind):
			v.Add(name, "%q is not an event type: use <kind>.<op> or <kind>.*, kind one of %s", t, strings.Join(outbox.Kinds, ", "))
		case op == "*":
			if !slices.Contains(f.Kinds, kind) {
				f.Kinds = append(f.Kinds, kind)
			}
		case slices.Contains(Ops, op):
			if !slices.Contains(f.Types, t) {
				f.Types = append(f.Types, t)
			}
		default:
			v.Add(name, "%q is not an event type: the operation must be one of %s or *", t, strings.Join(Ops, ", "))
		}
	}
	return f
}

// FeedQuery asks for one page of the change feed.
type FeedQuery struct {
	// After is the position of the client's cursor. Oldest (no cursor)
	// reads from the oldest kept event; Now (after=now) asks for an empty
	// page positioned after the newest.
	After  int64
	Oldest bool
	Now    bool
	Filter TypeFilter
	Limit  int
}

// Feed is one page of the change feed: the events (as stored, JSON
// objects) and the position the next page starts after.
type Feed struct {
	Events []json.RawMessage
	Next   int64
	Filter TypeFilter
}

// HistoryQuery asks for one page of a resource's history.
type HistoryQuery struct {
	Kind  string // the subject's kind, from the path's resource
	ID    uuid.UUID
	After int64
	Limit int
}

// History is one page of a resource's history; Next is 0 on the last page.
type History struct {
	Events []json.RawMessage
	Next   int64
}

// HistoryKinds maps a history path's first segment to the kind of its
// events.
var HistoryKinds = map[string]string{
	"organizations": outbox.KindOrganization,
	"people":        outbox.KindPerson,
	"asset_types":   outbox.KindAssetType,
	"assets":        outbox.KindAsset,
	"actions":       outbox.KindAction,
	"documents":     outbox.KindDocument,
}

// HistoryOf is the kinds of the events in a history of kind: an asset's
// history has its compliance rows' transitions too (compliance.updated,
// whose subject id is the asset's), so that it tells when the asset fell
// due; GET ?as_of reads the asset's own events only.
func HistoryOf(kind string) []string {
	if kind == outbox.KindAsset {
		return []string{outbox.KindAsset, outbox.KindCompliance}
	}
	return []string{kind}
}

// Webhook is a subscription as the API shows it. Secret is only set in
// the answers that create it or rotate it.
type Webhook struct {
	ID          uuid.UUID `json:"id" db:"id"`
	URL         string    `json:"url" db:"url"`
	Types       []string  `json:"types" db:"types"`
	Description *string   `json:"description" db:"description"`
	Secret      string    `json:"secret,omitempty" db:"-"`
	model.Audit
}

// WebhookInput creates a subscription.
type WebhookInput struct {
	URL         string   `json:"url"`
	Types       []string `json:"types"`
	Description *string  `json:"description"`
}

// webhookReadOnly are the members the service sets beyond the audit ones.
var webhookReadOnly = []string{"secret"}

func (WebhookInput) ReadOnlyFields() []string { return webhookReadOnly }
func (WebhookPatch) ReadOnlyFields() []string { return webhookReadOnly }

// Limits of a subscription.
const (
	MaxURLLen         = 2000
	MaxTypes          = 50
	DescriptionLength = model.NameLen
)

// Normalize checks the input's shape (the URL's address is the
// service's to check: it needs the resolver and the settings).
func (in WebhookInput) Normalize() (WebhookInput, *url.URL, error) {
	var v apperr.Validation
	u := validURL(&v, in.URL)
	in.Types = validTypes(&v, in.Types)
	in.Description = model.Optional(&v, "description", in.Description, DescriptionLength)
	return in, u, v.Err()
}

func validURL(v *apperr.Validation, raw string) *url.URL {
	if raw == "" {
		v.Add("url", "is required: the absolute https URL deliveries are sent to")
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case len(raw) > MaxURLLen:
		v.Add("url", "must be at most %d characters", MaxURLLen)
	case err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || u.Opaque != "":
		v.Add("url", "must be an absolute URL (https://host/path)")
	case u.User != nil:
		v.Add("url", "must not carry credentials")
	case u.Fragment != "":
		v.Add("url", "must not have a fragment")
	default:
		return u
	}
	return nil
}

func validTypes(v *apperr.Validation, types []string) []string {
	if len(types) == 0 {
		v.Add("types", "must name at least one event type, e.g. asset.created or action.*")
		return nil
	}
	if len(types) > MaxTypes {
		v.Add("types", "must name at most %d event types", MaxTypes)
		return nil
	}
	return ParseTypes(v, "types", types, true).Patterns()
}

// WebhookPatch changes a subscription (JSON merge patch).
type WebhookPatch struct {
	URL         model.PatchField[string]   `json:"url"`
	Types       model.PatchField[[]string] `json:"types"`
	Description model.PatchField[string]   `json:"description"`
}

// Apply returns w with the patch applied and checked.
func (p WebhookPatch) Apply(w WebhookInput) (WebhookInput, *url.URL, error) {
	var v apperr.Validation
	model.Keep(&v, "url", p.URL, &w.URL)
	model.Keep(&v, "types", p.Types, &w.Types)
	p.Description.ApplyOptional(&w.Description)
	if err := v.Err(); err != nil {
		return w, nil, err
	}
	return w.Normalize()
}

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Delivery is one event sent (or to be sent) to one subscription.
type Delivery struct {
	ID             uuid.UUID  `json:"id" db:"id"`
	EventID        uuid.UUID  `json:"event_id" db:"event_id"`
	Attempts       int        `json:"attempts" db:"attempts"`
	Status         string     `json:"status" db:"status"`
	LastStatusCode *int       `json:"last_status_code" db:"last_status_code"`
	LastError      *string    `json:"last_error" db:"last_error"`
	NextAttemptAt  *time.Time `json:"next_attempt_at" db:"next_attempt_at"`
}

// DeliveryPath names one delivery of one subscription.
type DeliveryPath struct {
	WebhookID, ID uuid.UUID
}

// The transparency log's questions and answers.

// LogCheckpoint is the latest signed checkpoint: its signed note (the
// C2SP tlog-checkpoint format, what a client verifies and keeps) and, for
// reading, what the note says.
type LogCheckpoint struct {
	Origin   string `json:"origin"`
	TreeSize uint64 `json:"tree_size"`
	RootHash []byte `json:"root_hash"`
	Note     string `json:"note"`
}

// LogKeysAnswer are the log's public keys: the one that signs now first,
// then those that signed before (a key rotation keeps old checkpoints
// verifiable).
type LogKeysAnswer struct {
	Origin string   `json:"origin"`
	Keys   []string `json:"keys"`
}

// InclusionQuery asks for the proof that an event (by id, or its leaf
// index) is in the tree of TreeSize leaves (nil: the latest checkpoint's).
type InclusionQuery struct {
	EventID   *uuid.UUID
	LeafIndex *uint64
	TreeSize  *uint64
}

// InclusionAnswer is an inclusion proof (RFC 9162 section 2.1.3): the
// hashes from the leaf's sibling up, standard base64.
type InclusionAnswer struct {
	LeafIndex uint64   `json:"leaf_index"`
	TreeSize  uint64   `json:"tree_size"`
	Hashes    [][]byte `json:"hashes"`
}

// ConsistencyQuery asks for the proof that the tree of From leaves is a
// prefix of the tree of To (nil: the latest checkpoint's).
type ConsistencyQuery struct {
	From uint64
	To   *uint64
}

// ConsistencyAnswer is a consistency proof (RFC 9162 section 2.1.4).
type ConsistencyAnswer struct {
	From   uint64   `json:"from"`
	To     uint64   `json:"to"`
	Hashes [][]byte `json:"hashes"`
}

// LogEntry is a leaf's entry: the bytes whose leaf hash the tree holds
// (standard base64), and what they are: an event, or the entry that
// records an event's redaction (RedactionEntry).
type LogEntry struct {
	LeafIndex uint64 `json:"leaf_index"`
	Type      string `json:"type"` // EntryEvent or RedactionEntryType
	Entry     []byte `json:"entry"`
}

// The types of log entries.
const (
	EntryEvent         = "event"
	RedactionEntryType = "log.redaction"
)

// AsOfQuery asks for a resource as it was at an instant.
type AsOfQuery struct {
	Kind string
	ID   uuid.UUID
	At   time.Time
}

// instantShape is RFC 3339's date-time (a "T" and "Z" in either case, a
// fraction of up to nine digits).
var instantShape = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$`)

// errInstantShape and errInstantValue tell a value that is no RFC 3339
// timestamp (a 400) from one that names no real instant (a 422).
var (
	errInstantShape = errors.New("is not an RFC 3339 timestamp such as 2025-03-14T09:26:53Z")
	errInstantValue = errors.New("is not a real instant: the date must exist, in years 0001 to 9999, and the time of day be valid")
)

// ParseInstant reads an RFC 3339 timestamp. A "+" of the offset that
// arrived as a space (a query written without escaping it) is read as the
// "+" it was.
func ParseInstant(s string) (time.Time, error) {
	if len(s) > 6 && s[len(s)-6] == ' ' {
		s = s[:len(s)-6] + "+" + s[len(s)-5:]
	}
	if !instantShape.MatchString(s) {
		return time.Time{}, errInstantShape
	}
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err != nil || t.Year() < 1 || s[:4] == "0000" {
		return time.Time{}, errInstantValue
	}
	return t.UTC(), nil
}
