package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/feed/retention"
	"github.com/assetregistry/registry/services/events/tlog"
)

// Store is the SQL of the change feed and the histories, in schema
// events; each event it stores is the log's next leaf (Log). The reads of
// bound callers filter on its copy of the assets' access, which the
// ingest teaches.
type Store struct {
	*tlog.LogReader
}

// NewStore returns the store over s, appending to the log through log.
func NewStore(s *store.Store, log *tlog.Store) *Store {
	return &Store{LogReader: tlog.NewLogReader(s, log)}
}

// StoreEvents stores each event not stored yet, in order, numbering them,
// in one transaction. It returns how many were new. Their deliveries are
// queued afterwards, by FanOut.
func (st *Store) StoreEvents(ctx context.Context, batch []Incoming) (stored int, err error) {
	return st.StoreFromStream(ctx, nil, batch)
}

// StoreFromStream is StoreEvents for a batch read from the stream: in the
// same transaction it records at (with the batch's last sequence) as where
// the consumer resumes. Each new event is also the log's next leaf: its
// number is taken in the insert, and the tree grows by the batch before
// the commit.
func (st *Store) StoreFromStream(ctx context.Context, at *StreamPosition, batch []Incoming) (stored int, err error) {
	assets, parties, err := st.scopes(ctx, batch)
	if err != nil {
		return 0, err
	}
	ids, types, kinds, subjects, bodies := make([]string, len(batch)), make([]string, len(batch)),
		make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch))
	// An event that holds personal fields is stored with a salt for each
	// and logged with their commitments (tlog.CommitPersonal): the leaf
	// is of its logged form.
	logged := make([][]byte, len(batch))
	for i, in := range batch {
		e := in.Event
		served, leaf := tlog.CommitPersonal(e.Subject.Kind, in.Raw)
		ids[i], types[i], kinds[i], subjects[i], bodies[i] = canonicalID(e.ID), e.Type, e.Subject.Kind, e.Subject.ID, string(served)
		logged[i] = leaf
	}
	// While PostgreSQL inserts the batch, another core hashes its leaves
	// and grows the tree by them (speculate), off the feed's lock and off
	// the time a batch takes.
	speculation := make(chan tlog.Speculation, 1)
	go func() { speculation <- st.Log.Speculate(ids, logged) }()
	var appended tlog.Appended
	err = store.InTx(ctx, st.Pool, "store events", func(tx pgx.Tx) error {
		// One round trip for the batch, however many events it holds: the
		// position, the lock, the log's size and the events' insert travel
		// together (each event a round trip of its own cost the database
		// more than the event's insert); the log's tiles travel with the
		// COMMIT (appendLeaves), the second and last. Its
		// cost does not depend on the subscriptions: their deliveries are
		// queued afterwards (FanOut).
		b := &pgx.Batch{}
		if at != nil {
			for _, in := range batch {
				at.StreamSeq = max(at.StreamSeq, in.StreamSeq)
			}
			b.Queue(RecordPosition, at.Consumer, at.Stream, int64(at.StreamSeq))
		}
		// The lock serialises the transactions that number events and
		// leaves, so the order of seq is the order of commits: a reader
		// that sees seq n+1 sees seq n (also while two replicas hand the
		// consumer over), the events up to the newest a reader sees are all
		// there, and leaves are numbered without a gap.
		b.Queue(tlog.LockFeed)
		b.Queue("SELECT size, root FROM log_state")
		// The rows are numbered in the batch's order (unnest keeps it, the
		// sort makes it explicit); an event stored before (a redelivery, a
		// second publish, or twice in this batch) is left out before
		// numbering, so leaves follow each other. Each keeps its size, for
		// the pages' bound. The events stored before are looked up by the
		// batch's ids, once, in each partition's id index: written as NOT
		// EXISTS, the planner made it an anti-join that read the whole feed
		// for every batch (a cost that grew with the feed).
		b.Queue(InsertEvents, ids, types, kinds, subjects, bodies, assets, parties)
		results := tx.SendBatch(ctx, b)
		defer results.Close()
		if at != nil {
			if _, err := results.Exec(); err != nil {
				return store.Classify(err, "record the stream position")
			}
		}
		if _, err := results.Exec(); err != nil {
			return store.Classify(err, "lock the feed")
		}
		var size int64
		var root []byte
		if err := results.QueryRow().Scan(&size, &root); err != nil {
			return store.Classify(err, "read the log's state")
		}
		rows, err := results.Query()
		if err != nil {
			return store.Classify(err, "store events")
		}
		leaves := make(map[string]int64, len(batch))
		var id string
		var leaf int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &leaf}, func() error { leaves[id] = leaf; return nil }); err != nil {
			return store.Classify(err, "store events")
		}
		if err := results.Close(); err != nil {
			return store.Classify(err, "store events")
		}
		stored = len(leaves)
		spec := <-speculation
		if stored == 0 {
			return nil
		}
		appended, err = st.Log.Append(ctx, tx, size, root, ids, leaves, spec)
		return err
	})
	if err == nil && stored > 0 {
		st.Log.Committed(appended)
		logAppends.WithLabelValues(appended.Grown).Inc()
	}
	return stored, err
}

