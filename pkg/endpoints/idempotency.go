// Idempotency keys make a POST safe to retry: a client that sends an
// Idempotency-Key gets, for the same key and the same request, the first
// answer again (status, body, Location) instead of a second execution. This
// is what lets an honest retry after a 503 (a database stall, a service
// killed mid-request) never duplicate what was in fact committed.
//
// A key is scoped to the calling client (the token's subject). The record
// is claimed (in flight, with a lease) before the request runs, and the
// answer is stored in the same transaction as the request's writes (the
// store's unit of work), so either both commit or neither does. The same
// key with another request is a 422; a key whose request is still in
// flight is a 409. Records live at least Retention.

package endpoints

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-kit/kit/endpoint"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/auth"
	"github.com/assetregistry/registry/pkg/httpx"
	"github.com/assetregistry/registry/pkg/leader"
	"github.com/assetregistry/registry/pkg/store"
)

// IdempotencyKeyHeader is the request header (draft-ietf-httpapi-idempotency-key-header).
const IdempotencyKeyHeader = "Idempotency-Key"

// IdempotencyRetention is how long a done record is kept (and a key cannot be reused).
const IdempotencyRetention = 24 * time.Hour

const maxKeyLen = 255

// IdempotencyKeys are the records of one service.
type IdempotencyKeys struct {
	store *store.Store
	lease time.Duration
	step  time.Duration
}

// NewIdempotencyKeys returns the service's keys over its store; lease bounds how long a
// request that died keeps its key in flight (longer than any request), and
// step each of the keys' own database steps (claiming a key, recording the
// answer and committing): the request timeout. A request that may run
// longer than that (an upload) has no deadline of its own until its end,
// and a database that stops answering would otherwise hold it as long.
func NewIdempotencyKeys(st *store.Store, lease, step time.Duration) *IdempotencyKeys {
	return &IdempotencyKeys{store: st, lease: lease, step: step}
}

// bounded is ctx for one database step: at most k.step, when set.
func (k *IdempotencyKeys) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if k.step <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, k.step)
}

type requestKey struct{}

type keysKey struct{}

// Handler makes k the keys of every request through next; the service kit
// puts it around a service's routes.
func (k *IdempotencyKeys) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keysKey{}, k)))
	})
}

// keyed is a request that carries a key.
type keyed struct {
	keys *IdempotencyKeys
	key  string
	err  error
}

// IdempotencyBefore is the go-kit ServerBefore that picks the header up on a POST,
// for Middleware.
func IdempotencyBefore(ctx context.Context, r *http.Request) context.Context {
	k, _ := ctx.Value(keysKey{}).(*IdempotencyKeys)
	if k == nil || r.Method != http.MethodPost {
		return ctx
	}
	values := r.Header.Values(IdempotencyKeyHeader)
	if len(values) == 0 {
		return ctx
	}
	req := &keyed{keys: k, key: values[0]}
	switch {
	case len(values) > 1:
		req.err = apperr.BadRequest("send one " + IdempotencyKeyHeader + " header")
	case !validKey(values[0]):
		req.err = apperr.BadRequest(fmt.Sprintf("%s must be 1 to %d visible ASCII characters", IdempotencyKeyHeader, maxKeyLen))
	}
	return context.WithValue(ctx, requestKey{}, req)
}

