// Package store is PostgreSQL for every service: the connection pool inside
// the service's own schema with its embedded migrations, the classification
// of database errors (a database that is down reaches clients as a 503,
// never as a 500 with SQL in it), keyset list queries, and the write kit a
// service's store builds on: writes that commit and then make stale the
// cached finds they change, a locked read-modify-write for updates, the 409
// that names the row holding a natural key, deletes that answer 404, and
// UUIDv7 ids. A service's store.go then holds its SQL and little else.
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/assetregistry/registry/pkg/apperr"
	"github.com/assetregistry/registry/pkg/model"
	"github.com/assetregistry/registry/pkg/outbox"
)

// Store is a service's pool, what its committed writes make stale, and
// where they record their change events.
type Store struct {
	Pool  *Pool
	finds Invalidator
	// Events records a change event of every write in the outbox, in the
	// write's transaction (Record); nil records none.
	Events *outbox.Recorder
}

// Record stores the events of changes made for by in tx, the write's own
// transaction (see outbox.Recorder); once the transaction commits, the
// relay is woken.
func (s *Store) Record(ctx context.Context, tx pgx.Tx, by model.Caller, changes ...outbox.Change) error {
	if err := s.Events.Record(ctx, tx, by, changes...); err != nil {
		return err
	}
	if len(changes) > 0 {
		pendingFrom(ctx).recorded = true
	}
	return nil
}

// RecordCreated records the creation of kind id by by with the resource as
// get reads it, which is the service's own GET code reading through the
// write's transaction (ctx); get is not called when no events are kept.
func (s *Store) RecordCreated(ctx context.Context, tx pgx.Tx, by model.Caller, kind string, id uuid.UUID, get func() (any, error)) error {
	if s.Events == nil {
		return nil
	}
	rep, err := get()
	if err != nil {
		return err
	}
	return s.Record(ctx, tx, by, outbox.Created(kind, id.String(), rep))
}

// RecordUpdate runs change, a write that changes resource kind id in ways
// an Updater does not (a document attached to it, say), and records its
// "<kind>.updated" event: get, the service's own GET code reading through
// the write's transaction, before and after. A change that turns out to
// change nothing GET shows records nothing.
func (s *Store) RecordUpdate(ctx context.Context, tx pgx.Tx, by model.Caller, kind string, id uuid.UUID, get func() (any, error), change func() error) error {
	if s.Events == nil {
		return change()
	}
	before, err := get()
	if err != nil {
		return err
	}
	if err := change(); err != nil {
		return err
	}
	after, err := get()
	if err != nil {
		return err
	}
	return s.Record(ctx, tx, by, outbox.Updated(kind, id.String(), before, after))
}

// Invalidator makes stale the cached finds that a committed write changed,
// named by scope (pkg/cache's Finds). The store knows no cache: it only
// says what changed, after the commit.
type Invalidator interface {
	Invalidate(ctx context.Context, scopes ...string)
}

// noCache is the Invalidator of a service without a find cache.
type noCache struct{}

func (noCache) Invalidate(context.Context, ...string) {}

// New returns a store over pool; finds may be nil (no cache).
func New(pool *Pool, finds Invalidator) *Store {
	if finds == nil {
		finds = noCache{}
	}
	return &Store{Pool: pool, finds: finds}
}

// Invalidator is what the store's writes make stale (pkg/cache's Finds,
// which also reaches the service's Redis), or a no-op without a cache.
func (s *Store) Invalidator() Invalidator { return s.finds }

type txKey struct{}

// Reads returns what a read that may lag the primary should run on: the
// transaction of the write or unit of work in progress, as DB does (a
// request reads what it wrote), else the read-only replica when the
// service has one (database.read-url), else the pool. Lists, finds and
// the compliance report read this way; see docs/operations.md for how
// far behind the replica may be.
func (s *Store) Reads(ctx context.Context) Querier {
	if q := s.DB(ctx); q != Querier(s.Pool) {
		return q
	}
	return s.Pool.Reads()
}

// DB returns what a query should run on: the transaction of the write in
// progress when ctx is inside one, or of the request's unit of work once it
// has begun (so a request reads what it wrote), else the pool.
func (s *Store) DB(ctx context.Context) Querier {
	if tx, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		return tx
	}
	if u := unitFrom(ctx); u != nil && u.tx != nil {
		return u.tx
	}
	return s.Pool
}

// Unit is a request's unit of work: every Write of the request joins one
// transaction, which commits once, at the end, together with whatever
// else must commit with the writes (an idempotency record of the answer),
// and only then are the finds the writes changed made stale. Writes that
// must be seen by others before the request ends (the reference
// protocol's marks) run outside it (WithoutUnit).
type Unit struct {
	store    *Store
	tx       pgx.Tx
	scopes   []string
	recorded bool // a write recorded events: wake the relay after the commit
	kept     bool // something written in tx has lasted (see LetGo)
}

