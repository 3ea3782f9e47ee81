package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"reflect"
	"strings"
	"time"
)

// An asset's passport: everything the registry recorded about an asset
// (its type, every action on it, their action documents and documents),
// as the events that recorded it, each with its proof against one signed
// checkpoint. VerifyPassport checks it offline with the log's public key.

// PassportFormat is the bundle's format: 3 added Informational.
const PassportFormat = "asset-registry-passport/3"

// Passport is the bundle, as GET /assets/{id}/passport answers it.
type Passport struct {
	Format     string `json:"format"`
	AssetID    string `json:"asset_id"`
	Checkpoint string `json:"checkpoint"`
	// Completeness proves that Events hold every event of the asset's
	// record (the asset's, its actions', their action documents') from
	// leaf From on, up to the checkpoint.
	Completeness    *PassportCompleteness `json:"completeness"`
	Asset           PassportRecord        `json:"asset"`
	AssetType       *PassportRecord       `json:"asset_type"`
	Actions         []PassportRecord      `json:"actions"`
	ActionDocuments []PassportRecord      `json:"action_documents"`
	Documents       []PassportRecord      `json:"documents"`
	Events          []PassportEvent       `json:"events"`
	// Informational is what the bundle tells beside its proofs, which the
	// log does not prove (VerifyPassport checks only that it names the
	// passport's own asset and actions).
	Informational *PassportInformational `json:"informational"`
}

// PassportInformational is a passport's unproved part: the asset's
// compliance rows (nil when the registry has no actions service) and who
// performed each action. Members a verifier does not know are ignored
// here, unlike in the proved part.
type PassportInformational struct {
	About      string              `json:"about"`
	Compliance *PassportCompliance `json:"compliance"`
	Performers []PassportPerformer `json:"performers"`
}

// UnmarshalJSON reads the informational part leniently: a member added to
// the compliance rows or here later does not make a passport unreadable.
func (i *PassportInformational) UnmarshalJSON(b []byte) error {
	type plain PassportInformational
	return json.Unmarshal(b, (*plain)(i))
}

// PassportCompliance is the asset's rows of GET /compliance as of AsOf
// (YYYY-MM-DD), as the actions service answered them when the passport
// was made.
type PassportCompliance struct {
	AsOf string          `json:"as_of"`
	Rows []ComplianceRow `json:"rows"`
}

// PassportPerformer is who performed an action: the organization and the
// person its latest event names (nil: none), with the names the registry
// held for them at the checkpoint.
type PassportPerformer struct {
	ActionID     string         `json:"action_id"`
	Organization *PassportParty `json:"organization"`
	Person       *PassportParty `json:"person"`
}

// PassportParty is an organization or a person and its name (a person's
// first and last names; nil when the registry holds none, as for a person
// erased).
type PassportParty struct {
	ID   string  `json:"id"`
	Name *string `json:"name"`
}

// PassportRecord is a resource as its events leave it.
type PassportRecord struct {
	ID        string          `json:"id"`
	Deleted   bool            `json:"deleted"`
	DeletedAt *time.Time      `json:"deleted_at,omitempty"`
	DeletedBy *string         `json:"deleted_by,omitempty"`
	SHA256    string          `json:"sha256,omitempty"`
	Resource  json.RawMessage `json:"resource"`
	Events    []uint64        `json:"events"`
}

// PassportEvent is one event's bytes and its inclusion proof.
type PassportEvent struct {
	LeafIndex uint64   `json:"leaf_index"`
	Event     []byte   `json:"event"`
	Proof     [][]byte `json:"proof"`
}

// PassportCompleteness is the asset's chain, the leaves of the events of
// its record from leaf From on, in the log's order, and the proof of its
// head in the map of asset heads the checkpoint signs: its bucket's heads
// and the sibling hashes above the bucket, the lowest first.
type PassportCompleteness struct {
	From   uint64      `json:"from"`
	Chain  []uint64    `json:"chain"`
	Bucket []AssetHead `json:"bucket"`
	Path   [][]byte    `json:"path"`
}

// AssetHead is an asset's head: how many events its chain holds, and the
// chain's last hash.
type AssetHead struct {
	AssetID  string `json:"asset_id"`
	AssetSeq uint64 `json:"asset_seq"`
	Chain    []byte `json:"chain"`
}

// AssetPassport writes the asset's passport, as the registry answered it
// (keep these bytes: VerifyPassport checks them), to w.
func (c *Client) AssetPassport(ctx context.Context, assetID string, w io.Writer) error {
	resp, err := c.do(ctx, &call{method: http.MethodGet, path: "/assets/" + assetID + "/passport"})
	if err != nil {
		return err
	}
	_, err = w.Write(resp.body)
	return err
}

