package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// writeTx is a write transaction that spends no round trip to PostgreSQL
// on its own bookkeeping. Its BEGIN, its savepoints and their releases,
// and the statements a write only records (its outbox events, Defer) wait
// in a queue and travel in one pipelined batch with the next statement
// whose answer the write needs, or with the COMMIT. A create that inserts
// its row and records its event is two round trips (BEGIN with the
// insert; the event with the COMMIT) instead of four, and a write in a
// savepoint of a request's unit of work pays nothing for the savepoint.
//
// What is queued runs before the statement it travels with, in the order
// it was queued, in the same transaction: a queued statement that fails
// fails the statement it travels with (or the commit), and the
// transaction with it (send says why it cannot go on).
type writeTx struct {
	conn    *pgxpool.Conn
	release func()
	queue   []*pgx.QueuedQuery // sent before the next statement
	begun   bool               // BEGIN has reached the server
	closed  bool
	depth   int   // savepoints open
	broken  error // why the transaction cannot go on (see send)
}

func newWriteTx(conn *pgxpool.Conn, release func()) *writeTx {
	return &writeTx{conn: conn, release: release, queue: []*pgx.QueuedQuery{{SQL: "begin"}}}
}

// Defer queues sql, whose result nobody reads, to travel with the next
// statement or the commit.
func (t *writeTx) Defer(sql string, args ...any) {
	t.queue = append(t.queue, &pgx.QueuedQuery{SQL: sql, Arguments: args})
}

// send sends the queue and then the statements of b in one batch, reads
// the queue's results, and returns b's results still to be read.
//
// A failure of what was queued, or one that is not the server refusing
// the statement itself (the context ended before anything was sent, the
// connection broke), breaks the transaction: what the queue held belonged
// to earlier writes that have already reported success (a savepoint's
// release, an event), so no savepoint can undo just the write at hand, and
// rolling back to one would undo an earlier write instead. Everything but
// Rollback then fails, and the write fails whole.
func (t *writeTx) send(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if t.closed {
		return nil, pgx.ErrTxClosed
	}
	if t.broken != nil {
		return nil, t.broken
	}
	queued := len(t.queue)
	all := &pgx.Batch{QueuedQueries: append(t.queue, b.QueuedQueries...)}
	t.queue = nil
	if queued > 0 && all.QueuedQueries[0].SQL == "begin" {
		t.begun = true
	}
	br := t.conn.SendBatch(ctx, all)
	for i := 0; i < queued; i++ {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, t.breakOn(err)
		}
	}
	return br, nil
}

// breakOn marks the transaction broken by err and returns err.
func (t *writeTx) breakOn(err error) error {
	if t.broken == nil {
		t.broken = fmt.Errorf("store: the transaction cannot go on: %w", err)
	}
	return err
}

// statementFailed is err from a statement's own result: the server
// refusing it leaves the transaction to its savepoints; anything else
// breaks it.
func (t *writeTx) statementFailed(err error) error {
	var pgErr *pgconn.PgError
	if err != nil && !errors.As(err, &pgErr) {
		return t.breakOn(err)
	}
	return err
}

