package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"strings"
)

// A passport's completeness, checked offline (docs/events.md,
// "Completeness"). The registry chains the events of each asset's record
// in the log's order, chain = SHA-256(0x03 || chain || leaf hash) from 32
// zero bytes, and each checkpoint signs, in its line "asset-heads <from>
// <root>", the root of a Merkle map of every asset's head (its chain's
// length and last hash): 2^16 buckets by the first 16 bits of the
// SHA-256 of the asset id, a bucket's hash SHA-256(0x02 || its heads in
// the byte order of their ids, each as id length (2 bytes), id, length (8
// bytes), chain), its nodes RFC 6962's. The rules here are the events
// service's (services/events/tlog/heads): a test holds the two together.

// headsDepth is the map's height.
const headsDepth = 16

// verifyCompleteness checks that the passport holds every event of its
// asset's record from its completeness' From up to the checkpoint: its
// chain, recomputed from the passport's events, is the head the
// checkpoint signed, and every event of the record the passport holds from
// From on is in the chain. It answers the leaf from which the record is
// proved complete (0 when the record began after the chains did).
func verifyCompleteness(p Passport, cp Checkpoint) (uint64, error) {
	c := p.Completeness
	switch {
	case cp.HeadsRoot == nil:
		return 0, unverified("the checkpoint signs no asset heads: nothing proves that the passport left no event out")
	case c == nil:
		return 0, unverified("the passport has no completeness: nothing proves that it left no event out")
	case c.From != cp.HeadsFrom:
		return 0, unverified("the passport's chain starts at leaf %d, the checkpoint's at %d", c.From, cp.HeadsFrom)
	}
	byLeaf := make(map[uint64][]byte, len(p.Events))
	for _, e := range p.Events {
		byLeaf[e.LeafIndex] = e.Event
	}
	chain, chained := make([]byte, sha256.Size), make(map[uint64]bool, len(c.Chain))
	for i, leaf := range c.Chain {
		event, ok := byLeaf[leaf]
		switch {
		case i > 0 && leaf <= c.Chain[i-1]:
			return 0, unverified("the asset's chain is not in the log's order at leaf %d", leaf)
		case leaf < c.From:
			return 0, unverified("the asset's chain holds leaf %d, before its start %d", leaf, c.From)
		case !ok:
			return 0, unverified("the event at leaf %d of the asset's chain is not in the passport", leaf)
		}
		hash, err := EventLeafHash(event)
		if err != nil {
			return 0, err
		}
		chain = chainNext(chain, hash)
		chained[leaf] = true
	}
	bucket := bucketOf(p.AssetID)
	var head *AssetHead
	for i := range c.Bucket {
		h := &c.Bucket[i]
		if bucketOf(h.AssetID) != bucket {
			return 0, unverified("asset %s's head is not in the bucket of asset %s", h.AssetID, p.AssetID)
		}
		if h.AssetID == p.AssetID {
			head = h
		}
	}
	switch {
	case head == nil && len(c.Chain) > 0:
		return 0, unverified("the checkpoint signs no head of asset %s, the passport chains %d events", p.AssetID, len(c.Chain))
	case head != nil && (head.AssetSeq != uint64(len(c.Chain)) || !bytes.Equal(head.Chain, chain)):
		return 0, unverified("the checkpoint signs asset %s's head after %d events; the passport's events chain %d to another head: an event of its record is left out",
			p.AssetID, head.AssetSeq, len(c.Chain))
	}
	h, err := bucketHash(c.Bucket)
	if err != nil {
		return 0, err
	}
	if len(c.Path) != headsDepth {
		return 0, unverified("the head's path has %d hashes, the map %d levels", len(c.Path), headsDepth)
	}
	for l, sibling := range c.Path {
		if bucket>>l&1 == 0 {
			h = headsNode(h, sibling)
		} else {
			h = headsNode(sibling, h)
		}
	}
	if !bytes.Equal(h, cp.HeadsRoot) {
		return 0, unverified("asset %s's head is not in the map of heads the checkpoint signs", p.AssetID)
	}
	return recordChained(p, c.From, chained)
}

// recordChained checks that every event of the asset's record the
// passport holds from leaf from on is chained, by the registry's rule: an
// asset's events; an action's whose data names the asset or whose update
// moved it from the asset; an action document's whose action was on the
// asset when it was recorded. It answers from when the record has events
// before it, else 0.
func recordChained(p Passport, from uint64, chained map[uint64]bool) (uint64, error) {
	actionAsset := map[string]string{}
	var before bool
	for _, e := range p.Events {
		var ev struct {
			Subject Subject `json:"subject"`
			Data    struct {
				AssetID  string `json:"asset_id"`
				ActionID string `json:"action_id"`
			} `json:"data"`
			Changes map[string][2]json.RawMessage `json:"changes"`
		}
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			return 0, unverified("leaf %d is not an event: %v", e.LeafIndex, err)
		}
		var of bool
		switch ev.Subject.Kind {
		case "asset":
			of = ev.Subject.ID == p.AssetID
		case "action":
			actionAsset[ev.Subject.ID] = ev.Data.AssetID
			var moved string
			if c, ok := ev.Changes["asset_id"]; ok {
				_ = json.Unmarshal(c[0], &moved)
			}
			of = ev.Data.AssetID == p.AssetID || moved == p.AssetID
		case "action_document":
			of = ev.Data.ActionID != "" && actionAsset[ev.Data.ActionID] == p.AssetID
		}
		switch {
		case !of:
		case e.LeafIndex < from:
			before = true
		case !chained[e.LeafIndex]:
			return 0, unverified("the event at leaf %d of asset %s's record is not in its chain", e.LeafIndex, p.AssetID)
		}
	}
	if before {
		return from, nil
	}
	return 0, nil
}

// chainNext is the chain after an event of leaf hash leaf.
func chainNext(prev, leaf []byte) []byte {
	sum := sha256.Sum256(append(append([]byte{0x03}, prev...), leaf...))
	return sum[:]
}

// bucketOf is the bucket of an asset's head.
func bucketOf(asset string) uint32 {
	sum := sha256.Sum256([]byte(asset))
	return uint32(binary.BigEndian.Uint16(sum[:2]))
}

// bucketHash is the hash of a bucket's heads, which must be in the byte
// order of their ids.
func bucketHash(heads []AssetHead) ([]byte, error) {
	d := sha256.New()
	d.Write([]byte{0x02})
	for i, h := range heads {
		if i > 0 && strings.Compare(heads[i-1].AssetID, h.AssetID) >= 0 {
			return nil, unverified("the bucket's heads are not in the order of their asset ids at %s", h.AssetID)
		}
		if len(h.Chain) != sha256.Size {
			return nil, unverified("asset %s's head is not a SHA-256 hash", h.AssetID)
		}
		var n [10]byte
		binary.BigEndian.PutUint16(n[:2], uint16(len(h.AssetID)))
		binary.BigEndian.PutUint64(n[2:], h.AssetSeq)
		d.Write(n[:2])
		d.Write([]byte(h.AssetID))
		d.Write(n[2:])
		d.Write(h.Chain)
	}
	return d.Sum(nil), nil
}

// headsNode is an interior node of the map (RFC 6962).
func headsNode(left, right []byte) []byte {
	sum := sha256.Sum256(append(append([]byte{0x01}, left...), right...))
	return sum[:]
}
