package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
	"github.com/assetregistry/registry/pkg/store"
	"github.com/assetregistry/registry/services/events/feed"
)

// Store is the SQL of the events service: the feed, webhooks and their
// deliveries, in schema events.
type Store struct {
	s     *store.Store
	tree  treeCache  // the log's tree as this process last appended to it
	tiles tileCache  // the log's tiles this process read or wrote, for proofs
	nodes nodeCache  // the log's upper nodes this process hashed, for proofs
	reads *tileReads // the proofs' reads of tiles, coalesced
}

// NewStore returns the store over s.
func NewStore(s *store.Store) *Store {
	return &Store{s: s, tiles: newTileCache(), nodes: newNodeCache(), reads: &tileReads{pool: s.Pool}}
}

// Incoming is one event read from the stream: its parsed envelope and the
// bytes as published.
type Incoming struct {
	Event outbox.Event
	Raw   []byte
	// StreamSeq is the message's sequence in the stream; 0 when it did
	// not come from one.
	StreamSeq uint64
}

// StreamPosition is what the consumer named Consumer has stored of Stream:
// everything up to StreamSeq.
type StreamPosition struct {
	Consumer, Stream string
	StreamSeq        uint64
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
	ids, types, kinds, subjects, bodies := make([]string, len(batch)), make([]string, len(batch)),
		make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch))
	for i, in := range batch {
		e := in.Event
		ids[i], types[i], kinds[i], subjects[i], bodies[i] = canonicalID(e.ID), e.Type, e.Subject.Kind, e.Subject.ID, string(in.Raw)
	}
	// While PostgreSQL inserts the batch, another core hashes its leaves
	// and grows the tree by them (speculate), off the feed's lock and off
	// the time a batch takes.
	speculation := make(chan speculativeAppend, 1)
	go func() { speculation <- st.speculate(ids, batch) }()
	var tree *appender
	var grown string
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
		b.Queue(LockFeed)
		b.Queue("SELECT size, root FROM log_state")
		// The rows are numbered in the batch's order (unnest keeps it, the
		// sort makes it explicit); an event stored before (a redelivery, a
		// second publish, or twice in this batch) is left out before
		// numbering, so leaves follow each other. Each keeps its size, for
		// the pages' bound. The events stored before are looked up by the
		// batch's ids, once, in each partition's id index: written as NOT
		// EXISTS, the planner made it an anti-join that read the whole feed
		// for every batch (a cost that grew with the feed).
		b.Queue(InsertEvents, ids, types, kinds, subjects, bodies)
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
		state := logState{Size: uint64(size), Root: root}
		if spec.holds(state, leaves) {
			tree, grown = spec.tree, "ahead"
			return st.writeTree(ctx, tx, spec.tree, spec.changed, spec.root)
		}
		grown = "under_lock"
		hashes := make([][]byte, stored)
		for i := range batch {
			if leaf, ok := leaves[ids[i]]; ok && leaf-size < int64(stored) && hashes[leaf-size] == nil {
				hashes[leaf-size] = spec.leafHashes[i]
			}
		}
		tree, err = st.appendLeaves(ctx, tx, state, hashes)
		return err
	})
	if err == nil && tree != nil {
		st.committed(tree)
		logAppends.WithLabelValues(grown).Inc()
	}
	return stored, err
}

// RecordPosition is the statement of StoreFromStream that records where
// the consumer $1 resumes: stream $2 up to its sequence $3. It is exported
// for the bench, whose row without the log stores as the consumer does.
const RecordPosition = `INSERT INTO stream_position (consumer, stream, stream_seq) VALUES ($1, $2, $3)
	ON CONFLICT (consumer) DO UPDATE SET stream = EXCLUDED.stream, stream_seq = EXCLUDED.stream_seq`

