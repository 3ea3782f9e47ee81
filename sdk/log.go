package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// The registry's transparency log: every event is a leaf of one
// append-only Merkle tree (RFC 9162 hashing) whose size and root the
// registry signs (C2SP tlog-checkpoint, an Ed25519 signed note). The
// checks here need only the log's public key: keep it, and keep the
// checkpoints you verified, and a registry that changed or removed what it
// showed you cannot hide it.

// Checkpoint is a signed checkpoint of the log.
type Checkpoint struct {
	Origin   string `json:"origin"`
	TreeSize uint64 `json:"tree_size"`
	RootHash []byte `json:"root_hash"`
	// Note is the signed note: what VerifyCheckpoint checks, and what to
	// keep.
	Note string `json:"note"`
	// HeadsFrom and HeadsRoot are what the checkpoint signs of the asset
	// heads (its line "asset-heads <from> <root>"): the leaf from which
	// each asset's chain holds every event of its record, and the root of
	// the map of the heads (nil: the checkpoint signs none). A passport's
	// completeness is checked against them.
	HeadsFrom uint64 `json:"-"`
	HeadsRoot []byte `json:"-"`
}

// InclusionProof proves that leaf LeafIndex is in the tree of TreeSize.
type InclusionProof struct {
	LeafIndex uint64   `json:"leaf_index"`
	TreeSize  uint64   `json:"tree_size"`
	Hashes    [][]byte `json:"hashes"`
}

// ConsistencyProof proves that the tree of From leaves is a prefix of the
// tree of To.
type ConsistencyProof struct {
	From   uint64   `json:"from"`
	To     uint64   `json:"to"`
	Hashes [][]byte `json:"hashes"`
}

// LogKeys are the log's verifier keys, the one that signs now first.
type LogKeys struct {
	Origin string   `json:"origin"`
	Keys   []string `json:"keys"`
}

// LogEntry is a leaf's entry: Entry holds the bytes whose leaf hash the
// tree holds (prove them with LeafInclusion and VerifyInclusion), and Type
// says what they are: "event", or "log.redaction", the entry that records
// an event's redaction (read it with Redaction).
type LogEntry struct {
	LeafIndex uint64 `json:"leaf_index"`
	Type      string `json:"type"`
	Entry     []byte `json:"entry"`
}

// RedactionEntry is what a "log.redaction" entry records: an event whose
// personal fields were removed (an erasure request), the leaf hash its
// leaf keeps (the bytes as logged) and the leaf hash of its bytes since.
type RedactionEntry struct {
	Type         string    `json:"type"`
	EventID      string    `json:"event_id"`
	EventLeaf    uint64    `json:"event_leaf"`
	LeafHash     []byte    `json:"leaf_hash"`
	RedactedHash []byte    `json:"redacted_hash"`
	PersonID     string    `json:"person_id"`
	Reason       string    `json:"reason"`
	Time         time.Time `json:"time"`
	// Fields are the pointers of the personal fields whose values and
	// salts the erasure deleted, for an event whose personal fields are
	// committed (its leaf is unchanged: RedactedHash is LeafHash, and its
	// bytes served since still prove with VerifyInclusion); empty for an
	// event logged before, whose bytes as logged are gone.
	Fields []string `json:"fields,omitempty"`
}

// Redaction reads a "log.redaction" entry's bytes.
func (e LogEntry) Redaction() (RedactionEntry, error) {
	var r RedactionEntry
	if e.Type != "log.redaction" {
		return r, fmt.Errorf("registry: leaf %d is an entry of type %q, not a redaction", e.LeafIndex, e.Type)
	}
	if err := json.Unmarshal(e.Entry, &r); err != nil {
		return r, fmt.Errorf("registry: the redaction at leaf %d: %w", e.LeafIndex, err)
	}
	return r, nil
}