func validKey(k string) bool {
	if k == "" || len(k) > maxKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// Streamed is a request whose fingerprint is not its JSON form, because it
// is read as it streams (an upload): Fingerprint is valid once the request
// has been read to its end, which Drain does when it is not executed.
type Streamed interface {
	Fingerprint() (string, error)
	Drain() error
}

// Idempotent runs the endpoint under the request's Idempotency-Key, if it
// has one.
func Idempotent(next endpoint.Endpoint) endpoint.Endpoint {
	return func(ctx context.Context, request any) (any, error) {
		req, _ := ctx.Value(requestKey{}).(*keyed)
		if req == nil {
			return next(ctx, request)
		}
		if req.err != nil {
			return nil, req.err
		}
		return req.keys.run(ctx, req.key, request, next)
	}
}

func (k *IdempotencyKeys) run(ctx context.Context, key string, request any, next endpoint.Endpoint) (any, error) {
	p, _ := auth.PrincipalFrom(ctx)
	client := p.Subject
	token, existing, err := k.claim(ctx, client, key)
	if err != nil {
		// The claim may have been made though its answer was lost (the
		// caller hung up as it committed): freed like a failed request's
		// key, or its retry would answer 409 until the lease ran out. In
		// the background: after a database failure it would only wait.
		// claim hands no token back for a statement that never left, so
		// a pool out of connections is not asked for one more.
		if token != uuid.Nil {
			go k.release(ctx, client, key, token)
		}
		return nil, err
	}
	if existing != nil {
		return existing.answer(ctx, request)
	}
	ctx, unit := k.store.BeginUnit(ctx)
	// release frees the key of a request that failed, before the answer,
	// so that a corrected retry runs at once. After a failure of a
	// dependency it runs in the background instead: it would only wait on
	// the database that just failed (a paused one does not answer at all),
	// and the claim's lease frees the key anyway.
	release := func(cause error) {
		free := func() {
			unit.Rollback(ctx)
			k.release(ctx, client, key, token)
		}
		if apperr.Is(cause, apperr.KindUnavailable) {
			go free()
			return
		}
		free()
	}
	response, err := next(ctx, request)
	if err != nil {
		release(err)
		return nil, err
	}
	fingerprint, err := fingerprintOf(ctx, request, false)
	if err != nil {
		release(err)
		return nil, err
	}
	status, location, body, err := httpx.Render(response)
	if err != nil {
		release(err)
		return nil, err
	}
	// From here the request is done and only its record and commit are
	// left: a caller that hangs up now (a killed import) must not cancel
	// them halfway, which would leave its key in flight until the lease
	// ends and its retry answered 409 all that time. They are bounded by
	// the step timeout instead.
	stepCtx, cancel := k.bounded(context.WithoutCancel(ctx))
	defer cancel()
	tx, err := unit.Tx(stepCtx)
	if err != nil {
		release(err)
		return nil, err
	}
	tag, err := tx.Exec(stepCtx, `UPDATE idempotency_keys SET state = 'done', fingerprint = $4, status = $5, location = $6,
		body = $7, created_at = now() WHERE client = $1 AND key = $2 AND token = $3`,
		client, key, token, fingerprint, status, location, body)
	if err == nil && tag.RowsAffected() == 0 {
		// The claim's lease ran out and another request took the key:
		// committing now would execute the request twice.
		err = apperr.Unavailable("the request", fmt.Errorf("idempotency: the lease of key %q expired", key))
	}
	if err != nil {
		err = store.Classify(err, "record idempotency key")
		release(err)
		return nil, err
	}
	if err := unit.Commit(stepCtx); err != nil {
		// Whether the commit happened is unknown; the record (done or
		// still in flight) tells the retry which.
		return nil, err
	}
	return response, nil
}

// record is a claimed key's state.
type record struct {
	state       string
	fingerprint *string
	status      *int
	location    *string
	body        []byte
}

// claim takes the key for this request, or returns the record that holds it.
// When claiming fails after the statement was sent, it still returns the
// token it claimed with, whose claim may have been made.
func (k *IdempotencyKeys) claim(ctx context.Context, client, key string) (uuid.UUID, *record, error) {
	ctx, cancel := k.bounded(ctx)
	defer cancel()
	token := uuid.New()
	pool := k.store.Pool
	tag, err := pool.Exec(ctx, `INSERT INTO idempotency_keys (client, key, token, state, lease_until)
		VALUES ($1, $2, $3, 'in_flight', now() + make_interval(secs => $4))
		ON CONFLICT (client, key) DO UPDATE SET token = EXCLUDED.token, state = 'in_flight',
			lease_until = EXCLUDED.lease_until, fingerprint = NULL, status = NULL, location = NULL, body = NULL, created_at = now()
		WHERE (idempotency_keys.state = 'in_flight' AND idempotency_keys.lease_until < now())
		   OR (idempotency_keys.state = 'done' AND idempotency_keys.created_at < now() - make_interval(secs => $5))`,
		client, key, token, k.lease.Seconds(), IdempotencyRetention.Seconds())
	if err != nil {
		if store.NeverSent(err) {
			token = uuid.Nil
		}
		return token, nil, store.Classify(err, "claim idempotency key")
	}
	if tag.RowsAffected() == 1 {
		return token, nil, nil
	}
	var r record
	err = pool.QueryRow(ctx, `SELECT state, fingerprint, status, location, body FROM idempotency_keys
		WHERE client = $1 AND key = $2`, client, key).Scan(&r.state, &r.fingerprint, &r.status, &r.location, &r.body)
	if errors.Is(err, pgx.ErrNoRows) {
		// Reclaimed and released between the two statements; rare enough
		// that the client may simply retry.
		return uuid.Nil, nil, apperr.Conflict("a request with this "+IdempotencyKeyHeader+" is in progress").WithHeader("Retry-After", "1")
	}
	if err != nil {
		return uuid.Nil, nil, store.Classify(err, "read idempotency key")
	}
	return uuid.Nil, &r, nil
}

// answer is what a request gets for a key someone holds.
func (r *record) answer(ctx context.Context, request any) (any, error) {
	if r.state != "done" {
		return nil, apperr.Conflict("a request with this "+IdempotencyKeyHeader+" is still in progress; retry it later").WithHeader("Retry-After", "1")
	}
	fingerprint, err := fingerprintOf(ctx, request, true)
	if err != nil {
		return nil, err
	}
	if r.fingerprint == nil || *r.fingerprint != fingerprint {
		return nil, apperr.Invalid(apperr.FieldError{Field: IdempotencyKeyHeader,
			Message: "was used with another request; a key may be reused only for the same request"})
	}
	replay := httpx.Replay{Status: *r.status, Body: r.body}
	if r.location != nil {
		replay.Location = *r.location
	}
	return replay, nil
}

func (k *IdempotencyKeys) release(ctx context.Context, client, key string, token uuid.UUID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Best effort: a claim left behind expires with its lease.
	_, _ = k.store.Pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE client = $1 AND key = $2 AND token = $3 AND state = 'in_flight'`,
		client, key, token)
}

// fingerprintOf identifies a request: its path and its decoded body (or,
// for a streamed one, what the stream carried), so the same request sent
// again matches whatever its JSON's member order or its multipart
// boundary.
func fingerprintOf(ctx context.Context, request any, drain bool) (string, error) {
	h := sha256.New()
	h.Write([]byte(httpx.RequestInfoFrom(ctx).Path))
	h.Write([]byte{0})
	request, _ = in(request)
	if s, ok := request.(Streamed); ok {
		if drain {
			if err := s.Drain(); err != nil {
				return "", err
			}
		}
		fp, err := s.Fingerprint()
		if err != nil {
			return "", err
		}
		h.Write([]byte(fp))
	} else {
		raw, err := json.Marshal(request)
		if err != nil {
			return "", fmt.Errorf("idempotency: fingerprint: %w", err)
		}
		h.Write(raw)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sweepBatch bounds one step of the sweep.
const sweepBatch = 1000

// SweepTask is the maintenance task (pkg/leader) that removes records past
// their retention, oldest first, a batch at a time: a record's lease ends
// after it was created, so every record past retention was created before
// the cut, and the walk of created_at's index from its start finds them.
func (k *IdempotencyKeys) SweepTask() leader.Task {
	return leader.Task{Name: "sweep idempotency keys", Every: time.Hour,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			tag, err := conn.Exec(ctx, `DELETE FROM idempotency_keys r USING (
					SELECT client, key FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)
					ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED) old
				WHERE r.client = old.client AND r.key = old.key
				  AND ((r.state = 'done' AND r.created_at < now() - make_interval(secs => $1))
				    OR (r.state = 'in_flight' AND r.lease_until < now() - make_interval(secs => $1)))`,
				IdempotencyRetention.Seconds(), sweepBatch)
			if err != nil {
				return 0, false, store.Classify(err, "sweep idempotency keys")
			}
			return tag.RowsAffected(), tag.RowsAffected() == sweepBatch, nil
		}}
}
