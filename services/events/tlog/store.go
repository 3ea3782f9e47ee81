package tlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/transparency-dev/merkle/compact"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/tlog/heads"
)

// Store is the SQL of the transparency log: tiles, the tree's state,
// checkpoints, the leaves' entries, redactions and passports, in schema
// events. It keeps what this process read and appended of the tree; the
// feed appends its events through it (Speculate, Append, Committed).
type Store struct {
	s    *store.Store
	tree *logTree
}

// NewStore returns the store over s.
func NewStore(s *store.Store) *Store {
	return &Store{s: s, tree: &logTree{tiles: newTileCache(), nodes: newNodeCache(), reads: &tileReads{pool: s.Pool}, served: newServedTiles()}}
}

// The SQL of the transparency log: tiles, the tree's state, checkpoints.
// Leaves are appended only under the feed's lock (the transaction-level
// advisory lock that numbers events), so one writer at a time, whichever
// process it is, grows the tree.

// writeTree keeps a (a batch grew it) and writes its changed tiles and state in tx.
func (lt *logTree) writeTree(ctx context.Context, tx pgx.Tx, a *appender, changed []tile, root []byte) error {
	lt.kept.put(a, root) // not changed after this
	var levels []int16
	var indexes []int64
	var hashes [][]byte
	for _, t := range changed {
		if isStored(t) {
			levels, indexes, hashes = append(levels, int16(t.ID.Level)), append(indexes, int64(t.ID.Index)), append(hashes, t.Hashes)
		}
	}
	b := &pgx.Batch{}
	// A tile already stored is the leaves' last one, which grew, or one
	// above them that a previous version of the service stored partial and
	// this batch filled.
	b.Queue(`INSERT INTO log_tiles16 (level, idx, hashes) SELECT * FROM unnest($1::smallint[], $2::bigint[], $3::bytea[])
		ON CONFLICT (level, idx) DO UPDATE SET hashes = EXCLUDED.hashes`, levels, indexes, hashes)
	b.Queue(`UPDATE log_state SET size = $1, root = $2`, int64(a.Size()), root)
	if d, ok := tx.(deferrer); ok {
		for _, q := range b.QueuedQueries {
			d.Defer(q.SQL, q.Arguments...)
		}
		return nil
	}
	return store.Classify(tx.SendBatch(ctx, b).Close(), "append to the log")
}

// lockLog takes the feed's lock in tx and reads the log's state, at once.
func lockLog(ctx context.Context, tx pgx.Tx) (logState, error) {
	b := &pgx.Batch{}
	b.Queue(LockFeed)
	b.Queue(`SELECT size, root FROM log_state`)
	results := tx.SendBatch(ctx, b)
	defer results.Close()
	if _, err := results.Exec(); err != nil {
		return logState{}, store.Classify(err, "lock the feed")
	}
	var size int64
	var root []byte
	if err := results.QueryRow().Scan(&size, &root); err != nil {
		return logState{}, store.Classify(err, "read the log's state")
	}
	return logState{Size: uint64(size), Root: root}, store.Classify(results.Close(), "read the log's state")
}

// readTiles reads the tiles ids (a tile not stored is left out).
func readTiles(ctx context.Context, q store.Querier, ids []tileID) (tileSet, error) {
	if len(ids) == 1 {
		// Most proofs read their leaf's tile alone: an index lookup costs
		// PostgreSQL less than the join with the list that several take.
		var hashes []byte
		err := q.QueryRow(ctx, `SELECT hashes FROM log_tiles16 WHERE level = $1 AND idx = $2`, int16(ids[0].Level), int64(ids[0].Index)).Scan(&hashes)
		if errors.Is(err, pgx.ErrNoRows) {
			return tileSet{}, nil
		}
		return tileSet{ids[0]: hashes}, store.Classify(err, "read the log's tiles")
	}
	levels, indexes := make([]int16, len(ids)), make([]int64, len(ids))
	for i, id := range ids {
		levels[i], indexes[i] = int16(id.Level), int64(id.Index)
	}
	rows, err := q.Query(ctx, `SELECT t.level, t.idx, t.hashes FROM log_tiles16 t
		JOIN unnest($1::smallint[], $2::bigint[]) AS w(level, idx) ON t.level = w.level AND t.idx = w.idx`, levels, indexes)
	if err != nil {
		return nil, store.Classify(err, "read the log's tiles")
	}
	out := tileSet{}
	var level int16
	var idx int64
	var hashes []byte
	_, err = pgx.ForEachRow(rows, []any{&level, &idx, &hashes}, func() error {
		out[tileID{Level: uint(level), Index: uint64(idx)}] = hashes // pgx scans each row's bytea into a new slice
		return nil
	})
	return out, store.Classify(err, "read the log's tiles")
}