// PassportReport is what VerifyPassport checked.
type PassportReport struct {
	Checkpoint Checkpoint
	Events     int
	// Complete: the passport holds every event of the asset's record up
	// to the checkpoint, from leaf CompleteFrom on (0: all of them; more
	// when the record began before the registry kept the chains, whose
	// events before that leaf are proved but not proved complete).
	// VerifyPassport refuses a passport it cannot prove complete.
	Complete     bool
	CompleteFrom uint64
	// Files are the documents whose file was given and matched its
	// SHA-256; Missing those whose file was not given.
	Files, Missing []string
	// Informational is the passport's unproved part, checked only to
	// name the passport's asset and its actions as their events do.
	Informational *PassportInformational
}

// VerifyPassport checks a passport offline: the checkpoint's signature
// with the log's public keys, each event's inclusion proof against it,
// that no event of the asset's record was left out (verifyCompleteness),
// and that every record is exactly what its events leave it as, belongs
// to the asset, and has its events in the bundle (and no event is
// without a record). With files (a directory of document files named by
// document id, or nil), each file there must have its document's SHA-256.
// Any difference is an error wrapping ErrUnverified.
func VerifyPassport(bundle []byte, keys []string, files fs.FS) (PassportReport, error) {
	var r PassportReport
	var p Passport
	dec := json.NewDecoder(bytes.NewReader(bundle))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return r, unverified("not a passport: %v", err)
	}
	if dec.More() {
		return r, unverified("not a passport: data after it")
	}
	if p.Format != PassportFormat {
		return r, unverified("format %q, not %q", p.Format, PassportFormat)
	}
	cp, err := VerifyCheckpoint(p.Checkpoint, keys...)
	if err != nil {
		return r, err
	}
	r.Checkpoint = cp
	// The events: in the log's order, each proved.
	type subject struct{ kind, id string }
	var order []subject
	derived := map[subject]*PassportRecord{}
	for i, e := range p.Events {
		if i > 0 && e.LeafIndex <= p.Events[i-1].LeafIndex {
			return r, unverified("events are not in the log's order at leaf %d", e.LeafIndex)
		}
		if err := VerifyInclusion(cp, e.Event, InclusionProof{LeafIndex: e.LeafIndex, TreeSize: cp.TreeSize, Hashes: e.Proof}); err != nil {
			return r, err
		}
		var ev Event
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			return r, unverified("leaf %d is not an event: %v", e.LeafIndex, err)
		}
		s := subject{ev.Subject.Kind, ev.Subject.ID}
		rec := derived[s]
		if rec == nil {
			rec = &PassportRecord{ID: s.id}
			derived[s] = rec
			order = append(order, s)
		}
		rec.Events = append(rec.Events, e.LeafIndex)
		rec.Resource = ev.Data
		rec.Deleted, rec.DeletedAt, rec.DeletedBy = false, nil, nil
		if strings.HasSuffix(ev.Type, ".deleted") {
			at, by := ev.Time, ev.Actor
			rec.Deleted, rec.DeletedAt, rec.DeletedBy = true, &at, &by
		}
		if s.kind == "document" {
			var d struct {
				SHA256 string `json:"sha256"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			rec.SHA256 = d.SHA256
		}
	}
	r.Events = len(p.Events)
	if r.CompleteFrom, err = verifyCompleteness(p, cp); err != nil {
		return r, err
	}
	r.Complete = true
	// The records: each exactly its events' outcome, each subject once.
	byKind := map[string][]PassportRecord{}
	for _, s := range order {
		byKind[s.kind] = append(byKind[s.kind], *derived[s])
	}
	for kind := range byKind {
		switch kind {
		case "asset", "asset_type", "action", "action_document", "document":
		default:
			return r, unverified("an event of a %s, which a passport does not hold", kind)
		}
	}
	if len(byKind["asset"]) != 1 || byKind["asset"][0].ID != p.AssetID {
		return r, unverified("the events are not of one asset, %s", p.AssetID)
	}
	if err := sameRecords("asset", []PassportRecord{p.Asset}, byKind["asset"]); err != nil {
		return r, err
	}
	var typeRecords []PassportRecord
	if p.AssetType != nil {
		typeRecords = []PassportRecord{*p.AssetType}
	}
	if err := sameRecords("asset_type", typeRecords, byKind["asset_type"]); err != nil {
		return r, err
	}
	for _, c := range []struct {
		kind string
		got  []PassportRecord
	}{{"action", p.Actions}, {"action_document", p.ActionDocuments}, {"document", p.Documents}} {
		if err := sameRecords(c.kind, c.got, byKind[c.kind]); err != nil {
			return r, err
		}
	}
	// They belong together: the type is the asset's, every action was on
	// the asset, every action document links one of them, every document
	// is linked by one.
	if p.AssetType != nil && field(p.Asset.Resource, "asset_type_id") != p.AssetType.ID {
		return r, unverified("asset type %s is not the asset's", p.AssetType.ID)
	}
	actions, linked := map[string]bool{}, map[string]bool{}
	for _, a := range p.Actions {
		if !anyEvent(p, a, "asset_id", p.AssetID) {
			return r, unverified("action %s was never on asset %s", a.ID, p.AssetID)
		}
		actions[a.ID] = true
	}
	for _, ad := range p.ActionDocuments {
		if !actions[field(ad.Resource, "action_id")] {
			return r, unverified("action document %s links no action of the passport", ad.ID)
		}
		linked[field(ad.Resource, "document_id")] = true
	}
	if err := checkInformational(p); err != nil {
		return r, err
	}
	r.Informational = p.Informational
	for _, d := range p.Documents {
		if !linked[d.ID] {
			return r, unverified("document %s is linked by no action document of the passport", d.ID)
		}
		if files == nil {
			continue
		}
		f, err := files.Open(d.ID)
		if errors.Is(err, fs.ErrNotExist) {
			r.Missing = append(r.Missing, d.ID)
			continue
		}
		if err != nil {
			return r, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return r, err
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != d.SHA256 {
			return r, unverified("document %s: the file's SHA-256 is %s, the registry recorded %s", d.ID, got, d.SHA256)
		}
		r.Files = append(r.Files, d.ID)
	}
	return r, nil
}

// sameRecords compares records as given with those derived, in order.
func sameRecords(kind string, got, want []PassportRecord) error {
	if len(got) != len(want) {
		return unverified("%d %s records, the events make %d", len(got), kind, len(want))
	}
	for i := range got {
		g, err := normal(got[i])
		if err != nil {
			return err
		}
		w, err := normal(want[i])
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(g, w) {
			return unverified("%s %s is not what its events make of it", kind, got[i].ID)
		}
	}
	return nil
}

// normal is a record as plain JSON values, to compare.
func normal(r PassportRecord) (any, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, unverified("record %s: %v", r.ID, err)
	}
	var v any
	return v, json.Unmarshal(raw, &v)
}

// field reads a string member of a resource.
func field(resource json.RawMessage, name string) string {
	var m map[string]any
	_ = json.Unmarshal(resource, &m)
	s, _ := m[name].(string)
	return s
}

// anyEvent reports whether one of the record's events has data.name =
// value.
func anyEvent(p Passport, rec PassportRecord, name, value string) bool {
	for _, e := range p.Events {
		for _, leaf := range rec.Events {
			if leaf != e.LeafIndex {
				continue
			}
			var ev Event
			if json.Unmarshal(e.Event, &ev) == nil && field(ev.Data, name) == value {
				return true
			}
		}
	}
	return false
}

// checkInformational checks what can be checked of the unproved part:
// its rows are of the passport's asset, and each performer is of an
// action of the passport and names the organization and person that
// action's latest event names (the ids are proved; the names are not).
func checkInformational(p Passport) error {
	info := p.Informational
	if info == nil {
		return nil
	}
	if info.Compliance != nil {
		for _, row := range info.Compliance.Rows {
			if row.AssetID != p.AssetID {
				return unverified("a compliance row of asset %s, not the passport's", row.AssetID)
			}
		}
	}
	actions := map[string]PassportRecord{}
	for _, a := range p.Actions {
		actions[a.ID] = a
	}
	for _, pf := range info.Performers {
		a, ok := actions[pf.ActionID]
		if !ok {
			return unverified("a performer of action %s, which the passport does not hold", pf.ActionID)
		}
		for _, party := range []struct {
			field string
			named *PassportParty
		}{{"organization_id", pf.Organization}, {"person_id", pf.Person}} {
			id := ""
			if party.named != nil {
				id = party.named.ID
			}
			if got := field(a.Resource, party.field); got != id {
				return unverified("action %s: its performers name %s %q, its events %q", a.ID, party.field, id, got)
			}
		}
	}
	return nil
}
