// Package passport is an asset's passport, a component of the log:
// everything the registry recorded about an asset, its type, its actions,
// their action documents and documents, as the events that recorded it,
// each with its inclusion proof against one signed checkpoint. A holder
// checks it offline with the log's public key alone (the SDK's
// VerifyPassport): the records are derived from the events, the events
// from the proofs, the proofs from the checkpoint.
package passport

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/services/events/tlog/heads"
)

// Format names the bundle's shape: 3 added the informational member,
// which a verifier of 2 (strict about members) refuses. The bundle's
// types are the SDK's too (registry.Passport), which may import nothing
// of the registry: a test of tools/crossservice holds the two the same.
const Format = "asset-registry-passport/3"

// Record is one resource as its events leave it: its latest
// state, deleted or not (and by whom), and the leaves of its events.
type Record struct {
	ID        string          `json:"id"`
	Deleted   bool            `json:"deleted"`
	DeletedAt *time.Time      `json:"deleted_at,omitempty"`
	DeletedBy *string         `json:"deleted_by,omitempty"`
	SHA256    string          `json:"sha256,omitempty"` // a document's file
	Resource  json.RawMessage `json:"resource"`
	Events    []uint64        `json:"events"`
}

// Event is one event: its bytes exactly as the log holds them
// (base64) and its inclusion proof.
type Event struct {
	LeafIndex uint64   `json:"leaf_index"`
	Event     []byte   `json:"event"`
	Proof     [][]byte `json:"proof"`
}

// passportKinds are the kinds of a passport's records, in the bundle's
// order.
var passportKinds = []string{outbox.KindAsset, outbox.KindAssetType, outbox.KindAction, outbox.KindActionDocument, outbox.KindDocument}

// passportMembers are the bundle's members after its head, in order: one
// record per kind for the asset and its type, arrays for the rest.
var passportMembers = []struct {
	name, kind string
	array      bool
}{
	{"asset", outbox.KindAsset, false},
	{"asset_type", outbox.KindAssetType, false},
	{"actions", outbox.KindAction, true},
	{"action_documents", outbox.KindActionDocument, true},
	{"documents", outbox.KindDocument, true},
	{"events", "", true},
}

// passportParts takes a passport as the store reads it: its checkpoint and
// the completeness of its asset's record against it (nil when the
// checkpoint signed no asset heads), then every record, kind by kind in
// passportKinds' order, then the events in the log's order, a batch at a
// time, then who performed each action.
type passportParts interface {
	Head(checkpoint string, c *heads.Completeness) error
	Record(kind string, r Record) error
	Events(events []Event) error
	Performers(p []Performer) error
}