// scopes are the batch's events' assets and parties, as InsertEvents takes
// them (docs/events.md, "Who sees which event"). An action document's
// asset is its action's: the batch's own action events name it, or the
// action's stored events do. The copy of the assets' access learns the
// owners the batch's asset creations name, and looks up the assets it has
// not met (an action's event may arrive before its asset's creation,
// which another service's relay publishes).
func (st *Store) scopes(ctx context.Context, batch []Incoming) (assets, parties []*string, err error) {
	scopes := make([]Scope, len(batch))
	created := map[string]model.Access{} // one per asset: the copy keeps a row once
	var unknownActions []string
	actions := map[string]string{} // an action's asset, as the batch last named it
	for i, in := range batch {
		sc := ScopeOf(in.Event)
		switch {
		case in.Event.Subject.Kind == outbox.KindAction && sc.Asset != "":
			actions[in.Event.Subject.ID] = sc.Asset
		case sc.Action != "":
			if a, ok := actions[sc.Action]; ok {
				sc.Asset = a
			} else {
				unknownActions = append(unknownActions, sc.Action)
			}
		}
		if sc.Access != nil {
			created[sc.Access.AssetID] = *sc.Access
		}
		scopes[i] = sc
	}
	stored := map[string]string{}
	if len(unknownActions) > 0 {
		rows, err := st.Pool.Query(ctx, `SELECT DISTINCT ON (subject_id) subject_id, asset_id::text FROM events
			WHERE kind = 'action' AND subject_id = ANY($1) AND asset_id IS NOT NULL
			ORDER BY subject_id, seq DESC`, unknownActions)
		if err != nil {
			return nil, nil, store.Classify(err, "read the assets of actions")
		}
		var action, asset string
		if _, err := pgx.ForEachRow(rows, []any{&action, &asset}, func() error { stored[action] = asset; return nil }); err != nil {
			return nil, nil, store.Classify(err, "read the assets of actions")
		}
	}
	if err := st.Access().Store().Learn(ctx, slices.Collect(maps.Values(created))); err != nil {
		return nil, nil, err
	}
	assets, parties = make([]*string, len(batch)), make([]*string, len(batch))
	var named []string
	for i, sc := range scopes {
		if sc.Asset == "" && sc.Action != "" {
			sc.Asset = stored[sc.Action]
		}
		if sc.Asset != "" {
			assets[i] = &sc.Asset
			named = append(named, sc.Asset)
		}
		if len(sc.Parties) > 0 {
			list := "{" + strings.Join(sc.Parties, ",") + "}"
			parties[i] = &list
		}
	}
	// Best effort: with the assets service away the batch is stored all
	// the same (the feed never waits for a peer); the copy learns the
	// asset from its creation's event, or the first read by id of it.
	_, _ = st.Access().Lookup(ctx, slices.Compact(slices.Sorted(slices.Values(named))))
	return assets, parties, nil
}

// RecordPosition is the statement of StoreFromStream that records where
// the consumer $1 resumes: stream $2 up to its sequence $3. It is exported
// for the bench, whose row without the log stores as the consumer does.
const RecordPosition = `INSERT INTO stream_position (consumer, stream, stream_seq) VALUES ($1, $2, $3)
	ON CONFLICT (consumer) DO UPDATE SET stream = EXCLUDED.stream, stream_seq = EXCLUDED.stream_seq`

