package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/tlog"
)

// Store is the SQL of the change feed and the histories, in schema
// events; each event it stores is the log's next leaf (log).
type Store struct {
	s   *store.Store
	log *tlog.Store
	// access is the copy of who sees which asset (pkg/access) the reads
	// of bound callers filter on and the ingest teaches.
	access *access.Copy
}

// NewStore returns the store over s, appending to the log through log.
// Its copy of the assets' access is the schema's alone (nothing refreshes
// it from the assets service) until UseAccess names the service's.
func NewStore(s *store.Store, log *tlog.Store) *Store {
	return &Store{s: s, log: log, access: access.New(s, nil)}
}

// UseAccess makes c the copy the store filters on and teaches.
func (st *Store) UseAccess(c *access.Copy) { st.access = c }

// Access is the store's copy of the assets' access.
func (st *Store) Access() *access.Copy { return st.access }

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
	for i, in := range batch {
		e := in.Event
		ids[i], types[i], kinds[i], subjects[i], bodies[i] = canonicalID(e.ID), e.Type, e.Subject.Kind, e.Subject.ID, string(in.Raw)
	}
	// While PostgreSQL inserts the batch, another core hashes its leaves
	// and grows the tree by them (speculate), off the feed's lock and off
	// the time a batch takes.
	speculation := make(chan tlog.Speculation, 1)
	go func() {
		raw := make([][]byte, len(batch))
		for i, in := range batch {
			raw[i] = in.Raw
		}
		speculation <- st.log.Speculate(ids, raw)
	}()
	var appended tlog.Appended
	err = store.InTx(ctx, st.s.Pool, "store events", func(tx pgx.Tx) error {
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
		appended, err = st.log.Append(ctx, tx, size, root, ids, leaves, spec)
		return err
	})
	if err == nil && stored > 0 {
		st.log.Committed(appended)
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
		rows, err := st.s.Pool.Query(ctx, `SELECT DISTINCT ON (subject_id) subject_id, asset_id::text FROM events
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
	if err := st.access.Store().Learn(ctx, slices.Collect(maps.Values(created))); err != nil {
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
	_, _ = st.access.Lookup(ctx, slices.Compact(slices.Sorted(slices.Values(named))))
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
	err := tlog.ReadSnapshot(ctx, st.s.Pool, "read the feed", func(tx pgx.Tx) error {
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
	rows, err := st.s.DB(ctx).Query(ctx, pageSQL(f, q.Limit+1), f.Args()...)
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
	err := st.s.Pool.QueryRow(ctx, `SELECT stream_seq FROM stream_position WHERE consumer = $1 AND stream = $2`, consumer, stream).Scan(&seq)
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
	err := st.s.DB(ctx).QueryRow(ctx, `SELECT type, body -> 'data' FROM events`+f.SQL()+`
		ORDER BY seq DESC LIMIT 1`, f.Args()...).Scan(&typ, &data)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && strings.HasSuffix(typ, "."+outbox.OpDeleted)) {
		return nil, apperr.New(apperr.KindNotFound, fmt.Sprintf("no %s %s existed at %s", kind, id, at.Format(time.RFC3339Nano)))
	}
	if err != nil {
		return nil, store.Classify(err, "read a resource as it was")
	}
	return data, nil
}

// The events schema's maintenance (pkg/leader): what retention no longer
// keeps leaves the feed, the histories and the deliveries, on one replica
// at a time and a bounded batch per step, so no statement nears the
// statement timeout however large the tables grow, and no request waits
// long behind one.

// maintenanceBatch bounds the rows one step handles.
const maintenanceBatch = 1000

// feedPruneTask moves the feed's horizon past the events older than
// retention: a cursor from before is then a 410. One statement, two probes
// of indexes: the newest stored_at before the cut, then the highest seq
// among the events stored at that instant (one batch shares it). A storing
// transaction that waited for the numbering lock may carry an older
// stored_at than one numbered before it, so the horizon may stop an event
// short of the oldest kept, never past one younger than retention by more
// than that wait.
func feedPruneTask(retention, every time.Duration) leader.Task {
	return leader.Task{Name: "prune the feed", Every: every,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			tag, err := conn.Exec(ctx, `UPDATE feed_horizon SET pruned_through = horizon.seq
				FROM (SELECT max(seq) AS seq FROM events WHERE stored_at =
					(SELECT max(stored_at) FROM events WHERE stored_at < now() - $1::interval)) horizon
				WHERE horizon.seq > pruned_through`, retention)
			if err != nil {
				return 0, false, store.Classify(err, "prune the feed")
			}
			return tag.RowsAffected(), false, nil
		}}
}

// historyPruneTask removes from the histories the events older than
// retention that are not their subject's latest, walking the feed's pruned
// part in seq order a batch at a time (a run starts from its beginning:
// an event kept as its subject's latest goes once a later one arrives).
// Their leaves stay in the log's tiles.
func historyPruneTask(retention, every time.Duration) leader.Task {
	var after int64 // where the run's walk is; 0 at the start of a run
	return leader.Task{Name: "prune the histories", Every: every,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			var (
				last    *int64
				removed int64
			)
			err := conn.QueryRow(ctx, `WITH batch AS (
					SELECT seq FROM events WHERE seq > $2 AND seq <= (SELECT pruned_through FROM feed_horizon)
					ORDER BY seq LIMIT $3
				), gone AS (
					DELETE FROM events e USING batch b WHERE e.seq = b.seq AND e.stored_at < now() - $1::interval
					  AND EXISTS (SELECT 1 FROM events later WHERE later.kind = e.kind AND later.subject_id = e.subject_id AND later.seq > e.seq)
					RETURNING 1
				)
				SELECT (SELECT max(seq) FROM batch), (SELECT count(*) FROM gone)`, retention, after, maintenanceBatch).Scan(&last, &removed)
			if err != nil {
				after = 0
				return 0, false, store.Classify(err, "prune the histories")
			}
			if last == nil {
				after = 0
				return removed, false, nil
			}
			after = *last
			return removed, true, nil
		}}
}

// The partitioned tables (migrations 007 and 008): the feed by ranges of
// 10 million seqs, the deliveries by week of their UUIDv7 ids. The widths
// are those the migrations started with; docs/capacity.md says why.
var (
	feedPartitions = leader.Partitions{Table: "events",
		Key: leader.SeqKey{Sequence: "events_seq", Width: 10_000_000}, Ahead: 2}
)

// historyDropTask drops whole the partitions of the feed that retention
// has passed and that keep nothing: every event in them is in the feed's
// pruned part, older than the histories' retention, and not its
// subject's latest (which histories keep). A DETACH CONCURRENTLY and a
// DROP free the partition's disk at once, where historyPruneTask's DELETE
// writes each row to the WAL and leaves its space to vacuum. Whether a
// partition keeps a subject's latest event is read a batch a step (one
// index probe an event); the first such event ends the partition's
// survey, and the prune deletes around it. The last partition is never
// dropped: the table goes on from it.
func historyDropTask(parts leader.Partitions, retention, every time.Duration) leader.Task {
	// Where the run's survey is: the partition from which on it looks,
	// and the last seq read in it.
	from, after := int64(math.MinInt64), int64(math.MinInt64)
	next := func(part leader.Partition) { from, after = part.To, math.MinInt64 }
	return leader.Task{Name: "drop the histories' partitions", Every: every,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			list, err := parts.List(ctx, conn)
			if err != nil {
				from, after = math.MinInt64, math.MinInt64
				return 0, false, err
			}
			var horizon int64
			if err := conn.QueryRow(ctx, `SELECT pruned_through FROM feed_horizon`).Scan(&horizon); err != nil {
				from, after = math.MinInt64, math.MinInt64
				return 0, false, store.Classify(err, "read the feed's horizon")
			}
			for _, part := range list[:max(len(list)-1, 0)] {
				if part.To-1 > horizon {
					break
				}
				if part.To <= from { // surveyed in this run already
					continue
				}
				dropped, done, err := surveyStep(ctx, conn, parts, part, retention, &after)
				if err != nil {
					from, after = math.MinInt64, math.MinInt64
					return 0, false, err
				}
				if done {
					next(part)
				}
				return dropped, true, nil
			}
			from, after = math.MinInt64, math.MinInt64
			return 0, false, nil
		}}
}

// surveyStep reads one batch of the partition after *after and drops the
// partition once the whole was read without an event it keeps; done says
// the partition's survey ended (dropped, or kept).
func surveyStep(ctx context.Context, conn *pgx.Conn, parts leader.Partitions, part leader.Partition,
	retention time.Duration, after *int64) (dropped int64, done bool, err error) {
	table := pgx.Identifier{part.Name}.Sanitize()
	if *after == math.MinInt64 {
		var young bool
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(stored_at) >= now() - $1::interval, false) FROM `+table, retention).Scan(&young); err != nil {
			return 0, false, store.Classify(err, "read the partition "+part.Name)
		}
		if young {
			return 0, true, nil
		}
	}
	var (
		last   *int64
		latest bool
	)
	if err := conn.QueryRow(ctx, `SELECT max(seq), coalesce(bool_or(NOT EXISTS (SELECT 1 FROM events later
			WHERE later.kind = e.kind AND later.subject_id = e.subject_id AND later.seq > e.seq)), false)
		FROM (SELECT seq, kind, subject_id FROM `+table+` WHERE seq > $1 ORDER BY seq LIMIT $2) e`,
		*after, maintenanceBatch).Scan(&last, &latest); err != nil {
		return 0, false, store.Classify(err, "read the partition "+part.Name)
	}
	switch {
	case latest:
		return 0, true, nil
	case last != nil:
		*after = *last
		return 0, false, nil
	}
	if err := parts.Drop(ctx, conn, part); err != nil {
		return 0, false, err
	}
	return 1, true, nil
}

