// Package heads is the asset heads of the log, a component of tlog: for
// every asset, the hash chain of the events of its record (the asset's own,
// its actions', their action documents') in the log's order, and a Merkle
// map of every asset's head (its chain's length and last hash) whose root
// each checkpoint signs. A passport carries its asset's chain and the
// proof of its head under the checkpoint: a verifier that recomputes the
// chain from the passport's events and finds the signed head knows that
// no event of the record was left out (docs/events.md, "Completeness").
//
// This file is plain Go; store.go keeps the chains and the map.
package heads

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
)

// Depth is the map's height: an asset's head sits in bucket
// BucketOf(asset), one of 2^Depth leaves of a perfect binary Merkle tree.
// A bucket holds every head hashed to it (about one in 65,536 of the
// assets), and a head's proof is its bucket and Depth sibling hashes: a
// checkpoint rehashes the buckets its events changed and their paths, not
// the map.
const Depth = 16

// The hashes' domain separators: a node's children (as RFC 6962), a
// bucket's heads, and one link of a chain.
const (
	nodePrefix   = 0x01
	bucketPrefix = 0x02
	chainPrefix  = 0x03
)

// Head is an asset's head: how many events its chain holds, and its last
// hash.
type Head struct {
	AssetID  string `json:"asset_id"`
	AssetSeq uint64 `json:"asset_seq"`
	Chain    []byte `json:"chain"`
}

// BucketOf is the bucket an asset's head sits in: the first Depth bits of
// the SHA-256 of its id.
func BucketOf(asset string) uint32 {
	sum := sha256.Sum256([]byte(asset))
	return uint32(binary.BigEndian.Uint16(sum[:2]))
}

// ChainNext is the chain's hash after an event of leaf hash leaf:
// SHA-256(0x03 || prev || leaf); the chain before its first event is 32
// zero bytes.
func ChainNext(prev, leaf []byte) []byte {
	var buf [1 + 2*sha256.Size]byte
	sum := sha256.Sum256(append(append(append(buf[:0], chainPrefix), prev...), leaf...))
	return sum[:]
}

// ChainStart is the chain of an asset without events.
func ChainStart() []byte { return make([]byte, sha256.Size) }