// InsertEvents is the insert of StoreFromStream: $1 to $7 are the batch's
// ids, types, subject kinds, subject ids, bodies, assets and parties (each
// NULL or an array literal), in its order. It is exported for the bench,
// whose row without the log runs it with the leaf numbers taken out.
const InsertEvents = `INSERT INTO events (seq, leaf, id, type, kind, subject_id, body, size, asset_id, parties)
	SELECT nextval('events_seq'), (SELECT size FROM log_state) + row_number() OVER (ORDER BY t.n) - 1, t.id, t.type, t.kind, t.subject_id, t.body::json,
		octet_length(t.body), t.asset_id::uuid, t.parties::uuid[]
	FROM (SELECT DISTINCT ON (id) id::uuid AS id, type, kind, subject_id, body, asset_id, parties, n
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY
			AS u(id, type, kind, subject_id, body, asset_id, parties, n)
		ORDER BY id, n) t
	WHERE t.id NOT IN (SELECT e.id FROM events e WHERE e.id = ANY($1::uuid[]))
	ORDER BY t.n
	RETURNING id::text, leaf`

// Feed reads one page of the change feed in one snapshot, so the next
// position it gives never skips an event committed meanwhile.
func (st *Store) Feed(ctx context.Context, q FeedQuery) (Feed, error) {
	feed := Feed{Events: []json.RawMessage{}, Filter: q.Filter}
	err := tlog.ReadSnapshot(ctx, st.Pool, "read the feed", func(tx pgx.Tx) error {
		var horizon, newest int64
		if err := tx.QueryRow(ctx, `SELECT pruned_through, (SELECT coalesce(max(seq), 0) FROM events) FROM feed_horizon`).
			Scan(&horizon, &newest); err != nil {
			return store.Classify(err, "read the feed's horizon")
		}
		if q.Now {
			feed.Next = max(newest, horizon)
			return nil
		}
		if !q.Oldest && q.After < horizon {
			return errCursorExpired()
		}
		after := max(q.After, horizon)
		var f store.Filter
		f.Where("seq > ?", after)
		if !q.Filter.Empty() {
			f.Where("(type = ANY(?) OR kind = ANY(?))", q.Filter.Types, q.Filter.Kinds)
		}
		seenBy(&f, q.Organization)
		rows, err := tx.Query(ctx, pageSQL(f, q.Limit), f.Args()...)
		if err != nil {
			return store.Classify(err, "read the feed")
		}
		page, err := readPage(rows)
		if err != nil {
			return store.Classify(err, "read the feed")
		}
		feed.Events = page.events
		switch {
		case page.cut || len(page.events) == q.Limit:
			feed.Next = page.seqs[len(page.seqs)-1]
		default:
			// Nothing more in this snapshot matches: the next page can
			// start after the newest event, whatever the filter skipped.
			feed.Next = max(newest, after)
		}
		return nil
	})
	return feed, err
}

// History reads one page of a subject's events. The first page of a
// subject without events is a 404.
func (st *Store) History(ctx context.Context, q HistoryQuery) (History, error) {
	var f store.Filter
	f.Where("kind = ANY(?)", HistoryOf(q.Kind))
	f.Where("subject_id = ?", q.ID.String())
	f.Where("seq > ?", q.After)
	seenBy(&f, q.Organization)
	rows, err := st.DB(ctx).Query(ctx, pageSQL(f, q.Limit+1), f.Args()...)
	if err != nil {
		return History{}, store.Classify(err, "read a history")
	}
	page, err := readPage(rows)
	if err != nil {
		return History{}, store.Classify(err, "read a history")
	}
	h := History{Events: page.events}
	switch {
	case len(h.Events) == 0 && q.After == 0:
		return h, apperr.NotFound(q.Kind, q.ID.String())
	case len(h.Events) == 0 && q.Organization != "":
		// A later page of a history the caller no longer sees (its asset
		// was handed over since): a 404 as its first page is.
		first := q
		first.After, first.Limit = 0, 1
		if _, err := st.History(ctx, first); err != nil {
			return History{}, err
		}
	case page.cut:
		h.Next = page.seqs[len(page.seqs)-1]
	case len(h.Events) > q.Limit:
		h.Events, h.Next = h.Events[:q.Limit], page.seqs[q.Limit-1]
	}
	return h, nil
}

