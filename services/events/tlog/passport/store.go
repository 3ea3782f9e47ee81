package passport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/tlog"
	"github.com/assetregistry/registry/services/events/tlog/heads"
)

// Store is the SQL of passports: which events an asset's passport holds,
// read in one snapshot of the log and handed on as they are read, with
// their proofs from the log's tiles (Log). Visible asks its copy of who
// sees which asset.
type Store struct {
	*tlog.LogReader
}

// NewStore returns the store that reads through r: the feed's, so that
// both filter on the one copy of the assets' access.
func NewStore(r *tlog.LogReader) *Store { return &Store{LogReader: r} }

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
	err = st.DB(ctx).QueryRow(ctx, passportSubjects+`SELECT count(*), count(*) FILTER (WHERE kind = 'asset'),
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

// Read reads an asset's passport in one snapshot, against the latest
// checkpoint in it, and hands it to parts as it goes, in the bundle's
// order: the checkpoint and the completeness of the asset's record, the
// records of each kind (asset, asset type, actions, action documents,
// documents), each in the order of its first event, then the events in
// the log's order with their proofs, a bounded batch at a time, then who
// performed each action. Nothing of it is held longer than its batch,
// whatever the passport's size.
func (st *Store) Read(ctx context.Context, asset uuid.UUID, parts passportParts) error {
	return tlog.ReadSnapshot(ctx, st.Pool, "read a passport", func(tx pgx.Tx) error {
		size, err := readHead(ctx, tx, asset, parts)
		if err != nil {
			return err
		}
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
				return passportPerformers(ctx, tx, asset, size, parts)
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

// readHead hands parts the snapshot's latest checkpoint and, when the
// asset heads were signed with it, the completeness of the asset's record;
// it answers the checkpoint's size.
func readHead(ctx context.Context, tx pgx.Tx, asset uuid.UUID, parts passportParts) (uint64, error) {
	var size int64
	var note string
	// With the witnesses' cosignatures of its note, as /log/checkpoint serves it.
	err := tx.QueryRow(ctx, `SELECT size, note || coalesce((SELECT string_agg(w.line, '' ORDER BY w.witness)
		FROM witness_cosignatures w WHERE w.size = c.size AND w.note = c.note), '') FROM checkpoints c ORDER BY size DESC LIMIT 1`).Scan(&size, &note)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, tlog.ErrNoCheckpoint()
	}
	if err != nil {
		return 0, store.Classify(err, "read a passport's checkpoint")
	}
	c, through, err := heads.Read(ctx, tx, asset.String())
	if err != nil {
		return 0, err
	}
	completeness := &c
	if through != uint64(size) {
		completeness = nil // signed by a version of the service without the heads
	}
	return uint64(size), parts.Head(note, completeness)
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

// passportPerformers hands parts who performed each action of a passport
// (in the order of the actions' records): the organization and person its
// latest event names, each with its name as the latest of its own events
// in the tree of size held it (a person's as redacted, if it was).
func passportPerformers(ctx context.Context, tx pgx.Tx, asset uuid.UUID, size uint64, parts passportParts) error {
	rows, err := tx.Query(ctx, passportSubjects+`, latest AS (
			SELECT DISTINCT ON (subject_id) subject_id, body -> 'data' AS data FROM passport
			WHERE kind = 'action' ORDER BY subject_id, seq DESC
		), firsts AS (
			SELECT subject_id, min(seq) AS first FROM passport WHERE kind = 'action' GROUP BY subject_id
		)
		SELECT l.subject_id, l.data ->> 'organization_id', o.name, l.data ->> 'person_id', p.first_name, p.last_name
		FROM latest l JOIN firsts f USING (subject_id)
		LEFT JOIN LATERAL (SELECT body -> 'data' ->> 'name' AS name FROM events
			WHERE kind = 'organization' AND subject_id = l.data ->> 'organization_id' AND leaf < $1
			ORDER BY seq DESC LIMIT 1) o ON true
		LEFT JOIN LATERAL (SELECT body -> 'data' ->> 'first_name' AS first_name, body -> 'data' ->> 'last_name' AS last_name FROM events
			WHERE kind = 'person' AND subject_id = l.data ->> 'person_id' AND leaf < $1
			ORDER BY seq DESC LIMIT 1) p ON true
		ORDER BY f.first`, int64(size), asset.String())
	if err != nil {
		return store.Classify(err, "read a passport's performers")
	}
	var performers []Performer
	var action string
	var org, orgName, person, first, last *string
	if _, err := pgx.ForEachRow(rows, []any{&action, &org, &orgName, &person, &first, &last}, func() error {
		p := Performer{ActionID: action}
		if org != nil {
			p.Organization = &Party{ID: *org, Name: copied(orgName)}
		}
		if person != nil {
			p.Person = &Party{ID: *person, Name: personName(copied(first), copied(last))}
		}
		performers = append(performers, p)
		return nil
	}); err != nil {
		return store.Classify(err, "read a passport's performers")
	}
	return parts.Performers(performers)
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
	proofs, err := tlog.InclusionProofsIn(ctx, st.Log, tx, leaves, size)
	if err != nil {
		return err
	}
	for i := range events {
		events[i].Proof = proofs[i]
	}
	return parts.Events(events)
}

// CreateLink stores a link (its token's hash, not the token).
func (st *Store) CreateLink(ctx context.Context, l Link, hash []byte) error {
	_, err := st.DB(ctx).Exec(ctx, `INSERT INTO passport_links (id, asset_id, token_hash, expires_at, created_at, created_by)
		VALUES ($1, $2, $3, $4, $5, $6)`, l.ID, l.AssetID, hash, l.ExpiresAt, l.CreatedAt, l.CreatedBy)
	return store.Classify(err, "create a passport link")
}

// ListLinks lists an asset's links, a page in id order.
func (st *Store) ListLinks(ctx context.Context, asset uuid.UUID, page model.Page) (model.Paged[Link], error) {
	var f store.Filter
	f.Where("asset_id = ?", asset)
	return store.List(ctx, st.DB(ctx), "list passport links",
		"SELECT id, asset_id, expires_at, created_at, created_by, fetch_count, last_fetched_at FROM passport_links", f, page,
		func(l Link) uuid.UUID { return l.ID })
}

// DeleteLink deletes one of an asset's links (404 when it has none of
// id), unless check, handed the link as it is under the delete's lock,
// refuses.
func (st *Store) DeleteLink(ctx context.Context, p LinkPath, check func(Link) error) error {
	return st.Write(ctx, "delete a passport link", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		rows, err := tx.Query(ctx, `SELECT id, asset_id, expires_at, created_at, created_by, fetch_count, last_fetched_at
			FROM passport_links WHERE id = $1 AND asset_id = $2 FOR UPDATE`, p.ID, p.AssetID)
		if err != nil {
			return nil, store.Classify(err, "delete a passport link")
		}
		l, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Link])
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, apperr.NotFound("passport_link", p.ID.String())
		}
		if err != nil {
			return nil, store.Classify(err, "delete a passport link")
		}
		if err := check(l); err != nil {
			return nil, err
		}
		_, err = tx.Exec(ctx, `DELETE FROM passport_links WHERE id = $1`, p.ID)
		return nil, store.Classify(err, "delete a passport link")
	})
}

// FetchLink counts a fetch through the link whose token hashes to hash,
// at now, and answers its asset: a 404 when no link has it or it expired.
func (st *Store) FetchLink(ctx context.Context, hash []byte, now time.Time) (uuid.UUID, error) {
	var asset uuid.UUID
	err := st.DB(ctx).QueryRow(ctx, `UPDATE passport_links SET fetch_count = fetch_count + 1, last_fetched_at = $2
		WHERE token_hash = $1 AND (expires_at IS NULL OR expires_at > $2) RETURNING asset_id`, hash, now).Scan(&asset)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, apperr.NotFound("passport", "")
	}
	return asset, store.Classify(err, "fetch a passport link")
}

// AssetRecorded reports whether the log holds an event of the asset.
func (st *Store) AssetRecorded(ctx context.Context, asset uuid.UUID) (bool, error) {
	var found bool
	err := st.DB(ctx).QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE kind = 'asset' AND subject_id = $1)`, asset.String()).Scan(&found)
	return found, store.Classify(err, "find an asset's events")
}