// LogState is the tree's size and root hash.
func (st *Store) LogState(ctx context.Context) (size uint64, root []byte, err error) {
	var n int64
	err = st.s.DB(ctx).QueryRow(ctx, `SELECT size, root FROM log_state`).Scan(&n, &root)
	if err != nil {
		return 0, nil, store.Classify(err, "read the log's state")
	}
	if n == 0 {
		root = emptyRoot()
	}
	return uint64(n), root, nil
}

// errNoLeaves is what backfilling returns when nothing was left.
var errNoLeaves = errors.New("no events without a leaf")

func (st *Store) backfillSome(ctx context.Context, limit int) (int, error) {
	var added int
	err := st.appendLocked(ctx, "give events their leaves", func(tx pgx.Tx, state logState) ([][]byte, error) {
		// The events without a leaf follow those with one in the feed's
		// order (the consumer numbers every event it stores once this ran).
		rows, err := tx.Query(ctx, `SELECT seq, body::text FROM events WHERE seq >= (SELECT log_seq_from($2)) AND leaf IS NULL
			ORDER BY seq LIMIT $1`, limit, int64(state.Size))
		if err != nil {
			return nil, store.Classify(err, "read events without a leaf")
		}
		var seqs, leaves []int64
		var hashes [][]byte
		var seq int64
		var body string
		if _, err := pgx.ForEachRow(rows, []any{&seq, &body}, func() error {
			h, err := EventLeaf([]byte(body))
			leaves, seqs, hashes = append(leaves, int64(state.Size)+int64(len(seqs))), append(seqs, seq), append(hashes, h)
			return err
		}); err != nil {
			return nil, store.Classify(err, "read events without a leaf")
		}
		if len(seqs) == 0 {
			return nil, errNoLeaves
		}
		if _, err := tx.Exec(ctx, `UPDATE events e SET leaf = u.leaf FROM unnest($1::bigint[], $2::bigint[]) AS u(seq, leaf)
			WHERE e.seq = u.seq`, seqs, leaves); err != nil {
			return nil, store.Classify(err, "number events in the log")
		}
		added = len(seqs)
		return hashes, nil
	})
	return added, err
}

