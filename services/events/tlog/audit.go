package tlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
)

// The self-audit: the tree derived again from what is stored (the events'
// bytes, the redactions' entries) must be the one the stored checkpoints
// signed and the stored tiles hold. A row changed after the fact (an UPDATE
// run in PostgreSQL), a tile or a checkpoint changed, or a signature that
// does not verify is a problem the audit names.

// AuditReport is what an audit found.
type AuditReport struct {
	Leaves      uint64   // leaves derived again
	Kept        uint64   // of which pruned events, taken from the tiles as stored
	Checkpoints int      // checkpoints checked
	Problems    []string // empty: everything stored matches what was signed
}

// auditChunk is how many leaves an audit reads per round trip, a multiple
// of tileWidth.
const auditChunk = 4096

// Audit derives the tree again from the stored events and checks it
// against every signed checkpoint and the stored tiles. An error is an
// audit that could not run; what it found is in the report.
func (st *Store) Audit(ctx context.Context, keys LogKeys) (AuditReport, error) {
	var r AuditReport
	problem := func(format string, args ...any) {
		if len(r.Problems) < 100 {
			r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
		}
	}
	checkpoints, err := st.Checkpoints(ctx)
	if err != nil {
		return r, err
	}
	size, root, err := st.LogState(ctx)
	if err != nil {
		return r, err
	}
	for _, c := range checkpoints {
		opened, err := keys.Open(c.Note)
		switch {
		case err != nil:
			problem("checkpoint %d: %v", c.Size, err)
		case opened.Size != c.Size || !bytes.Equal(opened.Root, c.Root):
			problem("checkpoint %d: its stored size and root are not the signed ones (%d, %s)", c.Size, opened.Size, b64(opened.Root))
		}
		if c.Size > size {
			problem("checkpoint %d: signed beyond the log's %d leaves", c.Size, size)
		}
	}
	r.Checkpoints = len(checkpoints)
	tree := newAppender()
	upper := map[tileID][]byte{} // the tiles above the leaves, as derived
	next := 0                    // the next checkpoint to compare
	for first := uint64(0); first < size; first += auditChunk {
		last := min(first+auditChunk, size)
		hashes, kept, err := auditLeaves(ctx, st.s.Pool, first, last, problem)
		if err != nil {
			return r, err
		}
		r.Kept += kept
		for i, h := range hashes {
			changed, err := tree.Append([][]byte{h})
			if err != nil {
				return r, err
			}
			for _, t := range changed {
				if t.ID.Level > 0 {
					upper[t.ID] = t.Hashes
				}
			}
			for next < len(checkpoints) && checkpoints[next].Size == first+uint64(i)+1 {
				c := checkpoints[next]
				if derived, _ := tree.Root(); !bytes.Equal(derived, c.Root) {
					problem("checkpoint %d: the stored events derive root %s, it signed %s", c.Size, b64(derived), b64(c.Root))
				}
				next++
			}
		}
		r.Leaves = last
	}
	for ; next < len(checkpoints) && checkpoints[next].Size == 0; next++ {
		if !bytes.Equal(checkpoints[next].Root, emptyRoot()) {
			problem("checkpoint 0: it signed %s, not the empty tree's root", b64(checkpoints[next].Root))
		}
	}
	if derived, _ := tree.Root(); !bytes.Equal(derived, root) {
		problem("the log's state: the stored events derive root %s for %d leaves, the state holds %s", b64(derived), size, b64(root))
	}
	ids := make([]tileID, 0, len(upper))
	for id := range upper {
		ids = append(ids, id)
	}
	stored, err := readTiles(ctx, st.s.Pool, ids)
	if err != nil {
		return r, err
	}
	for id, hashes := range upper {
		row, ok := stored[id]
		switch {
		case !ok && isStored(tile{ID: id, Hashes: hashes}):
			problem("tile %d/%d: it is full but not stored", id.Level, id.Index)
		case ok && !bytes.HasPrefix(hashes, row) && !bytes.HasPrefix(row, hashes):
			// A partial tile above the leaves is derived, not stored; one
			// stored partial before may hold fewer hashes than derived.
			problem("tile %d/%d: its stored hashes are not the ones the events derive", id.Level, id.Index)
		}
	}
	return r, nil
}