// LogEntry fetches the entry of a leaf. An event redacted since it was
// logged no longer has its bytes as logged: that is a *Problem of kind
// "gone" whose RedactionEntry names the leaf of the redaction's entry,
// which records the leaf hash the event's bytes had.
func (c *Client) LogEntry(ctx context.Context, leafIndex uint64) (*LogEntry, error) {
	q := url.Values{"leaf_index": {strconv.FormatUint(leafIndex, 10)}}
	return send[LogEntry](ctx, c, &call{method: http.MethodGet, path: "/log/entry", query: q}, nil)
}

// LeafInclusion is the proof that leaf leafIndex is in the tree of
// treeSize leaves (0: the latest checkpoint's).
func (c *Client) LeafInclusion(ctx context.Context, leafIndex, treeSize uint64) (*InclusionProof, error) {
	q := url.Values{"leaf_index": {strconv.FormatUint(leafIndex, 10)}}
	if treeSize > 0 {
		q.Set("tree_size", strconv.FormatUint(treeSize, 10))
	}
	return send[InclusionProof](ctx, c, &call{method: http.MethodGet, path: "/log/inclusion", query: q}, nil)
}

// LatestCheckpoint is the registry's newest signed checkpoint, as it says:
// check it with VerifyCheckpoint before relying on it.
func (c *Client) LatestCheckpoint(ctx context.Context) (*Checkpoint, error) {
	return get[Checkpoint](ctx, c, "/log/checkpoint")
}

// LogTile reads a tile of the log's hashes as C2SP tlog-tiles serves it:
// tile is "<L>/<N>" or "<L>/<N>.p/<W>" ("0/x001/234.p/5"), and the answer
// its hashes, 32 bytes each. The tools of the Go checksum database
// (golang.org/x/mod/sumdb/tlog) read the same tiles, and the checkpoint as
// text, at /log/ without a token.
func (c *Client) LogTile(ctx context.Context, tile string) ([]byte, error) {
	var hashes bytes.Buffer
	sink := func(body io.Reader) error {
		_, err := io.Copy(&hashes, io.LimitReader(body, 256*32))
		return err
	}
	if _, err := c.do(ctx, &call{method: http.MethodGet, path: "/log/tile/" + tile, sink: sink}); err != nil {
		return nil, err
	}
	return hashes.Bytes(), nil
}

// LogKeys are the keys the registry publishes. Take the key from a channel
// you trust the first time (its operator publishes it), and compare.
func (c *Client) LogKeys(ctx context.Context) (*LogKeys, error) {
	return get[LogKeys](ctx, c, "/log/keys")
}

// EventInclusion is the proof that the event is in the tree of treeSize
// leaves (0: the latest checkpoint's).
func (c *Client) EventInclusion(ctx context.Context, eventID string, treeSize uint64) (*InclusionProof, error) {
	q := url.Values{"event_id": {eventID}}
	if treeSize > 0 {
		q.Set("tree_size", strconv.FormatUint(treeSize, 10))
	}
	return send[InclusionProof](ctx, c, &call{method: http.MethodGet, path: "/log/inclusion", query: q}, nil)
}

// Consistency is the proof that the tree of from leaves (a checkpoint you
// kept) is a prefix of the tree of to (0: the latest checkpoint's).
func (c *Client) Consistency(ctx context.Context, from, to uint64) (*ConsistencyProof, error) {
	q := url.Values{"from": {strconv.FormatUint(from, 10)}}
	if to > 0 {
		q.Set("to", strconv.FormatUint(to, 10))
	}
	return send[ConsistencyProof](ctx, c, &call{method: http.MethodGet, path: "/log/consistency", query: q}, nil)
}

// ErrUnverified is what every failed check wraps.
var ErrUnverified = errors.New("registry: not verified")

func unverified(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnverified, fmt.Sprintf(format, args...))
}