// SignCheckpoint signs the tree as it is, unless the latest checkpoint
// has its size already, with the asset heads advanced to it (one
// transaction, under the heads' lock); it returns the checkpoint and
// whether it is new.
func (st *Store) SignCheckpoint(ctx context.Context, keys LogKeys) (c Checkpoint, fresh bool, err error) {
	err = store.InTx(ctx, st.s.Pool, "sign a checkpoint", func(tx pgx.Tx) error {
		from, through, err := heads.Lock(ctx, tx)
		if err != nil {
			return err
		}
		var size int64
		var root []byte
		if err := tx.QueryRow(ctx, `SELECT size, root FROM log_state`).Scan(&size, &root); err != nil {
			return store.Classify(err, "read the log's state")
		}
		if size == 0 {
			root = emptyRoot()
		}
		latest, err := readCheckpoint(ctx, tx, `SELECT size, root, note FROM checkpoints ORDER BY size DESC LIMIT 1`)
		// A checkpoint of this size signed without the heads (before the
		// upgrade that keeps them) is signed again with them.
		if err == nil && latest.Size == uint64(size) && strings.Contains(latest.Note, "\n"+HeadsLine+" ") {
			c = latest
			return nil
		}
		if err != nil && !apperr.Is(err, apperr.KindNotFound) {
			return err
		}
		h, err := heads.Advance(ctx, tx, from, through, uint64(size))
		if err != nil {
			return err
		}
		if c, err = keys.Sign(uint64(size), root, &h); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO checkpoints (size, root, note) VALUES ($1, $2, $3) ON CONFLICT (size) DO UPDATE SET note = EXCLUDED.note`,
			int64(c.Size), c.Root, c.Note)
		fresh = true
		return store.Classify(err, "store a checkpoint")
	})
	return c, fresh, err
}

// LatestCheckpoint is the newest signed checkpoint (404 when none yet), its
// note followed by the witnesses' cosignatures of that note, by name.
func (st *Store) LatestCheckpoint(ctx context.Context) (Checkpoint, error) {
	return readCheckpoint(ctx, st.s.DB(ctx), `SELECT size, root, note || coalesce((SELECT string_agg(w.line, '' ORDER BY w.witness)
		FROM witness_cosignatures w WHERE w.size = c.size AND w.note = c.note), '') FROM checkpoints c ORDER BY size DESC LIMIT 1`)
}

// CheckpointAt is the checkpoint signed at size (404 when none was).
func (st *Store) CheckpointAt(ctx context.Context, size uint64) (Checkpoint, error) {
	return readCheckpoint(ctx, st.s.DB(ctx), `SELECT size, root, note FROM checkpoints WHERE size = $1`, int64(size))
}

func readCheckpoint(ctx context.Context, q store.Querier, sql string, args ...any) (Checkpoint, error) {
	var c Checkpoint
	var size int64
	err := q.QueryRow(ctx, sql, args...).Scan(&size, &c.Root, &c.Note)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, apperr.NotFound("checkpoint", "")
	}
	c.Size = uint64(size)
	return c, store.Classify(err, "read a checkpoint")
}

// Checkpoints lists every signed checkpoint, oldest first.
func (st *Store) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	rows, err := st.s.Pool.Query(ctx, `SELECT size, root, note FROM checkpoints ORDER BY size`)
	if err != nil {
		return nil, store.Classify(err, "read checkpoints")
	}
	var out []Checkpoint
	var c Checkpoint
	var size int64
	_, err = pgx.ForEachRow(rows, []any{&size, &c.Root, &c.Note}, func() error {
		c.Size = uint64(size)
		out = append(out, c)
		return nil
	})
	return out, store.Classify(err, "read checkpoints")
}

// LeafOf is the leaf index of the event id (404 when the event is not
// stored, or has no leaf yet).
func (st *Store) LeafOf(ctx context.Context, id uuid.UUID) (uint64, error) {
	var leaf *int64
	err := st.s.DB(ctx).QueryRow(ctx, `SELECT leaf FROM events WHERE id = $1`, id).Scan(&leaf)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && leaf == nil) {
		return 0, apperr.NotFound("event", id.String())
	}
	if err != nil {
		return 0, store.Classify(err, "find an event's leaf")
	}
	return uint64(*leaf), nil
}

// Entry reads the bytes of leaf, exactly as hashed into it: a redaction's
// entry, or an event's bytes (for an event of leaf format 2, its logged
// form: commitments in place of its personal fields). The bytes of an
// event of format 1 redacted since (an erasure request) are gone: that is a 410 naming its latest redaction's
// entry, which records the hash the leaf keeps; so is a leaf whose event
// was pruned (events.history-retention). A leaf beyond the tree is a 404.
func (st *Store) Entry(ctx context.Context, leaf uint64) (LogEntry, error) {
	var size int64
	var typ, body *string
	var redaction *int64
	err := st.s.DB(ctx).QueryRow(ctx, `SELECT s.size, x.type, x.body, x.redaction FROM log_state s LEFT JOIN LATERAL (
			SELECT $2::text AS type, r.entry AS body, NULL::bigint AS redaction FROM redactions r WHERE r.leaf = $1
			UNION ALL
			SELECT $3, e.body::text, (SELECT max(r.leaf) FROM redactions r WHERE r.event_leaf = e.leaf) FROM events e
			WHERE e.seq = (SELECT log_seq_from($1)) AND e.leaf = $1
		) x ON true`, int64(leaf), RedactionEntryType, EntryEvent).Scan(&size, &typ, &body, &redaction)
	switch {
	case err != nil:
		return LogEntry{}, store.Classify(err, "read a log entry")
	case leaf >= uint64(size):
		return LogEntry{}, apperr.New(apperr.KindNotFound, fmt.Sprintf("the log has %d leaves: leaf %d is not in it (yet)", size, leaf))
	case redaction != nil && (body == nil || !committed([]byte(*body))):
		e := apperr.New(apperr.KindGone, fmt.Sprintf("the event at leaf %d was redacted (an erasure request): its bytes as logged are no longer kept; "+
			"the redaction's entry, leaf %d, records the leaf hash they had (GET /log/entry?leaf_index=%d)", leaf, *redaction, *redaction))
		e.Extensions = map[string]any{"redaction_entry": *redaction}
		return LogEntry{}, e
	case body == nil:
		return LogEntry{}, apperr.New(apperr.KindGone, fmt.Sprintf("the event at leaf %d is past the histories' retention: its bytes are no longer kept, its leaf hash is", leaf))
	}
	// An event of leaf format 2 answers its logged form, redacted or not.
	entry, _, err := Logged([]byte(*body))
	return LogEntry{LeafIndex: leaf, Type: *typ, Entry: entry}, err
}

// RedactPerson removes a person's personal fields from every event that
// holds them (an erasure request), in one transaction under the feed's
// lock: each event's body is replaced by its redaction, and each
// redaction is appended to the log as an entry naming the event, the hash
// its leaf keeps (the one signed) and the hash of its new bytes. An event
// whose stored bytes are no longer what the log holds is refused (the
// audit says more). It returns how many events were redacted.
func (st *Store) RedactPerson(ctx context.Context, person uuid.UUID, reason string) (int, error) {
	var redacted int
	err := st.appendLocked(ctx, "redact a person", func(tx pgx.Tx, state logState) ([][]byte, error) {
		rows, err := tx.Query(ctx, `SELECT e.seq, e.leaf, e.id::text, e.body::text,
				(SELECT r.entry FROM redactions r WHERE r.event_leaf = e.leaf ORDER BY r.leaf DESC LIMIT 1)
			FROM events e WHERE e.leaf IS NOT NULL AND e.leaf < $2
			AND ((e.kind = 'person' AND e.subject_id = $1) OR (e.kind = 'organization' AND strpos(e.body::text, $1) > 0))
			ORDER BY e.leaf FOR UPDATE OF e`, person.String(), int64(state.Size))
		if err != nil {
			return nil, store.Classify(err, "read the person's events")
		}
		var found []redactionCandidate
		var c redactionCandidate
		var leaf int64
		if _, err := pgx.ForEachRow(rows, []any{&c.seq, &leaf, &c.id, &c.body, &c.lastEntry}, func() error {
			c.leaf = uint64(leaf)
			found = append(found, c)
			return nil
		}); err != nil {
			return nil, store.Classify(err, "read the person's events")
		}
		if len(found) == 0 {
			return nil, nil
		}
		ids := make([]compact.NodeID, len(found))
		for i, f := range found {
			ids[i] = compact.NewNodeID(0, f.leaf)
		}
		tiles, err := readTiles(ctx, tx, tilesFor(ids))
		if err != nil {
			return nil, err
		}
		r, err := redactions(found, tiles, person.String(), reason, state.Size, time.Now().UTC().Truncate(time.Microsecond))
		if err != nil || len(r.hashes) == 0 {
			return nil, err
		}
		b := &pgx.Batch{}
		// The size goes with the body: pages are bounded by it.
		b.Queue(`UPDATE events e SET body = u.body::json, size = octet_length(u.body) FROM unnest($1::bigint[], $2::text[]) AS u(seq, body) WHERE e.seq = u.seq`,
			r.eventSeqs, r.bodies)
		b.Queue(`INSERT INTO redactions (leaf, event_leaf, leaf_hash, entry) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[], $4::text[])`,
			r.entryLeaves, r.eventLeaves, r.signed, r.entries)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, store.Classify(err, "redact events")
		}
		redacted = len(r.hashes)
		return r.hashes, nil
	})
	return redacted, err
}

// AppendEntries appends log entries that are no events (make bench
// measures what the log adds to storing a batch with it), under the
// feed's lock, in one transaction.
func (st *Store) AppendEntries(ctx context.Context, entries [][]byte) error {
	// Hashed before the lock, which every appender waits for.
	hashes := leafHashes(len(entries), func(i int) []byte { return entries[i] })
	return st.appendLocked(ctx, "append to the log", func(pgx.Tx, logState) ([][]byte, error) { return hashes, nil })
}

// appendLocked runs work in one transaction under the feed's lock (state:
// the log as locked) and appends the leaves whose hashes it returns (none:
// nothing) in the same transaction; once it commits, the tree keeps what
// the append wrote for the proofs.
func (st *Store) appendLocked(ctx context.Context, op string, work func(tx pgx.Tx, state logState) ([][]byte, error)) error {
	var kept *appender
	err := store.InTx(ctx, st.s.Pool, op, func(tx pgx.Tx) error {
		state, err := lockLog(ctx, tx)
		if err != nil {
			return err
		}
		hashes, err := work(tx, state)
		if err != nil || len(hashes) == 0 {
			return err
		}
		kept, err = st.tree.appendLeaves(ctx, tx, state, hashes)
		return err
	})
	if err == nil && kept != nil {
		st.tree.committed(kept)
	}
	return err
}

// LockFeed is the statement that serialises whatever numbers events or
// leaves: a reader that sees seq (or leaf) n+1 sees n. It is exported for
// the bench, whose row without the log takes it as the consumer does.
const LockFeed = "SELECT pg_advisory_xact_lock(hashtextextended('events feed:' || current_schema(), 0))"

// auditLeaves derives the hashes of leaves [first, last): an event's from
// its stored bytes (of leaf format 2: their logged form, redacted or not),
// a redacted event of format 1's from its redaction (which recorded the
// hash that was signed), a redaction's from its entry. Each is held to
// the stored tile of leaves; a leaf whose event was pruned is taken from
// it.
func auditLeaves(ctx context.Context, pool *store.Pool, first, last uint64, problem func(string, ...any)) ([][]byte, uint64, error) {
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
	b.Queue(`SELECT commitments_from FROM log_state`)
	results := pool.SendBatch(ctx, b)
	defer results.Close()
	rows, err := results.Query()
	if err != nil {
		return nil, 0, store.Classify(err, "audit: read events")
	}
	ids := map[uint64]string{}
	formats := map[uint64]leafFormat{} // the events of leaf format 2
	var leaf, other int64
	var id, body string
	if _, err := pgx.ForEachRow(rows, []any{&leaf, &id, &body}, func() error {
		n := uint64(leaf)
		hashes[n-first], ids[n] = auditedLeaf(n, id, []byte(body), formats, problem), id
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
		if uint64(other) >= first && uint64(other) < last {
			formats[uint64(other)] |= redactionOf(r)
		}
		if uint64(other) >= first && uint64(other) < last && leaf >= latest[uint64(other)] {
			latest[uint64(other)], redactedTo[uint64(other)], signedOf[uint64(other)] = leaf, r.Redacted, r.LeafHash
		}
		return nil
	}); err != nil {
		return nil, 0, store.Classify(err, "audit: read redactions")
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
	var from int64
	if err := results.QueryRow().Scan(&from); err != nil {
		return nil, 0, store.Classify(err, "audit: read the log's state")
	}
	redactedLeaves(first, uint64(from), hashes, redactedTo, signedOf, formats, ids, problem)
	kept, err := compareLeaves(first, hashes, tiles, ids, problem)
	if err != nil {
		return nil, 0, err
	}
	return hashes, kept, results.Close()
}