func b64(h []byte) string { return base64.StdEncoding.EncodeToString(h) }

// leafFormat is what the audit learned of an event's leaf: its format
// and the redactions that name it.
type leafFormat uint8

const (
	formatCommitted leafFormat = 1 << iota // leaf format 2: personal fields committed
	formatErased                           // of which some erased (the commitment alone)
	formatRedacted                         // a redaction's entry names the event
	formatErasure                          // one that erased openings of format 2
)

// auditedLeaf is the leaf hash an event's stored bytes derive; an event of
// format 2 is noted in formats. Bytes that derive none (openings that do
// not open) are a problem, and a hash no leaf has.
func auditedLeaf(n uint64, id string, body []byte, formats map[uint64]leafFormat, problem func(string, ...any)) []byte {
	logged, isCommitted, err := Logged(body)
	if isCommitted {
		formats[n] = formatCommitted
		if erasedFields(body) {
			formats[n] |= formatErased
		}
	}
	if err != nil {
		problem("leaf %d (event %s): %v", n, id, err)
		return make([]byte, hashSize)
	}
	return LeafHash(logged)
}

// redactionOf is what a redaction's entry says of its event.
func redactionOf(r RedactionEntry) leafFormat {
	if len(r.Fields) > 0 {
		return formatRedacted | formatErasure
	}
	return formatRedacted
}

// redactedLeaves holds the redacted events of the leaves from first to
// their redactions. An event of format 2, and any event logged from the
// upgrade to commitments on (from), keeps its leaf through an erasure: its
// hash stays the one its bytes derive, held to the tile like any leaf's,
// so bytes that differ from the logged form in anything but the erased
// values and salts are a mismatch, whatever redaction names them; an
// erasure without a redaction entry is a problem too. An event logged
// before (format 1) is held as before: its bytes to the hash its latest
// redaction recorded, its leaf to the hash the redaction's entry (itself a
// leaf) says was signed.
func redactedLeaves(first, from uint64, hashes [][]byte, redactedTo, signedOf map[uint64][]byte, formats map[uint64]leafFormat, ids map[uint64]string, problem func(string, ...any)) {
	for n, want := range redactedTo {
		i := n - first
		switch f := formats[n]; {
		case f&formatCommitted != 0 || n >= from:
			continue
		case f&formatErasure != 0 && hashes[i] != nil:
			problem("leaf %d (event %s): its stored bytes lost the commitments its erasure kept", n, ids[n])
		case hashes[i] != nil && !bytes.Equal(hashes[i], want):
			problem("leaf %d (event %s): its stored bytes are not what its redaction left", n, ids[n])
		}
		hashes[i] = signedOf[n]
	}
	for n, f := range formats {
		if f&formatErased != 0 && f&formatRedacted == 0 {
			problem("leaf %d (event %s): personal fields erased without a redaction entry", n, ids[n])
		}
	}
}

// compareLeaves holds the leaf hashes derived from first on to the stored
// tiles of leaves; a leaf whose event was pruned past the histories'
// retention (no hash derived) is taken from its tile. It answers how many
// were.
func compareLeaves(first uint64, hashes [][]byte, tiles tileSet, ids map[uint64]string, problem func(string, ...any)) (uint64, error) {
	var kept uint64
	for i := range hashes {
		n := first + uint64(i)
		t := tiles[tileID{Index: n / tileWidth}]
		off := (n % tileWidth) * hashSize
		var stored []byte
		if uint64(len(t)) >= off+hashSize {
			stored = t[off : off+hashSize]
		}
		switch {
		case hashes[i] == nil && stored == nil:
			return 0, fmt.Errorf("audit: leaf %d is neither stored nor in a tile", n)
		case hashes[i] == nil: // pruned past the histories' retention
			hashes[i], kept = stored, kept+1
		case !bytes.Equal(hashes[i], stored):
			what := "entry"
			if id, ok := ids[n]; ok {
				what = "event " + id
			}
			problem("leaf %d (%s): its stored bytes hash to %s, the log holds %s", n, what, b64(hashes[i]), b64(stored))
		}
	}
	return kept, nil
}