// InsertEvents is the insert of StoreFromStream: $1 to $5 are the batch's
// ids, types, subject kinds, subject ids and bodies, in its order. It is
// exported for the bench, whose row without the log runs it with the leaf
// numbers taken out.
const InsertEvents = `INSERT INTO events (seq, leaf, id, type, kind, subject_id, body, size)
	SELECT nextval('events_seq'), (SELECT size FROM log_state) + row_number() OVER (ORDER BY t.n) - 1, t.id, t.type, t.kind, t.subject_id, t.body::json,
		octet_length(t.body)
	FROM (SELECT DISTINCT ON (id) id::uuid AS id, type, kind, subject_id, body, n
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY
			AS u(id, type, kind, subject_id, body, n)
		ORDER BY id, n) t
	WHERE t.id NOT IN (SELECT e.id FROM events e WHERE e.id = ANY($1::uuid[]))
	ORDER BY t.n
	RETURNING id::text, leaf`

// FanOut queues deliveries of the events stored since the subscriptions'
// places in the feed. One call takes up to subscriptions of them (those
// furthest behind first; another replica's are skipped, not waited for)
// and, for each, the events of the next step positions of the feed after
// its place whose types it names; it moves each place on in the same
// transaction, so an event is queued once for a subscription, in the
// feed's order. Its cost is bounded by subscriptions × step, whatever
// the number of subscriptions or the backlog; behind says that some
// subscription may still be behind (call again).
func (st *Store) FanOut(ctx context.Context, subscriptions, step int) (queued int, behind bool, err error) {
	err = store.InTx(ctx, st.s.Pool, "queue deliveries", func(tx pgx.Tx) error {
		var hooks []uuid.UUID
		var after, upto []int64
		var newest int64
		rows, err := tx.Query(ctx, `SELECT w.id, w.fanned_through, least(w.fanned_through + $2, n.seq), n.seq
			FROM webhooks w, (SELECT newest_event() AS seq) n
			WHERE w.fanned_through < n.seq
			ORDER BY w.fanned_through, w.id LIMIT $1
			FOR UPDATE OF w SKIP LOCKED`, subscriptions, step)
		if err != nil {
			return store.Classify(err, "find subscriptions behind the feed")
		}
		var id uuid.UUID
		var from, to int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &from, &to, &newest}, func() error {
			hooks, after, upto = append(hooks, id), append(after, from), append(upto, to)
			behind = behind || to < newest
			return nil
		}); err != nil {
			return store.Classify(err, "find subscriptions behind the feed")
		}
		if len(hooks) == 0 {
			return nil
		}
		behind = behind || len(hooks) == subscriptions
		rows, err = tx.Query(ctx, `SELECT s.id, e.seq, e.id::text, e.kind, e.subject_id
			FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS s(id, after, upto)
			JOIN webhooks w ON w.id = s.id
			JOIN events e ON e.seq > s.after AND e.seq <= s.upto AND (e.type = ANY(w.types) OR e.kind || '.*' = ANY(w.types))
			ORDER BY s.id, e.seq`, hooks, after, upto)
		if err != nil {
			return store.Classify(err, "read the events to deliver")
		}
		var d deliveryRows
		var seq int64
		var event, kind, subject string
		if _, err := pgx.ForEachRow(rows, []any{&id, &seq, &event, &kind, &subject}, func() error {
			d.add(id, seq, event, kind+":"+subject)
			return nil
		}); err != nil {
			return store.Classify(err, "read the events to deliver")
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO deliveries (id, webhook_id, event_seq, event_id, subject, next_attempt_at)
			SELECT id, webhook_id, event_seq, event_id::uuid, subject, now()
			FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[], $5::text[]) AS t(id, webhook_id, event_seq, event_id, subject)
			ON CONFLICT DO NOTHING`, d.ids, d.webhooks, d.seqs, d.events, d.subjects)
		b.Queue(`UPDATE webhooks w SET fanned_through = s.upto FROM unnest($1::uuid[], $2::bigint[]) AS s(id, upto)
			WHERE w.id = s.id`, hooks, upto)
		results := tx.SendBatch(ctx, b)
		defer results.Close()
		tag, err := results.Exec()
		if err != nil {
			return store.Classify(err, "queue deliveries")
		}
		queued = int(tag.RowsAffected())
		if _, err := results.Exec(); err != nil {
			return store.Classify(err, "move the subscriptions' places in the feed")
		}
		return store.Classify(results.Close(), "queue deliveries")
	})
	return queued, behind, err
}

// canonicalID is id as the database prints a uuid, so that the ids the
// insert returns find their events (Parse accepts any form uuid.Validate
// does).
func canonicalID(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return id
}

// deliveryRows are the columns of the deliveries a fan-out queues.
type deliveryRows struct {
	ids, webhooks    []uuid.UUID
	seqs             []int64
	events, subjects []string
}

func (d *deliveryRows) add(webhook uuid.UUID, seq int64, event, subject string) {
	d.ids = append(d.ids, store.NewID())
	d.webhooks = append(d.webhooks, webhook)
	d.seqs = append(d.seqs, seq)
	d.events = append(d.events, event)
	d.subjects = append(d.subjects, subject)
}

// ErrCursorExpired is the 410 of a feed cursor from before what retention
// removed.
func errCursorExpired() error {
	e := apperr.New(apperr.KindGone, "the cursor is older than the events the registry keeps; start again without after (from the oldest kept event) or with after=now")
	e.Code = "cursor-expired"
	return e
}

// Feed reads one page of the change feed in one snapshot, so the next
// position it gives never skips an event committed meanwhile.
func (st *Store) Feed(ctx context.Context, q feed.FeedQuery) (feed.Feed, error) {
	feed := feed.Feed{Events: []json.RawMessage{}, Filter: q.Filter}
	err := readSnapshot(ctx, st.s.Pool, "read the feed", func(tx pgx.Tx) error {
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
func (st *Store) History(ctx context.Context, q feed.HistoryQuery) (feed.History, error) {
	var f store.Filter
	f.Where("kind = ANY(?)", feed.HistoryOf(q.Kind))
	f.Where("subject_id = ?", q.ID.String())
	f.Where("seq > ?", q.After)
	rows, err := st.s.DB(ctx).Query(ctx, pageSQL(f, q.Limit+1), f.Args()...)
	if err != nil {
		return feed.History{}, store.Classify(err, "read a history")
	}
	page, err := readPage(rows)
	if err != nil {
		return feed.History{}, store.Classify(err, "read a history")
	}
	h := feed.History{Events: page.events}
	switch {
	case len(h.Events) == 0 && q.After == 0:
		return h, apperr.NotFound(q.Kind, q.ID.String())
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

// readSnapshot runs fn in a read-only repeatable-read transaction: every
// statement sees the same committed state.
func readSnapshot(ctx context.Context, pool *store.Pool, op string, fn func(pgx.Tx) error) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return store.Classify(err, op)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	if err := fn(tx); err != nil {
		return err
	}
	return store.Classify(tx.Commit(ctx), op)
}

// Webhooks.

// webhookRow is a subscription with its secrets.
type webhookRow struct {
	Webhook
	Secret              string     `db:"secret"`
	PreviousSecret      *string    `db:"previous_secret"`
	PreviousSecretUntil *time.Time `db:"previous_secret_until"`
}

const webhookColumns = `id, url, types, description, secret, previous_secret, previous_secret_until,
	created_at, created_by, updated_at, updated_by`

// CreateWebhook stores a new subscription of by's, once admit allows it
// beside the subscriptions by has: a lock per owner orders the creates of
// one client, so two at once cannot both pass a cap.
func (st *Store) CreateWebhook(ctx context.Context, by model.Caller, in WebhookInput, secret string, admit func(owned int) error) (Webhook, error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	owner := by.Subject
	w := Webhook{ID: store.NewID(), URL: in.URL, Types: in.Types, Description: in.Description,
		Audit: model.Audit{CreatedAt: now, CreatedBy: owner, UpdatedAt: now, UpdatedBy: owner}}
	err := st.s.Write(ctx, "create webhook", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		// The count is a statement after the lock, so it sees what the
		// previous holder committed.
		b := &pgx.Batch{}
		b.Queue("SELECT pg_advisory_xact_lock(hashtextextended('webhooks of ' || $1, 0))", owner)
		b.Queue("SELECT count(*) FROM webhooks WHERE created_by = $1", owner)
		results := tx.SendBatch(ctx, b)
		_, err := results.Exec()
		var owned int
		if err == nil {
			err = results.QueryRow().Scan(&owned)
		}
		if err = errors.Join(err, results.Close()); err != nil {
			return nil, store.Classify(err, "count the client's webhooks")
		}
		if err := admit(owned); err != nil {
			return nil, err
		}
		_, err = tx.Exec(ctx, `INSERT INTO webhooks (id, url, types, description, secret, created_at, created_by, updated_at, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $6, $7)`, w.ID, w.URL, w.Types, w.Description, secret, now, owner)
		return nil, store.Classify(err, "create webhook")
	})
	return w, err
}

// webhook reads one subscription with its secrets, locked for update when
// forUpdate.
func (st *Store) webhook(ctx context.Context, q store.Querier, id uuid.UUID, forUpdate bool) (webhookRow, error) {
	sql := "SELECT " + webhookColumns + " FROM webhooks WHERE id = $1"
	if forUpdate {
		sql += " FOR UPDATE"
	}
	return store.One[webhookRow](ctx, q, "read webhook", "webhook", id, sql, id)
}

// GetWebhook reads one subscription with its secrets.
func (st *Store) GetWebhook(ctx context.Context, id uuid.UUID) (webhookRow, error) {
	return st.webhook(ctx, st.s.DB(ctx), id, false)
}

// ListWebhooks lists the subscriptions the client created.
func (st *Store) ListWebhooks(ctx context.Context, owner string, page model.Page) (model.Paged[Webhook], error) {
	var f store.Filter
	f.Where("created_by = ?", owner)
	return store.List(ctx, st.s.DB(ctx), "list webhooks",
		"SELECT id, url, types, description, created_at, created_by, updated_at, updated_by FROM webhooks", f, page,
		func(w Webhook) uuid.UUID { return w.ID })
}

// UpdateWebhook applies change to the locked subscription and stores
// what it returns under g; check decides, on the row as it is, whether
// the caller may (a 404 for another client's).
func (st *Store) UpdateWebhook(ctx context.Context, g model.Guard, id uuid.UUID, check func(webhookRow) error,
	change func(webhookRow) (webhookRow, error)) (webhookRow, error) {
	var out webhookRow
	err := st.s.Write(ctx, "update webhook", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		current, err := st.lockedWebhook(ctx, tx, g, id, check)
		if err != nil {
			return nil, err
		}
		next, err := change(current)
		if err != nil {
			return nil, err
		}
		next.UpdatedAt, next.UpdatedBy = time.Now().UTC().Truncate(time.Microsecond), g.Subject
		_, err = tx.Exec(ctx, `UPDATE webhooks SET url = $2, types = $3, description = $4, secret = $5,
			previous_secret = $6, previous_secret_until = $7, updated_at = $8, updated_by = $9 WHERE id = $1`,
			id, next.URL, next.Types, next.Description, next.Secret, next.PreviousSecret, next.PreviousSecretUntil,
			next.UpdatedAt, next.UpdatedBy)
		out = next
		return nil, store.Classify(err, "update webhook")
	})
	return out, err
}

// DeleteWebhook removes a subscription and its deliveries.
func (st *Store) DeleteWebhook(ctx context.Context, g model.Guard, id uuid.UUID, check func(webhookRow) error) error {
	return st.s.Write(ctx, "delete webhook", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		if _, err := st.lockedWebhook(ctx, tx, g, id, check); err != nil {
			return nil, err
		}
		_, err := tx.Exec(ctx, "DELETE FROM webhooks WHERE id = $1", id)
		return nil, store.Classify(err, "delete webhook")
	})
}

// lockedWebhook reads the subscription FOR UPDATE and lets a change or a
// delete go on only when check allows the caller and g's If-Match, if
// any, names it as a GET shows it (412 when it names another).
func (st *Store) lockedWebhook(ctx context.Context, tx pgx.Tx, g model.Guard, id uuid.UUID, check func(webhookRow) error) (webhookRow, error) {
	current, err := st.webhook(ctx, tx, id, true)
	if err != nil {
		return webhookRow{}, err
	}
	if err := check(current); err != nil {
		return webhookRow{}, err
	}
	return current, g.Precondition(current.Webhook)
}

const deliveryColumns = "id, event_id, attempts, status, last_status_code, last_error, next_attempt_at"

// ListDeliveries lists a subscription's deliveries in the order they were
// queued.
func (st *Store) ListDeliveries(ctx context.Context, webhook uuid.UUID, status *string, page model.Page) (model.Paged[Delivery], error) {
	var f store.Filter
	f.Where("webhook_id = ?", webhook)
	store.Equal(&f, "status", status)
	return store.List(ctx, st.s.DB(ctx), "list deliveries", "SELECT "+deliveryColumns+" FROM deliveries", f, page,
		func(d Delivery) uuid.UUID { return d.ID })
}

// RetryDelivery queues a failed delivery again, from a fresh retry
// schedule; a pending one stays as it is; a succeeded one is a 409.
func (st *Store) RetryDelivery(ctx context.Context, p DeliveryPath) (Delivery, error) {
	var d Delivery
	err := st.s.Write(ctx, "retry delivery", func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		var err error
		d, err = store.One[Delivery](ctx, tx, "read delivery", "delivery", p.ID,
			"SELECT "+deliveryColumns+" FROM deliveries WHERE id = $1 AND webhook_id = $2 FOR UPDATE", p.ID, p.WebhookID)
		if err != nil {
			return nil, err
		}
		switch d.Status {
		case StatusSucceeded:
			return nil, apperr.Conflict("delivery " + d.ID.String() + " succeeded; only a failed delivery can be retried")
		case StatusPending:
			return nil, nil
		}
		d, err = store.One[Delivery](ctx, tx, "retry delivery", "delivery", p.ID,
			`UPDATE deliveries SET status = 'pending', next_attempt_at = now(), queued_at = now(), updated_at = now()
			WHERE id = $1 RETURNING `+deliveryColumns, p.ID)
		return nil, err
	})
	return d, err
}

// Job is a delivery claimed for one attempt, with what the attempt needs.
type Job struct {
	ID, WebhookID, EventID uuid.UUID
	Attempts               int // counting this one
	QueuedAt               time.Time
	URL                    string
	Secrets                []string
	Body                   []byte // nil when the event is no longer kept
}

// Claim leases up to n due deliveries for one attempt each, giving each
// subscription its turn. Per subscription and subject only the earliest
// pending delivery is due, so a later event never overtakes an earlier one.
// A subscription never has more than maxInFlight deliveries leased at once
// (across every dispatcher: the claims take turns under a lock), and the
// deliveries are taken in turns: first one of each subscription with the
// fewest in flight, then a second of each, and so on, earliest due first
// within a turn. So a receiver that hangs holds at most maxInFlight
// workers, and the others' deliveries go first while it does. The lease
// (next_attempt_at and leased_until moved past the attempt's longest time)
// keeps other dispatchers off it; a dispatcher that dies mid-attempt
// leaves it to be tried again when the lease ends. The cost is a few index
// probes per subscription with due deliveries.
func (st *Store) Claim(ctx context.Context, n, maxInFlight int, lease time.Duration) ([]Job, error) {
	var jobs []Job
	err := store.InTx(ctx, st.s.Pool, "claim deliveries", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('deliveries claim:' || current_schema(), 0))"); err != nil {
			return store.Classify(err, "take the claims' turn")
		}
		rows, err := tx.Query(ctx, `WITH turns AS (
				SELECT c.id, f.in_flight + row_number() OVER (PARTITION BY w.id ORDER BY c.next_attempt_at, c.id) AS turn, c.next_attempt_at
				FROM webhooks w
				CROSS JOIN LATERAL (SELECT count(*) AS in_flight FROM deliveries f
					WHERE f.webhook_id = w.id AND f.leased_until > now() AND f.status = 'pending') f
				CROSS JOIN LATERAL (SELECT d.id, d.next_attempt_at FROM deliveries d
					WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= now()
					  AND NOT EXISTS (SELECT 1 FROM deliveries e WHERE e.webhook_id = d.webhook_id AND e.subject = d.subject
					                  AND e.status = 'pending' AND e.event_seq < d.event_seq)
					ORDER BY d.next_attempt_at LIMIT greatest($2 - f.in_flight, 0)) c),
			chosen AS (
				SELECT d.id FROM deliveries d
				JOIN (SELECT id FROM turns ORDER BY turn, next_attempt_at LIMIT $1) t ON t.id = d.id
				FOR UPDATE OF d SKIP LOCKED)
			UPDATE deliveries d SET attempts = d.attempts + 1, next_attempt_at = now() + $3::interval,
				leased_until = now() + $3::interval, updated_at = now()
			FROM chosen, webhooks w
			WHERE d.id = chosen.id AND w.id = d.webhook_id
			RETURNING d.id, d.webhook_id, d.event_id, d.attempts, d.queued_at, w.url,
				array_remove(ARRAY[w.secret, CASE WHEN w.previous_secret_until > now() THEN w.previous_secret END], NULL),
				(SELECT body::text FROM events e WHERE e.seq = d.event_seq)`, n, maxInFlight, lease)
		if err != nil {
			return store.Classify(err, "claim deliveries")
		}
		var j Job
		var body *string
		_, err = pgx.ForEachRow(rows, []any{&j.ID, &j.WebhookID, &j.EventID, &j.Attempts, &j.QueuedAt, &j.URL, &j.Secrets, &body}, func() error {
			job := j
			if body != nil {
				job.Body = []byte(*body)
			}
			jobs = append(jobs, job)
			return nil
		})
		return store.Classify(err, "claim deliveries")
	})
	return jobs, err
}

// Outcome is what one attempt came to.
type Outcome struct {
	StatusCode int    // 0: no answer
	Error      string // "" on success
	// Status is the delivery's status after the attempt; Next its next
	// attempt when it stays pending.
	Status string
	Next   time.Time
}

// Record stores an attempt's outcome.
func (st *Store) Record(ctx context.Context, id uuid.UUID, o Outcome) error {
	var code *int
	if o.StatusCode != 0 {
		code = &o.StatusCode
	}
	var lastErr, next any
	if o.Error != "" {
		lastErr = o.Error
	}
	if o.Status == StatusPending {
		next = o.Next
	}
	_, err := st.s.Pool.Exec(ctx, `UPDATE deliveries SET status = $2, last_status_code = $3, last_error = $4,
		next_attempt_at = $5, leased_until = NULL, updated_at = now() WHERE id = $1`, id, o.Status, code, lastErr, next)
	return store.Classify(err, "record delivery attempt")
}

// DeliveryCounts are the pending and the failed deliveries, for the
// metrics: each counted over its partial index, so the cost follows the
// backlog and the failures kept (webhooks.delivery-retention), not every
// delivery ever made.
func (st *Store) DeliveryCounts(ctx context.Context) (map[string]int64, error) {
	var pending, failed int64
	err := st.s.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM deliveries WHERE status = 'pending'),
		(SELECT count(*) FROM deliveries WHERE status = 'failed')`).Scan(&pending, &failed)
	return map[string]int64{StatusPending: pending, StatusFailed: failed}, store.Classify(err, "count deliveries")
}

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