type unitKey struct{}

// BeginUnit returns ctx carrying a new unit of work; its transaction
// begins with the first write (or Tx).
func (s *Store) BeginUnit(ctx context.Context) (context.Context, *Unit) {
	u := &Unit{store: s}
	return context.WithValue(ctx, unitKey{}, u), u
}

// Together runs fn with every Write inside it joining one transaction:
// the request's unit of work when it has one (which commits with the
// request's idempotency record), else a unit of its own, committed when fn
// returns nil and abandoned when it fails. A batch's items commit together
// this way, each in a savepoint of its own.
func (s *Store) Together(ctx context.Context, fn func(ctx context.Context) error) error {
	if unitFrom(ctx) != nil {
		return fn(ctx)
	}
	ctx, u := s.BeginUnit(ctx)
	if err := fn(ctx); err != nil {
		u.Rollback(ctx)
		return err
	}
	return u.Commit(ctx)
}

// WithoutUnit returns ctx whose writes commit on their own.
func WithoutUnit(ctx context.Context) context.Context {
	if unitFrom(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, unitKey{}, (*Unit)(nil))
}

func unitFrom(ctx context.Context) *Unit {
	u, _ := ctx.Value(unitKey{}).(*Unit)
	return u
}

// Holding reports whether ctx is inside a transaction: a Write's, or
// the request's unit of work's once it has begun. Whoever calls another
// service asks it first: a transaction held across a peer's answer holds
// a connection of the pool, and its locks, for as long as the peer takes.
func Holding(ctx context.Context) bool {
	if _, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		return true
	}
	u := unitFrom(ctx)
	return u != nil && u.tx != nil
}

// LetGo ends the transaction of ctx's unit of work when nothing written
// in it has lasted (every Write in it was undone), so that what comes
// next (a question to a peer) holds nothing; the unit's next write begins
// a new transaction. Inside a Write, or once a write of the unit has
// lasted, it does nothing (Holding still says so).
func LetGo(ctx context.Context) {
	if _, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		return
	}
	if u := unitFrom(ctx); u != nil && !u.kept {
		u.Rollback(ctx)
	}
}

// Tx returns the unit's transaction, beginning it on first use. What the
// caller writes in it lasts: LetGo no longer ends it.
func (u *Unit) Tx(ctx context.Context) (pgx.Tx, error) {
	tx, err := u.begin(ctx)
	u.kept = u.kept || err == nil
	return tx, err
}

// begin returns the unit's transaction, beginning it on first use.
func (u *Unit) begin(ctx context.Context) (pgx.Tx, error) {
	if u.tx == nil {
		tx, err := u.store.Pool.BeginWrite(ctx)
		if err != nil {
			return nil, Classify(err, "begin unit of work")
		}
		u.tx = tx
	}
	return u.tx, nil
}

// Commit commits what the unit wrote and then invalidates the finds it
// changed.
func (u *Unit) Commit(ctx context.Context) error {
	if u.tx == nil {
		return nil
	}
	if err := u.tx.Commit(ctx); err != nil {
		return Classify(err, "commit unit of work")
	}
	u.tx = nil
	u.store.finds.Invalidate(ctx, u.scopes...)
	if u.recorded {
		u.store.Events.Wake()
	}
	return nil
}

// rollbackTimeout bounds a unit of work's rollback.
const rollbackTimeout = 5 * time.Second

// Rollback abandons what the unit wrote; after Commit it does nothing.
func (u *Unit) Rollback(ctx context.Context) {
	if u.tx != nil {
		// Bounded: a database that stopped answering must not hold the
		// request (pgx closes the connection when this runs out, and the
		// server rolls back what the connection had open).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = u.tx.Rollback(ctx)
		u.tx = nil
	}
}