// Prune runs the feed's and the histories' tasks to their end on one
// connection, now, and says how many events left the histories: the
// tests' and a command's way to prune without waiting for the leader.
func (st *Store) Prune(ctx context.Context, retention, historyRetention time.Duration) (int64, error) {
	conn, err := st.s.Pool.Acquire(ctx)
	if err != nil {
		return 0, store.Classify(err, "prune the feed")
	}
	defer conn.Release()
	if _, err := feedPruneTask(retention, time.Hour).Drain(ctx, conn.Conn()); err != nil || historyRetention <= 0 {
		return 0, err
	}
	if _, err := historyDropTask(feedPartitions, historyRetention, time.Hour).Drain(ctx, conn.Conn()); err != nil {
		return 0, err
	}
	return historyPruneTask(historyRetention, time.Hour).Drain(ctx, conn.Conn())
}

// Partitions are the feed's partitions, for tests that look at them.
func Partitions() leader.Partitions { return feedPartitions }

// Tasks are the feed's maintenance of the schema: its partitions ahead,
// made up every partitionsEvery, the feed's retention every pruneEvery,
// and, with a retention of histories, their prune.
func Tasks(partitionsEvery, retention, pruneEvery, historyRetention time.Duration) []leader.Task {
	tasks := []leader.Task{feedPartitions.Task(partitionsEvery), feedPruneTask(retention, pruneEvery)}
	if historyRetention > 0 {
		tasks = append(tasks, historyDropTask(feedPartitions, historyRetention, pruneEvery),
			historyPruneTask(historyRetention, pruneEvery))
	}
	return tasks
}
