package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/store"
)

// Store is the SQL of subscriptions and their deliveries, in schema
// events (their fan-out reads the feed's events).
type Store struct {
	s *store.Store
}

// NewStore returns the store over s.
func NewStore(s *store.Store) *Store { return &Store{s: s} }

// maintenanceBatch is the rows one step of a purge removes at most.
const maintenanceBatch = 1000

// deliveryPartitions are the deliveries' partitions (migration 008): by
// week of their UUIDv7 ids; docs/capacity.md says why.
var deliveryPartitions = leader.Partitions{Table: "deliveries",
	Key: leader.TimeKey{Span: 7 * 24 * time.Hour}, Ahead: 3}

// Tasks are the deliveries' maintenance of the schema: their partitions
// ahead, made up every partitionsEvery, and, with a retention, the
// removal of the settled ones older than it.
func Tasks(partitionsEvery, retention time.Duration) []leader.Task {
	tasks := []leader.Task{deliveryPartitions.Task(partitionsEvery)}
	if retention > 0 {
		tasks = append(tasks, deliveryDropTask(deliveryPartitions, retention), deliveryPurgeTask(retention))
	}
	return tasks
}

// FanOut queues deliveries of the events stored since the subscriptions'
// places in the feed. One call takes up to subscriptions of them (those
// furthest behind first; another replica's are skipped, not waited for)
// and, for each, the events of the next step positions of the feed after
// its place whose types it names; it moves each place on in the same
// transaction, so an event is queued once for a subscription, in the
// feed's order. Its cost is bounded by subscriptions × step, whatever
// the number of subscriptions or the backlog; behind says that some
// subscription may still be behind (call again). It stops at through, the
// newest event (NewestEvent) before the caller's copy of who sees what.
func (st *Store) FanOut(ctx context.Context, subscriptions, step int, through int64) (queued int, behind bool, err error) {
	return st.fanOut(ctx, subscriptions, step, through, false)
}

// NewestEvent is the feed's newest position.
func (st *Store) NewestEvent(ctx context.Context) (seq int64, err error) {
	err = st.s.Pool.QueryRow(ctx, `SELECT newest_event()`).Scan(&seq)
	return seq, store.Classify(err, "read the feed's newest position")
}

// FanOutUnbound is FanOut of the subscriptions made by clients bound to
// no organization alone: what the dispatcher still queues while it cannot
// tell what an organization sees (the assets service is away); the
// others keep their places and catch up afterwards.
func (st *Store) FanOutUnbound(ctx context.Context, subscriptions, step int, through int64) (queued int, behind bool, err error) {
	return st.fanOut(ctx, subscriptions, step, through, true)
}

func (st *Store) fanOut(ctx context.Context, subscriptions, step int, through int64, unboundOnly bool) (queued int, behind bool, err error) {
	err = store.InTx(ctx, st.s.Pool, "queue deliveries", func(tx pgx.Tx) error {
		var hooks []uuid.UUID
		var after, upto []int64
		var newest int64
		rows, err := tx.Query(ctx, `SELECT w.id, w.fanned_through, least(w.fanned_through + $2, n.seq), n.seq
			FROM webhooks w, (SELECT least(newest_event(), $4) AS seq) n
			WHERE w.fanned_through < n.seq AND (NOT $3 OR w.organization_id IS NULL)
			ORDER BY w.fanned_through, w.id LIMIT $1
			FOR UPDATE OF w SKIP LOCKED`, subscriptions, step, unboundOnly, through)
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
			WHERE `+seenBySubscriber+`
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

// seenBySubscriber keeps the events a subscription's organization sees
// as the deliveries are queued (the copy of the assets' access refreshed
// before, Dispatcher.fanOut): every event for a subscription made by a
// client bound to none; else those of no asset and no parties, a
// transfer's when the organization is one of its parties, and those of
// an asset it sees (docs/events.md, "Who sees which event").
var seenBySubscriber = `(w.organization_id IS NULL
	OR (e.asset_id IS NULL AND (e.parties IS NULL OR w.organization_id = ANY (e.parties)))
	OR ` + access.VisibleTo("e.asset_id", "w.organization_id") + `)`

// deliveryRows are the columns of the deliveries a fan-out queues.
type deliveryRows struct {
	ids, webhooks    []uuid.UUID
	seqs             []int64
	events, subjects []string
}

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
		// A bound client's subscription delivers what its organization
		// sees (seenBySubscriber).
		var organization *string
		if by.Organization != "" {
			organization = &by.Organization
		}
		_, err = tx.Exec(ctx, `INSERT INTO webhooks (id, url, types, description, secret, created_at, created_by, updated_at, updated_by, organization_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $6, $7, $8)`, w.ID, w.URL, w.Types, w.Description, secret, now, owner, organization)
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

// deliveryPurgeTask removes the deliveries that succeeded or failed longer
// than retention ago (by their last attempt), a batch at a time over the
// partial index of settled deliveries. Pending ones stay whatever their
// age: they are still being retried.
func deliveryPurgeTask(retention time.Duration) leader.Task {
	return leader.Task{Name: "purge deliveries", Every: time.Hour,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			tag, err := conn.Exec(ctx, `DELETE FROM deliveries WHERE id IN (
					SELECT id FROM deliveries WHERE status IN ('succeeded', 'failed') AND updated_at < now() - $1::interval
					LIMIT $2)`, retention, maintenanceBatch)
			if err != nil {
				return 0, false, store.Classify(err, "purge deliveries")
			}
			return tag.RowsAffected(), tag.RowsAffected() == maintenanceBatch, nil
		}}
}

// deliveryDropTask drops whole the partitions of deliveries whose week
// ended longer than retention ago and that hold no delivery still pending
// and none settled within retention (a manual retry brings an old one
// back). Both are read from partial indexes, a probe each.
func deliveryDropTask(parts leader.Partitions, retention time.Duration) leader.Task {
	return leader.Task{Name: "drop deliveries' partitions", Every: time.Hour,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			list, err := parts.List(ctx, conn)
			if err != nil {
				return 0, false, err
			}
			cut := time.Now().Add(-retention).UnixMilli()
			var dropped int64
			for _, part := range list {
				if part.To > cut {
					break
				}
				table := pgx.Identifier{part.Name}.Sanitize()
				var keeps bool
				if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE status = 'pending')
					OR EXISTS (SELECT 1 FROM `+table+` WHERE status <> 'pending' AND updated_at >= now() - $1::interval)`,
					retention).Scan(&keeps); err != nil {
					return dropped, false, store.Classify(err, "read the partition "+part.Name)
				}
				if keeps {
					continue
				}
				if err := parts.Drop(ctx, conn, part); err != nil {
					return dropped, false, err
				}
				dropped++
			}
			return dropped, false, nil
		}}
}

// PurgeDeliveries runs the deliveries' purge to its end now.
func (st *Store) PurgeDeliveries(ctx context.Context, retention time.Duration) (int64, error) {
	conn, err := st.s.Pool.Acquire(ctx)
	if err != nil {
		return 0, store.Classify(err, "purge deliveries")
	}
	defer conn.Release()
	if _, err := deliveryDropTask(deliveryPartitions, retention).Drain(ctx, conn.Conn()); err != nil {
		return 0, err
	}
	return deliveryPurgeTask(retention).Drain(ctx, conn.Conn())
}

func (d *deliveryRows) add(webhook uuid.UUID, seq int64, event, subject string) {
	d.ids = append(d.ids, store.NewID())
	d.webhooks = append(d.webhooks, webhook)
	d.seqs = append(d.seqs, seq)
	d.events = append(d.events, event)
	d.subjects = append(d.subjects, subject)
}