// Write runs fn in a transaction and commits it; then, and only then, it
// makes stale the cached finds that fn says it changed, so no write path
// can forget to and no reader can cache the state from before the commit.
// ctx inside fn carries the transaction, so DB(ctx) reads through it.
// Inside another Write, fn runs in a savepoint of the outer transaction.
func (s *Store) Write(ctx context.Context, op string, fn func(ctx context.Context, tx pgx.Tx) (changed []string, err error)) error {
	var changed []string
	run := func(tx pgx.Tx) error {
		var err error
		changed, err = fn(context.WithValue(ctx, txKey{}, tx), tx)
		return err
	}
	if outer, ok := ctx.Value(txKey{}).(pgx.Tx); ok {
		// A savepoint: a failed inner write leaves the outer one usable.
		if err := inSavepoint(ctx, outer, op, run); err != nil {
			return err
		}
		pendingFrom(ctx).add(changed)
		return nil
	}
	if u := unitFrom(ctx); u != nil {
		tx, err := u.begin(ctx)
		if err != nil {
			return err
		}
		pending := &invalidations{}
		if err := inSavepoint(context.WithValue(ctx, pendingKey{}, pending), tx, op, func(tx pgx.Tx) error {
			var err error
			changed, err = fn(context.WithValue(context.WithValue(ctx, pendingKey{}, pending), txKey{}, tx), tx)
			return err
		}); err != nil {
			return err
		}
		u.scopes = append(u.scopes, append(pending.scopes, changed...)...)
		u.recorded = u.recorded || pending.recorded
		u.kept = true
		return nil
	}
	pending := &invalidations{}
	ctx = context.WithValue(ctx, pendingKey{}, pending)
	if err := InTx(ctx, s.Pool, op, run); err != nil {
		return err
	}
	s.finds.Invalidate(ctx, append(pending.scopes, changed...)...)
	if pending.recorded {
		s.Events.Wake()
	}
	return nil
}

func inSavepoint(ctx context.Context, tx pgx.Tx, op string, fn func(pgx.Tx) error) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return Classify(err, op+": savepoint")
	}
	defer sp.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after release
	if err := fn(sp); err != nil {
		return Classify(err, op) // as InTx does
	}
	return Classify(sp.Commit(ctx), op+": release savepoint")
}

// invalidations collects the scopes of nested writes, and whether they
// recorded events, until the outermost transaction commits.
type invalidations struct {
	scopes   []string
	recorded bool
}

type pendingKey struct{}

func pendingFrom(ctx context.Context) *invalidations {
	if p, ok := ctx.Value(pendingKey{}).(*invalidations); ok {
		return p
	}
	return &invalidations{}
}

func (p *invalidations) add(scopes []string) { p.scopes = append(p.scopes, scopes...) }

// Updater is a locked read-modify-write of one row: the row is read FOR
// UPDATE, the caller computes the new state from it, and the new state is
// saved in the same transaction, so concurrent patches of different fields
// never undo each other.
type Updater[Row, In any] struct {
	Resource string // names the 404 ("organization")
	// Select reads the row by id ($1); FOR UPDATE is appended.
	Select string
	// Input is what the row holds now, as an input; a new state equal to it
	// is no change, so updated_at does not move either.
	Input func(Row) In
	// Save writes the new state on behalf of actor and names the finds it
	// makes stale.
	Save func(ctx context.Context, tx pgx.Tx, old Row, in In, actor string) (changed []string, err error)
	// Representation reads the resource as a GET shows it (ctx reads
	// through the update's transaction), for the guard's If-Match: a
	// client that names a representation other than the current one gets
	// a 412 and changes nothing.
	Representation func(ctx context.Context, row Row) (any, error)
	// Kind, when set, records an "<Kind>.updated" event of every update
	// that changes the row: Representation before and after the save.
	Kind string
	// ID is the row's id, for the event's subject (with Kind).
	ID func(Row) uuid.UUID
}

// Update applies apply to the row with id under g (the owner rule, then
// If-Match, under the row's lock) on behalf of its caller and returns the
// saved input (for the caller's conflict messages).
func (u Updater[Row, In]) Update(ctx context.Context, s *Store, g model.Guard, id uuid.UUID, apply func(Row) (In, error)) (In, error) {
	actor := g.Subject
	var in In
	err := s.Write(ctx, "update "+u.Resource, func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		current, err := One[Row](ctx, tx, "lock "+u.Resource, u.Resource, id, u.Select+" FOR UPDATE", id)
		if err != nil {
			return nil, err
		}
		if err := mayChange(g, u.Resource, id, current); err != nil {
			return nil, err
		}
		if err := u.precondition(ctx, g, current); err != nil {
			return nil, err
		}
		if in, err = apply(current); err != nil {
			return nil, err
		}
		if reflect.DeepEqual(in, u.Input(current)) {
			return nil, nil
		}
		if u.Kind == "" || s.Events == nil {
			return u.Save(ctx, tx, current, in, actor)
		}
		before, err := u.Representation(ctx, current)
		if err != nil {
			return nil, err
		}
		changed, err := u.Save(ctx, tx, current, in, actor)
		if err != nil {
			return nil, err
		}
		after, err := u.Representation(ctx, current)
		if err != nil {
			return nil, err
		}
		return changed, s.Record(ctx, tx, g.Caller, outbox.Updated(u.Kind, u.ID(current).String(), before, after))
	})
	return in, err
}

