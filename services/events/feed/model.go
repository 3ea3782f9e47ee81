// Package feed is the change feed of the events service: every event of
// the stream stored once in one order, each resource's history, a
// resource as it was at an instant (as_of), and the consumer that stores
// them.
package feed

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/apperr"
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
	// Organization is the bound caller's: only the events it sees are
	// read; "" reads every event.
	Organization string
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
	// Organization is the bound caller's ("" sees every event): a history
	// it does not see is a 404.
	Organization string
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
// due, and the components installed in it and removed from it and its
// meter readings (subject id the asset's as well); GET ?as_of reads the
// asset's own events only.
func HistoryOf(kind string) []string {
	if kind == outbox.KindAsset {
		return []string{outbox.KindAsset, outbox.KindCompliance, outbox.KindAssetComponent, outbox.KindMeterReading}
	}
	return []string{kind}
}

// AsOfQuery asks for a resource as it was at an instant.
type AsOfQuery struct {
	Kind string
	ID   uuid.UUID
	At   time.Time
	// Organization is the bound caller's ("" sees every event): a
	// resource it does not see is a 404.
	Organization string
}

// instantShape is RFC 3339's date-time (a "T" and "Z" in either case, a
// fraction of up to nine digits).
var instantShape = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$`)

// ErrInstantShape and ErrInstantValue tell a value that is no RFC 3339
// timestamp (a 400) from one that names no real instant (a 422).
var (
	ErrInstantShape = errors.New("is not an RFC 3339 timestamp such as 2025-03-14T09:26:53Z")
	ErrInstantValue = errors.New("is not a real instant: the date must exist, in years 0001 to 9999, and the time of day be valid")
)

// ParseInstant reads an RFC 3339 timestamp. A "+" of the offset that
// arrived as a space (a query written without escaping it) is read as the
// "+" it was.
func ParseInstant(s string) (time.Time, error) {
	if len(s) > 6 && s[len(s)-6] == ' ' {
		s = s[:len(s)-6] + "+" + s[len(s)-5:]
	}
	if !instantShape.MatchString(s) {
		return time.Time{}, ErrInstantShape
	}
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	if err != nil || t.Year() < 1 || s[:4] == "0000" {
		return time.Time{}, ErrInstantValue
	}
	return t.UTC(), nil
}

// Incoming is one event read from the stream: its parsed envelope and the
// bytes as published.
type Incoming struct {
	Event outbox.Event
	Raw   []byte
	// StreamSeq is the message's sequence in the stream; 0 when it did
	// not come from one.
	StreamSeq uint64
}

// StreamPosition is what the consumer named Consumer has stored of Stream:
// everything up to StreamSeq.
type StreamPosition struct {
	Consumer, Stream string
	StreamSeq        uint64
}

// canonicalID is id as the database prints a uuid, so that the ids the
// insert returns find their events (Parse accepts any form uuid.Validate
// does).
func canonicalID(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return id
}

// ErrCursorExpired is the 410 of a feed cursor from before what retention
// removed.
func errCursorExpired() error {
	e := apperr.New(apperr.KindGone, "the cursor is older than the events the registry keeps; start again without after (from the oldest kept event) or with after=now")
	e.Code = "cursor-expired"
	return e
}