// VerifyCheckpoint checks a signed checkpoint with the log's verifier keys
// (any of them may have signed it: a rotation keeps old ones) and reads
// it.
func VerifyCheckpoint(signed string, keys ...string) (Checkpoint, error) {
	var verifiers []note.Verifier
	for _, k := range keys {
		v, err := note.NewVerifier(strings.TrimSpace(k))
		if err != nil {
			return Checkpoint{}, fmt.Errorf("registry: %q is not a note verifier key: %w", k, err)
		}
		verifiers = append(verifiers, v)
	}
	n, err := note.Open([]byte(signed), note.VerifierList(verifiers...))
	if err != nil {
		return Checkpoint{}, unverified("checkpoint signature: %v", err)
	}
	lines := strings.SplitN(n.Text, "\n", 4)
	if len(lines) < 4 {
		return Checkpoint{}, unverified("a checkpoint has an origin, a size and a root hash, one a line")
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != lines[1] {
		return Checkpoint{}, unverified("checkpoint size %q", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != rfc6962.DefaultHasher.Size() {
		return Checkpoint{}, unverified("checkpoint root %q", lines[2])
	}
	if n.Sigs[0].Name != lines[0] {
		return Checkpoint{}, unverified("checkpoint of log %q signed by key %q", lines[0], n.Sigs[0].Name)
	}
	cp := Checkpoint{Origin: lines[0], TreeSize: size, RootHash: root, Note: signed}
	for _, line := range strings.Split(lines[3], "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "asset-heads" {
			continue
		}
		from, err := strconv.ParseUint(f[1%len(f)], 10, 64)
		heads, err2 := base64.StdEncoding.DecodeString(f[len(f)-1])
		if len(f) != 3 || err != nil || err2 != nil || len(heads) != rfc6962.DefaultHasher.Size() || cp.HeadsRoot != nil {
			return Checkpoint{}, unverified("checkpoint line %q is not \"asset-heads <from> <root>\" (once)", line)
		}
		cp.HeadsFrom, cp.HeadsRoot = from, heads
	}
	return cp, nil
}

// LeafHash is the hash of a log entry's bytes as a leaf of the log (RFC
// 6962): an event's logged form (LoggedEvent), a /log/entry's bytes.
func LeafHash(entry []byte) []byte { return rfc6962.DefaultHasher.HashLeaf(entry) }

// VerifyInclusion checks that entry (an event's bytes exactly as the
// registry served them, or a /log/entry's bytes) is leaf p.LeafIndex of
// the tree a verified checkpoint signed. An event whose personal fields
// are committed is proved by its logged form (EventLeafHash), so it
// verifies also once they were erased.
func VerifyInclusion(cp Checkpoint, entry []byte, p InclusionProof) error {
	leaf, err := EventLeafHash(entry)
	if err != nil {
		return err
	}
	return VerifyLeafHash(cp, leaf, p)
}

// VerifyLeafHash checks that leaf p.LeafIndex of the tree a verified
// checkpoint signed has the hash leafHash: for a leaf whose bytes are no
// longer kept, such as a redacted event's, whose redaction entry records
// it (RedactionEntry.LeafHash).
func VerifyLeafHash(cp Checkpoint, leafHash []byte, p InclusionProof) error {
	if p.TreeSize != cp.TreeSize {
		return unverified("a proof for a tree of %d leaves, the checkpoint has %d", p.TreeSize, cp.TreeSize)
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, p.LeafIndex, p.TreeSize, leafHash, p.Hashes, cp.RootHash); err != nil {
		return unverified("leaf %d: %v", p.LeafIndex, err)
	}
	return nil
}

// VerifyConsistency checks that the log of a newer verified checkpoint
// holds the log of an older one unchanged: what was signed before was
// neither changed nor removed. A client that keeps the checkpoints it has
// seen calls it with each new one.
func VerifyConsistency(older, newer Checkpoint, p ConsistencyProof) error {
	if older.Origin != newer.Origin {
		return unverified("checkpoints of two logs, %q and %q", older.Origin, newer.Origin)
	}
	if p.From != older.TreeSize || p.To != newer.TreeSize {
		return unverified("a proof from %d to %d, the checkpoints have %d and %d", p.From, p.To, older.TreeSize, newer.TreeSize)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, p.From, p.To, p.Hashes, older.RootHash, newer.RootHash); err != nil {
		return unverified("consistency from %d to %d: %v", p.From, p.To, err)
	}
	return nil
}