// pageSQL reads up to limit events matching f in order, and stops before
// the event that would take the page's body ("[", the events, "," between
// them, "]\n") past model.MaxPageBytes; the first is always read. The
// event it stops before comes back with a NULL body (its own is never
// read), telling readPage that the page was cut. The running size is a
// window over the stored sizes, so the bodies left out cost nothing.
func pageSQL(f store.Filter, limit int) string {
	within := strconv.Itoa(model.MaxPageBytes - 2) // each event counts its size and one "[" or ","
	return `SELECT seq, CASE WHEN n = 1 OR upto <= ` + within + ` THEN body END
		FROM (SELECT seq, body, size, row_number() OVER w AS n, sum(size + 1) OVER w AS upto
			FROM (SELECT seq, body, coalesce(size, octet_length(body::text)) AS size
				FROM events` + f.SQL() + ` ORDER BY seq LIMIT ` + strconv.Itoa(limit) + `) candidates
			WINDOW w AS (ORDER BY seq)) page
		WHERE n <= 2 OR upto - size - 1 <= ` + within + `
		ORDER BY seq`
}

// seenBy keeps, for a bound caller (organization not ""), the events its
// organization sees: those of no asset and no parties (organizations,
// people, asset types, documents), a transfer's when it is one of the two
// parties, and those of an asset it sees in the copy of the assets'
// access (access.VisibleTo). For everyone else it adds nothing: the query
// is the one before tenancy.
func seenBy(f *store.Filter, organization string) {
	if organization == "" {
		return
	}
	p := "$" + strconv.Itoa(len(f.Args())+1)
	f.Where(`((events.asset_id IS NULL AND (events.parties IS NULL OR `+p+`::uuid = ANY (events.parties)))
		OR `+access.VisibleTo("events.asset_id", p)+`)`, organization)
}

// eventPage is what pageSQL read: the events' bodies as stored and their
// positions, and whether the page was cut by its size.
type eventPage struct {
	events []json.RawMessage
	seqs   []int64
	cut    bool
}

func readPage(rows pgx.Rows) (eventPage, error) {
	page := eventPage{events: []json.RawMessage{}}
	var seq int64
	var body []byte
	_, err := pgx.ForEachRow(rows, []any{&seq, &body}, func() error {
		if body == nil {
			page.cut = true
			return nil
		}
		page.events = append(page.events, bytes.Clone(body))
		page.seqs = append(page.seqs, seq)
		return nil
	})
	return page, err
}

// Webhooks.

// Position is where the consumer named consumer resumes in stream: after
// the sequence it returns, 0 for the stream's start.
func (st *Store) Position(ctx context.Context, consumer, stream string) (uint64, error) {
	var seq int64
	err := st.Pool.QueryRow(ctx, `SELECT stream_seq FROM stream_position WHERE consumer = $1 AND stream = $2`, consumer, stream).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return uint64(seq), store.Classify(err, "read the stream position")
}

// AsOf is the data of the subject's latest event at or before at: the
// resource as it was then; a 404 when it did not exist yet or was deleted
// by then. Events of one resource are stored in commit order, and their
// times (the commit's) grow with it.
func (st *Store) AsOf(ctx context.Context, q AsOfQuery) (json.RawMessage, error) {
	kind, id, at := q.Kind, q.ID, q.At
	var typ string
	var data []byte
	var f store.Filter
	f.Where("kind = ?", q.Kind)
	f.Where("subject_id = ?", q.ID.String())
	f.Where("(body ->> 'time')::timestamptz <= ?", q.At)
	seenBy(&f, q.Organization)
	err := st.DB(ctx).QueryRow(ctx, `SELECT type, body -> 'data' FROM events`+f.SQL()+`
		ORDER BY seq DESC LIMIT 1`, f.Args()...).Scan(&typ, &data)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && strings.HasSuffix(typ, "."+outbox.OpDeleted)) {
		return nil, apperr.New(apperr.KindNotFound, fmt.Sprintf("no %s %s existed at %s", kind, id, at.Format(time.RFC3339Nano)))
	}
	if err != nil {
		return nil, store.Classify(err, "read a resource as it was")
	}
	return data, nil
}

// Prune runs the feed's and the histories' maintenance to its end now
// (retention.Prune) and says how many events left the histories.
func (st *Store) Prune(ctx context.Context, feedRetention, historyRetention time.Duration) (int64, error) {
	return retention.Prune(ctx, st.Pool, feedRetention, historyRetention)
}