func (u Updater[Row, In]) precondition(ctx context.Context, g model.Guard, current Row) error {
	if u.Representation == nil || g.IfMatch == "" {
		return nil
	}
	rep, err := u.Representation(ctx, current)
	if err != nil {
		return err
	}
	return g.Precondition(rep)
}

// created is a row that knows the client that created it (model.Audit).
type created interface{ Creator() string }

// mayChange is the owner rule (model.Guard.MayChange) for a row the
// store holds.
func mayChange(g model.Guard, resource string, id uuid.UUID, row any) error {
	if !g.OwnerOnly {
		return nil
	}
	c, ok := row.(created)
	if !ok {
		return fmt.Errorf("store: a %s row does not say who created it (embed model.Audit)", resource)
	}
	return g.MayChange(resource, id.String(), c.Creator())
}

// CheckOwner is the owner rule (model.Guard.MayChange) for the row of
// table with id, for a write whose route declares it owner-only: a row
// another client created is a 403 not-owner. A row that does not exist
// passes: the write that follows answers its 404. created_by never
// changes, so the read needs no lock.
func CheckOwner(ctx context.Context, q Querier, g model.Guard, resource, table string, id uuid.UUID) error {
	if !g.OwnerOnly {
		return nil
	}
	var createdBy string
	err := q.QueryRow(ctx, `SELECT created_by FROM `+pgx.Identifier{table}.Sanitize()+` WHERE id = $1`, id).Scan(&createdBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return Classify(err, "owner of "+resource)
	}
	return g.MayChange(resource, id.String(), createdBy)
}

// CheckIfMatch is a delete's precondition: when g carries If-Match, it
// locks the row of table with id and checks the resource as current reads
// it (as a GET shows it) against it (412 otherwise).
func CheckIfMatch(ctx context.Context, tx pgx.Tx, g model.Guard, table string, id uuid.UUID, current func(ctx context.Context) (any, error)) error {
	if g.IfMatch == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{table}.Sanitize()+` WHERE id = $1 FOR UPDATE`, id); err != nil {
		return Classify(err, "lock "+table)
	}
	rep, err := current(ctx)
	if err != nil {
		return err
	}
	return g.Precondition(rep)
}

// Duplicate turns a unique violation into the 409 that names the row
// holding the key (existing_id), found by lookup (a SELECT of its id) on the
// pool after the failed transaction. Other errors pass through.
func (s *Store) Duplicate(ctx context.Context, err error, detail, lookup string, args ...any) error {
	if _, dup := Constraint(err, UniqueViolation); !dup {
		return err
	}
	var existing uuid.UUID
	if s.Pool.QueryRow(ctx, lookup, args...).Scan(&existing) != nil {
		// Deleted again in the meantime: still a conflict, without an id.
		return apperr.Conflict(detail)
	}
	return apperr.Duplicate(detail, existing.String())
}

// Delete runs a DELETE ... RETURNING into dest; no row is a 404.
func Delete(ctx context.Context, tx pgx.Tx, resource string, id uuid.UUID, sql string, dest ...any) error {
	err := tx.QueryRow(ctx, sql, id).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.NotFound(resource, id.String())
	}
	return Classify(err, "delete "+resource)
}

// Inserted runs an INSERT ... ON CONFLICT DO NOTHING RETURNING and reports
// whether a row was inserted; when not, existing reads the row that holds
// the key (committed a moment ago by a concurrent caller, which ON
// CONFLICT waited for). This is what makes concurrent find-or-create calls
// create exactly one row.
func Inserted[T any](ctx context.Context, tx pgx.Tx, op, insert string, args []any, existing func() (T, error)) (T, bool, error) {
	rows, err := tx.Query(ctx, insert, args...)
	if err != nil {
		var zero T
		return zero, false, Classify(err, op)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		var zero T
		return zero, false, Classify(err, op)
	}
	if len(got) == 1 {
		return got[0], true, nil
	}
	v, err := existing()
	return v, false, err
}

// NewID returns a UUIDv7: ids sort by creation time, so "ORDER BY id" is
// creation order and keyset pages stay stable.
func NewID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

//go:embed migrations/*.sql
var kitMigrationFiles embed.FS

// KitMigrations are the tables every service schema gets from the kit.
func KitMigrations() MigrationSet {
	files, err := fs.Sub(kitMigrationFiles, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return MigrationSet{Files: files, VersionTable: "kit_schema_version"}
}

// Migrations are the kit's migrations followed by the service's own: a
// service's migration may build on the kit's tables (the actions service's
// compliance queue is a trigger on its outbox). Each set keeps its own
// version table, so a schema migrated in the other order goes on as is.
func Migrations(service fs.FS) []MigrationSet {
	return []MigrationSet{KitMigrations(), {Files: service, VersionTable: "schema_version"}}
}
