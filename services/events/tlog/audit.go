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