func (t *writeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := t.send(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, t.statementFailed(err)
}

func (t *writeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := t.send(ctx, b)
	if err != nil {
		return errRows{err}, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		err = t.statementFailed(err)
		return errRows{err}, err
	}
	return &batchRows{Rows: rows, batch: br, tx: t}, nil
}

func (t *writeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := t.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return batchRow{rows.(*batchRows)}
}

// SendBatch sends b after the queue, in the same batch.
func (t *writeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	br, err := t.send(ctx, b)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return &checkedResults{BatchResults: br, tx: t}
}

// checkedResults are a caller's batch results: a failure other than the
// server refusing a statement breaks the transaction (see send).
type checkedResults struct {
	pgx.BatchResults
	tx *writeTx
}

func (r *checkedResults) Exec() (pgconn.CommandTag, error) {
	tag, err := r.BatchResults.Exec()
	return tag, r.tx.statementFailed(err)
}

func (r *checkedResults) Close() error {
	return r.tx.statementFailed(r.BatchResults.Close())
}

// flush sends the queue on its own, for what cannot travel in a batch.
func (t *writeTx) flush(ctx context.Context) error {
	if len(t.queue) == 0 {
		return nil
	}
	br, err := t.send(ctx, &pgx.Batch{})
	if err != nil {
		return err
	}
	return br.Close()
}

func (t *writeTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error) {
	if err := t.flush(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, columns, rows)
}

func (t *writeTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return t.conn.Conn().Prepare(ctx, name, sql)
}

// LargeObjects is not offered: no store keeps large objects (MinIO holds
// the files).
func (t *writeTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (t *writeTx) Conn() *pgx.Conn { return t.conn.Conn() }

// Begin starts a savepoint; it is queued like BEGIN.
func (t *writeTx) Begin(context.Context) (pgx.Tx, error) {
	if t.closed {
		return nil, pgx.ErrTxClosed
	}
	// Named by depth: savepoints nest strictly (a write's ends before the
	// next begins), so a name always means the innermost open one, and a
	// batch of a thousand items in savepoints uses one statement, prepared
	// once, not a thousand that would churn the connection's statement
	// cache and cost a round trip each to prepare.
	t.depth++
	sp := &savepointTx{writeTx: t, name: "sp_" + strconv.Itoa(t.depth), at: len(t.queue)}
	t.Defer("savepoint " + sp.name)
	return sp, nil
}

// Commit sends the queue with COMMIT; a transaction that never reached
// the server ends without a round trip.
func (t *writeTx) Commit(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	defer t.end()
	if !t.begun && (len(t.queue) == 0 || len(t.queue) == 1 && t.queue[0].SQL == "begin") {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue("commit")
	br, err := t.send(ctx, b)
	if err == nil {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err == nil && tag.String() == "ROLLBACK" {
			err = pgx.ErrTxCommitRollback
		}
	}
	if err != nil && t.conn.Conn().PgConn().TxStatus() != 'I' {
		t.abandon(ctx)
	}
	return err
}

// Rollback rolls back what reached the server; it is a no-op after Commit.
func (t *writeTx) Rollback(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	defer t.end()
	t.queue = nil
	if !t.begun || t.conn.Conn().PgConn().TxStatus() == 'I' {
		return nil
	}
	if _, err := t.conn.Exec(ctx, "rollback"); err != nil {
		t.abandon(ctx)
		return err
	}
	return nil
}

// abandon closes a connection left inside a transaction it cannot end;
// the server rolls the transaction back, and the pool drops the closed
// connection when it is released.
func (t *writeTx) abandon(ctx context.Context) {
	_ = t.conn.Conn().Close(context.WithoutCancel(ctx))
}

func (t *writeTx) end() {
	if !t.closed {
		t.closed = true
		t.release()
	}
}

// savepointTx is a savepoint of a writeTx: statements go through its
// transaction's queue; its SAVEPOINT and RELEASE are queued.
type savepointTx struct {
	*writeTx
	name   string
	at     int // the queue's length before the SAVEPOINT was queued
	closed bool
}

func (s *savepointTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if s.closed {
		return nil, pgx.ErrTxClosed
	}
	return s.writeTx.Begin(ctx)
}

// Commit releases the savepoint (queued).
func (s *savepointTx) Commit(context.Context) error {
	if s.closed {
		return pgx.ErrTxClosed
	}
	s.closed = true
	s.writeTx.depth--
	s.writeTx.Defer("release savepoint " + s.name)
	return nil
}

// Rollback undoes what was done since the savepoint: what is still queued
// is dropped, and what reached the server is rolled back to it.
func (s *savepointTx) Rollback(ctx context.Context) error {
	if s.closed {
		return pgx.ErrTxClosed
	}
	s.closed = true
	t := s.writeTx
	t.depth--
	if t.closed {
		return pgx.ErrTxClosed
	}
	if t.broken != nil {
		return t.broken // only the whole transaction can be rolled back now
	}
	if s.at < len(t.queue) && t.queue[s.at].SQL == "savepoint "+s.name {
		t.queue = t.queue[:s.at]
		return nil
	}
	t.queue = nil
	b := &pgx.Batch{}
	b.Queue("rollback to savepoint " + s.name)
	br, err := t.send(ctx, b)
	if err != nil {
		return fmt.Errorf("rollback to savepoint: %w", err)
	}
	_, err = br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	// Released too, with the next statement, so that the name is free for
	// the next savepoint at this depth. (Not in this batch: while the
	// transaction is aborted PostgreSQL parses nothing but the statements
	// that end it or roll it back.)
	t.Defer("release savepoint " + s.name)
	return err
}

// batchRows are a statement's rows read from a batch: closing them reads
// the rest of the batch, so the connection is free again.
type batchRows struct {
	pgx.Rows
	batch  pgx.BatchResults
	tx     *writeTx
	closed bool
	err    error
}

func (r *batchRows) Next() bool { return nextOrClose(r.Rows, r.Close) }

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.batch.Close()
	if err := r.Rows.Err(); err != nil {
		r.tx.statementFailed(err) //nolint:errcheck // Err returns it
	} else {
		r.tx.statementFailed(r.err) //nolint:errcheck // Err returns it
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// batchRow is QueryRow's row over batchRows.
type batchRow struct{ rows *batchRows }

func (r batchRow) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// errRows are the rows of a statement that failed before it was read.
type errRows struct{ err error }

func (errRows) Close()                                       {}
func (r errRows) Err() error                                 { return r.err }
func (errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (errRows) Next() bool                                   { return false }
func (r errRows) Scan(...any) error                          { return r.err }
func (r errRows) Values() ([]any, error)                     { return nil, r.err }
func (errRows) RawValues() [][]byte                          { return nil }
func (errRows) Conn() *pgx.Conn                              { return nil }
func (errRows) TypeMap() *pgtype.Map                         { return pgtype.NewMap() }

var (
	_ pgx.Tx = (*writeTx)(nil)
	_ pgx.Tx = (*savepointTx)(nil)
)
