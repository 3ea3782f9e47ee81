package passport

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/tlog"
)

// Store is the SQL of passports: which events an asset's passport holds,
// read in one snapshot of the log and handed on as they are read, with
// their proofs from the log's tiles (log).
type Store struct {
	s   *store.Store
	log *tlog.Store
	// access is who sees which asset (Visible): the schema's copy alone
	// until UseAccess names the service's.
	access *access.Copy
}

// NewStore returns the store over s, whose proofs log makes.
func NewStore(s *store.Store, log *tlog.Store) *Store {
	return &Store{s: s, log: log, access: access.New(s, nil)}
}

// passportSubjects is the SQL of the resources of an asset's passport
// among the first $1 leaves ($2 the asset): the asset, its type (the one
// its latest event names), every action ever recorded on it, their action
// documents and the documents these linked, each (kind, id) once. The
// queries of a passport start with it, so the lists stay in PostgreSQL
// however long they are.
const passportSubjects = `WITH actions AS (
		SELECT DISTINCT subject_id AS id FROM events
		WHERE kind = 'action' AND body -> 'data' ->> 'asset_id' = $2 AND leaf < $1
	), links AS (
		SELECT DISTINCT subject_id AS id FROM events
		WHERE kind = 'action_document' AND body -> 'data' ->> 'action_id' IN (SELECT id FROM actions) AND leaf < $1
	), subjects(kind, id) AS (
		SELECT 'asset', $2::text
		UNION ALL (SELECT 'asset_type', body -> 'data' ->> 'asset_type_id' FROM events
			WHERE kind = 'asset' AND subject_id = $2 AND leaf < $1 ORDER BY seq DESC LIMIT 1)
		UNION ALL SELECT 'action', id FROM actions
		UNION ALL SELECT 'action_document', id FROM links
		UNION ALL SELECT DISTINCT 'document', body -> 'data' ->> 'document_id' FROM events
			WHERE kind = 'action_document' AND subject_id IN (SELECT id FROM links) AND leaf < $1
	), passport AS (
		SELECT e.* FROM subjects s JOIN events e ON e.kind = s.kind AND e.subject_id = s.id WHERE e.leaf < $1
	) `

// Size is how many events an asset's passport among the first
// size leaves holds and their bytes; a 404 when the asset has no event in
// the tree of size.
func (st *Store) Size(ctx context.Context, asset uuid.UUID, size uint64) (events, bytes int64, err error) {
	var ofAsset int64
	err = st.s.DB(ctx).QueryRow(ctx, passportSubjects+`SELECT count(*), count(*) FILTER (WHERE kind = 'asset'),
		coalesce(sum(coalesce(size, octet_length(body::text))), 0) FROM passport`,
		int64(size), asset.String()).Scan(&events, &ofAsset, &bytes)
	if err != nil {
		return 0, 0, store.Classify(err, "measure a passport")
	}
	if ofAsset == 0 {
		return 0, 0, apperr.NotFound("asset", asset.String())
	}
	return events, bytes, nil
}

// passportPage bounds what a passport's reading holds at once: the leaves
// of up to passportLeaves events, and the bodies of events up to
// passportBytes together (or of one larger event).
const (
	passportLeaves = 512
	passportBytes  = 1 << 20
)

// Read reads an asset's passport among the first size leaves in
// one snapshot and hands it to parts as it goes, in the bundle's order:
// the records of each kind (asset, asset type, actions, action documents,
// documents), each in the order of its first event, then the events in
// the log's order with their proofs, a bounded batch at a time. Nothing
// of it is held longer than its batch, whatever the passport's size.
func (st *Store) Read(ctx context.Context, asset uuid.UUID, size uint64, parts passportParts) error {
	return tlog.ReadSnapshot(ctx, st.s.Pool, "read a passport", func(tx pgx.Tx) error {
		for _, kind := range passportKinds {
			if err := passportRecords(ctx, tx, asset, size, kind, parts); err != nil {
				return err
			}
		}
		// The events' leaves and sizes come from a cursor, their bodies a
		// batch at a time by their seqs; the proofs' tiles are read per
		// batch too.
		if _, err := tx.Exec(ctx, `DECLARE passport_events NO SCROLL CURSOR FOR `+passportSubjects+
			`SELECT seq, coalesce(size, octet_length(body::text)) FROM passport ORDER BY seq`, int64(size), asset.String()); err != nil {
			return store.Classify(err, "read a passport's events")
		}
		for {
			rows, err := tx.Query(ctx, fmt.Sprintf("FETCH %d FROM passport_events", passportLeaves))
			if err != nil {
				return store.Classify(err, "read a passport's events")
			}
			var seqs []int64
			var sizes []int64
			var seq, n int64
			if _, err := pgx.ForEachRow(rows, []any{&seq, &n}, func() error {
				seqs, sizes = append(seqs, seq), append(sizes, n)
				return nil
			}); err != nil {
				return store.Classify(err, "read a passport's events")
			}
			if len(seqs) == 0 {
				return nil
			}
			for len(seqs) > 0 {
				take, total := 1, sizes[0]
				for take < len(seqs) && total+sizes[take] <= passportBytes {
					total += sizes[take]
					take++
				}
				if err := st.passportEvents(ctx, tx, seqs[:take], size, parts); err != nil {
					return err
				}
				seqs, sizes = seqs[take:], sizes[take:]
			}
		}
	})
}

// passportRecords hands parts the records of one kind of a passport: per
// resource, its leaves and its latest event, from which the record is
// derived (recordOf).
func passportRecords(ctx context.Context, tx pgx.Tx, asset uuid.UUID, size uint64, kind string, parts passportParts) error {
	rows, err := tx.Query(ctx, passportSubjects+`, records AS (
			SELECT subject_id, min(seq) AS first, max(seq) AS last, array_agg(leaf ORDER BY seq) AS leaves
			FROM passport WHERE kind = $3 GROUP BY subject_id
		)
		SELECT r.leaves, e.body::text FROM records r JOIN events e ON e.seq = r.last ORDER BY r.first`,
		int64(size), asset.String(), kind)
	if err != nil {
		return store.Classify(err, "read a passport's records")
	}
	var leaves []int64
	var body string
	_, err = pgx.ForEachRow(rows, []any{&leaves, &body}, func() error {
		r, err := recordOf(leaves, []byte(body))
		if err != nil {
			return err
		}
		return parts.Record(kind, r)
	})
	return store.Classify(err, "read a passport's records")
}

// passportEvents hands parts the events of seqs with their proofs in the
// tree of size.
func (st *Store) passportEvents(ctx context.Context, tx pgx.Tx, seqs []int64, size uint64, parts passportParts) error {
	rows, err := tx.Query(ctx, `SELECT leaf, body::text FROM events WHERE seq = ANY($1) ORDER BY seq`, seqs)
	if err != nil {
		return store.Classify(err, "read a passport's events")
	}
	events := make([]Event, 0, len(seqs))
	leaves := make([]uint64, 0, len(seqs))
	var leaf int64
	var body string
	if _, err := pgx.ForEachRow(rows, []any{&leaf, &body}, func() error {
		events = append(events, Event{LeafIndex: uint64(leaf), Event: []byte(body)})
		leaves = append(leaves, uint64(leaf))
		return nil
	}); err != nil {
		return store.Classify(err, "read a passport's events")
	}
	proofs, err := tlog.InclusionProofsIn(ctx, st.log, tx, leaves, size)
	if err != nil {
		return err
	}
	for i := range events {
		events[i].Proof = proofs[i]
	}
	return parts.Events(events)
}
