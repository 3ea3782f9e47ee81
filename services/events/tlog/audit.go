package tlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/store"
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
		hashes, kept, err := st.auditLeaves(ctx, first, last, problem)
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

// auditLeaves derives the hashes of leaves [first, last): an event's from
// its stored bytes, a redacted event's from its redaction (which recorded
// the hash that was signed), a redaction's from its entry. Each is held to
// the stored tile of leaves; a leaf whose event was pruned is taken from
// it.
func (st *Store) auditLeaves(ctx context.Context, first, last uint64, problem func(string, ...any)) ([][]byte, uint64, error) {
	hashes := make([][]byte, last-first)
	b := &pgx.Batch{}
	// The leaves' events are the seqs from the first event of leaf first
	// on, up to the first of leaf last (log_seq_from), or to the end.
	b.Queue(`SELECT leaf, id::text, body::text FROM events
		WHERE seq >= (SELECT log_seq_from($1)) AND seq < coalesce((SELECT log_seq_from($2)), $3)
		AND leaf >= $1 AND leaf < $2`, int64(first), int64(last), int64(math.MaxInt64))
	b.Queue(`SELECT leaf, event_leaf, leaf_hash, entry FROM redactions WHERE leaf >= $1 AND leaf < $2
		OR event_leaf >= $1 AND event_leaf < $2`, int64(first), int64(last))
	b.Queue(`SELECT idx, hashes FROM log_tiles16 WHERE level = 0 AND idx >= $1 AND idx <= $2 ORDER BY idx`,
		int64(first/tileWidth), int64((last-1)/tileWidth))
	results := st.s.Pool.SendBatch(ctx, b)
	defer results.Close()
	rows, err := results.Query()
	if err != nil {
		return nil, 0, store.Classify(err, "audit: read events")
	}
	ids := map[uint64]string{}
	var leaf, other int64
	var id, body string
	if _, err := pgx.ForEachRow(rows, []any{&leaf, &id, &body}, func() error {
		hashes[uint64(leaf)-first], ids[uint64(leaf)] = LeafHash([]byte(body)), id
		return nil
	}); err != nil {
		return nil, 0, store.Classify(err, "audit: read events")
	}
	if rows, err = results.Query(); err != nil {
		return nil, 0, store.Classify(err, "audit: read redactions")
	}
	var signed []byte
	var entry string
	redactedTo := map[uint64][]byte{} // an event's leaf → the hash its bytes must have now
	signedOf := map[uint64][]byte{}   // and the hash its leaf was signed with
	latest := map[uint64]int64{}
	if _, err := pgx.ForEachRow(rows, []any{&leaf, &other, &signed, &entry}, func() error {
		if uint64(leaf) >= first && uint64(leaf) < last {
			hashes[uint64(leaf)-first] = LeafHash([]byte(entry))
		}
		var r RedactionEntry
		if err := json.Unmarshal([]byte(entry), &r); err != nil || r.EventLeaf != uint64(other) || !bytes.Equal(r.LeafHash, signed) {
			problem("redaction at leaf %d: its entry does not say what its row does", leaf)
		}
		if uint64(other) >= first && uint64(other) < last && leaf >= latest[uint64(other)] {
			latest[uint64(other)], redactedTo[uint64(other)], signedOf[uint64(other)] = leaf, r.Redacted, r.LeafHash
		}
		return nil
	}); err != nil {
		return nil, 0, store.Classify(err, "audit: read redactions")
	}
	// A redacted event's bytes hash to what its latest redaction recorded;
	// its leaf keeps the hash that was signed, as the redaction's entry
	// (itself a leaf) says (held to the tile below, like any leaf).
	for n, want := range redactedTo {
		i := n - first
		if hashes[i] != nil && !bytes.Equal(hashes[i], want) {
			problem("leaf %d (event %s): its stored bytes are not what its redaction left", n, ids[n])
		}
		hashes[i] = signedOf[n]
	}
	if rows, err = results.Query(); err != nil {
		return nil, 0, store.Classify(err, "audit: read tiles")
	}
	tiles := tileSet{}
	var idx int64
	var row []byte
	if _, err := pgx.ForEachRow(rows, []any{&idx, &row}, func() error {
		tiles[tileID{Index: uint64(idx)}] = append([]byte(nil), row...)
		return nil
	}); err != nil {
		return nil, 0, store.Classify(err, "audit: read tiles")
	}
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
			return nil, 0, fmt.Errorf("audit: leaf %d is neither stored nor in a tile", n)
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
	return hashes, kept, results.Close()
}

func b64(h []byte) string { return base64.StdEncoding.EncodeToString(h) }