// recordOf is a resource as its events leave it: the data of its latest
// one, deleted when that deleted it (by its actor, at its time), a
// document with its file's SHA-256, and the leaves of all of them.
func recordOf(leaves []int64, latest []byte) (Record, error) {
	var e outbox.Event
	if err := json.Unmarshal(latest, &e); err != nil {
		return Record{}, fmt.Errorf("passport: event at leaf %d: %w", leaves[len(leaves)-1], err)
	}
	r := Record{ID: e.Subject.ID, Resource: e.Data, Events: make([]uint64, len(leaves))}
	for i, leaf := range leaves {
		r.Events[i] = uint64(leaf)
	}
	if strings.HasSuffix(e.Type, "."+outbox.OpDeleted) {
		at, by := e.Time, e.Actor
		r.Deleted, r.DeletedAt, r.DeletedBy = true, &at, &by
	}
	if e.Subject.Kind == outbox.KindDocument {
		var d struct {
			SHA256 string `json:"sha256"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return Record{}, fmt.Errorf("passport: document %s: %w", e.Subject.ID, err)
		}
		r.SHA256 = d.SHA256
	}
	return r, nil
}

// passportWriter writes a passport as JSON while the store reads it: the
// bundle's head, then each member as its parts arrive. It holds one record
// or one batch of events at a time.
type passportWriter struct {
	w      io.Writer
	asset  string
	member int // the member open now; -1 before the first
	items  int // written into it
	// info is the last member, written by Close: its compliance is
	// known before the reading starts, its performers at its end.
	info Informational
}

func newPassportWriter(w io.Writer, asset string, compliance *Compliance) *passportWriter {
	return &passportWriter{w: w, asset: asset, member: -1,
		info: Informational{About: InformationalAbout, Compliance: compliance, Performers: []Performer{}}}
}

// Head writes the bundle's head: its format, asset, checkpoint and the
// completeness of the asset's record.
func (p *passportWriter) Head(checkpoint string, c *heads.Completeness) error {
	head, err := model.Marshal(struct {
		Format       string              `json:"format"`
		AssetID      string              `json:"asset_id"`
		Checkpoint   string              `json:"checkpoint"`
		Completeness *heads.Completeness `json:"completeness"`
	}{Format, p.asset, checkpoint, c})
	if err != nil {
		return err
	}
	// The head without its closing brace: the members follow.
	_, err = p.w.Write(head[:len(head)-1])
	return err
}

// open closes the member open now and opens those up to to, writing the
// ones without parts empty (null for the asset type).
func (p *passportWriter) open(to int) error {
	for p.member < to {
		if p.member >= 0 {
			m := passportMembers[p.member]
			closing := "]"
			if !m.array {
				closing = ""
				if p.items == 0 {
					closing = "null"
				}
			}
			if _, err := io.WriteString(p.w, closing); err != nil {
				return err
			}
		}
		p.member, p.items = p.member+1, 0
		if p.member == len(passportMembers) {
			break
		}
		m := passportMembers[p.member]
		opening := `,"` + m.name + `":`
		if m.array {
			opening += "["
		}
		if _, err := io.WriteString(p.w, opening); err != nil {
			return err
		}
	}
	return nil
}

func (p *passportWriter) item(v any) error {
	raw, err := model.Marshal(v)
	if err != nil {
		return err
	}
	if p.items > 0 {
		if !passportMembers[p.member].array {
			return fmt.Errorf("passport: a second %s", passportMembers[p.member].name)
		}
		if _, err := io.WriteString(p.w, ","); err != nil {
			return err
		}
	}
	p.items++
	_, err = p.w.Write(raw)
	return err
}

func (p *passportWriter) Record(kind string, r Record) error {
	i := slices.IndexFunc(passportMembers, func(m struct {
		name, kind string
		array      bool
	}) bool {
		return m.kind == kind
	})
	if i < p.member {
		return fmt.Errorf("passport: a %s record after the %s", kind, passportMembers[p.member].name)
	}
	if err := p.open(i); err != nil {
		return err
	}
	return p.item(r)
}

func (p *passportWriter) Events(events []Event) error {
	if err := p.open(len(passportMembers) - 1); err != nil {
		return err
	}
	for _, e := range events {
		if err := p.item(e); err != nil {
			return err
		}
	}
	return nil
}

func (p *passportWriter) Performers(performers []Performer) error {
	p.info.Performers = append(p.info.Performers, performers...)
	return nil
}

// Close ends the bundle with its informational member.
func (p *passportWriter) Close() error {
	if err := p.open(len(passportMembers)); err != nil {
		return err
	}
	info, err := model.Marshal(p.info)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(p.w, `,"informational":`); err != nil {
		return err
	}
	if _, err := p.w.Write(info); err != nil {
		return err
	}
	_, err = io.WriteString(p.w, "}\n")
	return err
}

// Bundle is a passport about to be read: what it is against and
// about how large it is (Size, in bytes, from the events it holds), and
// WriteTo, which reads it from the store and writes it as it goes.
type Bundle struct {
	AssetID    uuid.UUID
	Checkpoint tlog.Checkpoint
	Events     int64
	Size       int64
	write      func(ctx context.Context, w io.Writer) error
}

// WriteTo writes the bundle to w as it is read.
func (b Bundle) WriteTo(ctx context.Context, w io.Writer) error { return b.write(ctx, w) }

// passportTime bounds the writing of one passport (a 100 MiB one at
// 1 MiB/s takes under two minutes).
const passportTime = 5 * time.Minute

// passportSize is about how large a passport of events events of bytes
// bytes is: each event's bytes twice (once in base64, 4/3 of them) and its
// proof (at most 64 hashes in base64), and each record's data once more.
func passportSize(events, bytes int64) int64 {
	return bytes*7/3 + events*(64*46+64)
}

// Link is a passport link: a capability URL that answers the asset's
// passport without a token until it is deleted or expires. URL holds the
// token and is shown only in the answer that made the link (the registry
// keeps the token's hash alone); FetchCount and LastFetchedAt count the
// fetches through it.
type Link struct {
	ID            uuid.UUID  `json:"id"`
	AssetID       uuid.UUID  `json:"asset_id"`
	URL           string     `json:"url,omitempty" db:"-"`
	ExpiresAt     *time.Time `json:"expires_at"`
	CreatedAt     time.Time  `json:"created_at"`
	CreatedBy     string     `json:"created_by"`
	FetchCount    int64      `json:"fetch_count"`
	LastFetchedAt *time.Time `json:"last_fetched_at"`
}

// LinkInput is a new link: when it expires (nil: never).
type LinkInput struct {
	ExpiresAt *time.Time `json:"expires_at"`
}

// LinkPath names one link of an asset.
type LinkPath struct {
	AssetID, ID uuid.UUID
}

// LinkPrefix is the path of passport links under the registry's public
// address; the token follows.
const LinkPrefix = "/passports/"

// tokenBytes are the random bytes of a link's token (256 bits), written
// as base64url without padding (43 characters).
const tokenBytes = 32

// tokenHash is what the registry keeps of a token.
func tokenHash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