// BucketHash is a bucket's hash: SHA-256 of 0x02 and each head, in the
// byte order of their asset ids, as its id's length (2 bytes), the id,
// its length (8 bytes) and its chain.
func BucketHash(heads []Head) ([]byte, error) {
	d := sha256.New()
	d.Write([]byte{bucketPrefix})
	for i, h := range heads {
		if i > 0 && heads[i-1].AssetID >= h.AssetID {
			return nil, fmt.Errorf("heads: bucket not in the order of asset ids at %s", h.AssetID)
		}
		if len(h.Chain) != sha256.Size {
			return nil, fmt.Errorf("heads: the chain of %s is not a SHA-256 hash", h.AssetID)
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

// SortHeads puts heads in the byte order of their asset ids.
func SortHeads(heads []Head) {
	slices.SortFunc(heads, func(a, b Head) int { return bytes.Compare([]byte(a.AssetID), []byte(b.AssetID)) })
}

// nodeHash is an interior node's hash (RFC 6962).
func nodeHash(left, right []byte) []byte {
	var buf [1 + 2*sha256.Size]byte
	sum := sha256.Sum256(append(append(append(buf[:0], nodePrefix), left...), right...))
	return sum[:]
}

// empty are the hashes of subtrees without a head, per level: an empty
// bucket, then each level's two empty children.
var empty = func() [Depth + 1][]byte {
	var out [Depth + 1][]byte
	out[0], _ = BucketHash(nil)
	for l := 1; l <= Depth; l++ {
		out[l] = nodeHash(out[l-1], out[l-1])
	}
	return out
}()

// RootOf is the map's root from a bucket's hash and the path of sibling
// hashes above it, the lowest first.
func RootOf(bucket uint32, bucketHash []byte, path [][]byte) ([]byte, error) {
	if len(path) != Depth {
		return nil, fmt.Errorf("heads: a path of %d hashes, the map has %d levels", len(path), Depth)
	}
	h := bucketHash
	for l, sibling := range path {
		if bucket>>l&1 == 0 {
			h = nodeHash(h, sibling)
		} else {
			h = nodeHash(sibling, h)
		}
	}
	return h, nil
}

// nodeID is a node of the map: level 0 the buckets, Depth the root.
type nodeID struct {
	Level int
	Index uint32
}

// update rehashes the map's nodes above the changed buckets (their new
// hashes): it names the siblings it needs through read (a node read as
// nil is an empty subtree's) and answers every node it changed, the root
// among them.
func update(changed map[uint32][]byte, read func(ids []nodeID) (map[nodeID][]byte, error)) (map[nodeID][]byte, error) {
	out := map[nodeID][]byte{}
	level := map[uint32][]byte{}
	for b, h := range changed {
		out[nodeID{0, b}], level[b] = h, h
	}
	var siblings []nodeID
	seen := map[nodeID]bool{}
	for b := range changed {
		for l := 0; l < Depth; l++ {
			s := nodeID{l, (b >> l) ^ 1}
			if !seen[s] {
				seen[s] = true
				siblings = append(siblings, s)
			}
		}
	}
	stored, err := read(siblings)
	if err != nil {
		return nil, err
	}
	for l := 0; l < Depth; l++ {
		up := map[uint32][]byte{}
		for i, h := range level {
			if _, done := up[i>>1]; done {
				continue
			}
			s := nodeID{l, i ^ 1}
			sibling, ok := level[i^1]
			if !ok {
				if sibling = out[s]; sibling == nil {
					if sibling = stored[s]; sibling == nil {
						sibling = empty[l]
					}
				}
			}
			if i&1 == 0 {
				up[i>>1] = nodeHash(h, sibling)
			} else {
				up[i>>1] = nodeHash(sibling, h)
			}
		}
		for i, h := range up {
			out[nodeID{l + 1, i}] = h
		}
		level = up
	}
	return out, nil
}

// Path is the sibling hashes above bucket, the lowest first, from the
// stored nodes (nil: an empty subtree's).
func pathOf(bucket uint32, stored map[nodeID][]byte) [][]byte {
	out := make([][]byte, Depth)
	for l := range Depth {
		h := stored[nodeID{l, (bucket >> l) ^ 1}]
		if h == nil {
			h = empty[l]
		}
		out[l] = h
	}
	return out
}

// Commitment is what a checkpoint signs of the heads: the leaf from which
// the chains hold every event, and the map's root over the first Through
// leaves.
type Commitment struct {
	From    uint64
	Through uint64
	Root    []byte
}

// Completeness is a passport's proof that it holds every event of its
// asset's record from leaf From on: the leaves of the asset's chain in
// order, its bucket's heads (the asset's among them, unless it has no
// chained event) and the bucket's path to the signed root.
type Completeness struct {
	From   uint64   `json:"from"`
	Chain  []uint64 `json:"chain"`
	Bucket []Head   `json:"bucket"`
	Path   [][]byte `json:"path"`
}

// member is an event that may belong to an asset's record, as the chains
// read it: its leaf and leaf hash, its subject, and the asset or action
// its data names (and the asset an update moved an action from).
type member struct {
	Leaf      uint64
	LeafHash  []byte
	Kind      string
	SubjectID string
	AssetID   string
	MovedFrom string
	ActionID  string
}

// AssetsOf are the assets whose chain an event belongs to: an asset's
// event its own; an action's the asset its data names and, for an update
// that moved it, the asset it left; an action document's the asset its
// action was on when it was recorded (actionAsset, which this keeps up to
// date with each action event it is handed, in the log's order). The
// SDK's verifier applies the same rule to a passport's events.
func assetsOf(m member, actionAsset map[string]string) []string {
	switch m.Kind {
	case "asset":
		return []string{m.SubjectID}
	case "action":
		actionAsset[m.SubjectID] = m.AssetID
		out := []string{}
		if m.AssetID != "" {
			out = append(out, m.AssetID)
		}
		if m.MovedFrom != "" && m.MovedFrom != m.AssetID {
			out = append(out, m.MovedFrom)
		}
		return out
	case "action_document":
		if a := actionAsset[m.ActionID]; a != "" {
			return []string{a}
		}
	}
	return nil
}
