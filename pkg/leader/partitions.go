package leader

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Partitions is a table partitioned by range (PostgreSQL's own declarative
// partitioning) whose partitions are made ahead of the rows, by a task of
// the schema's maintenance. pg_partman would do the same, but it is an
// extension the database's superuser must install, which a service's role
// cannot and a managed PostgreSQL may not offer; the whole of what the
// registry needs (partitions of one fixed size, made ahead, dropped whole)
// is a few catalogue statements.
//
// There is no default partition: a row past the last partition is refused
// (its write fails and is retried; nothing acknowledged is lost). A
// default partition would take such a row instead, but then every
// partition made later must first scan the default one under a lock that
// stops the table's writes, and no partition could be detached
// CONCURRENTLY, so dropping one would stop the table's reads too. The task
// keeps Ahead partitions beyond the newest row, and registry_partitions_ahead
// says how many there are (alert RegistryPartitionsRunningOut).
type Partitions struct {
	// Table is the partitioned table ("events").
	Table string
	// Key says what the partition key is and how wide a partition is.
	Key PartitionKey
	// Ahead is how many partitions wholly beyond the newest row the task
	// keeps made.
	Ahead int
}

// PartitionKey is a partition key: a bigint numbered by a sequence
// (SeqKey), or a UUIDv7 id, whose leading 48 bits are its creation time
// in milliseconds (TimeKey). Bounds are int64s: the number, or the
// milliseconds.
type PartitionKey interface {
	// position is where the newest row is.
	position(ctx context.Context, conn *pgx.Conn) (int64, error)
	// width is how many key values a partition holds.
	width() int64
	// literal is bound as an SQL literal of the key's type.
	literal(bound int64) string
	// parse is the bound pg_get_expr prints.
	parse(s string) (int64, error)
}

// SeqKey partitions a bigint column numbered by Sequence, Width numbers a
// partition.
type SeqKey struct {
	Sequence string
	Width    int64
}

func (k SeqKey) position(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var last int64
	err := conn.QueryRow(ctx, "SELECT last_value FROM "+pgx.Identifier{k.Sequence}.Sanitize()).Scan(&last)
	return last, err
}
func (k SeqKey) width() int64               { return k.Width }
func (k SeqKey) literal(bound int64) string { return strconv.FormatInt(bound, 10) }
func (k SeqKey) parse(s string) (int64, error) {
	return strconv.ParseInt(strings.Trim(s, "'"), 10, 64)
}

// TimeKey partitions a UUIDv7 column by its time, Span a partition, each
// starting at a multiple of Span since the Unix epoch (UTC): a range of
// ids is a range of creation times, so the primary key on the id stays
// the partition key.
type TimeKey struct {
	Span time.Duration
}

func (k TimeKey) position(context.Context, *pgx.Conn) (int64, error) {
	return time.Now().UnixMilli(), nil
}
func (k TimeKey) width() int64 { return k.Span.Milliseconds() }

// literal is the least UUIDv7 of the millisecond bound (every id made at
// or after it sorts at or above it, every earlier one below).
func (k TimeKey) literal(bound int64) string {
	return "'" + UUIDv7Bound(bound) + "'"
}

func (k TimeKey) parse(s string) (int64, error) {
	h := strings.ReplaceAll(strings.Trim(s, "'"), "-", "")
	if len(h) != 32 {
		return 0, fmt.Errorf("not a uuid: %q", s)
	}
	return strconv.ParseInt(h[:12], 16, 64)
}

// UUIDv7Bound is the least UUIDv7 of the millisecond ms since the epoch.
func UUIDv7Bound(ms int64) string {
	h := fmt.Sprintf("%012x", ms)
	return h[:8] + "-" + h[8:] + "-0000-0000-000000000000"
}

// Partition is one partition and the keys it holds: From up to, not
// including, To. The first partition of a converted table holds every key
// below its To (From is math.MinInt64).
type Partition struct {
	Name     string
	From, To int64
}

var partitionsAhead = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Name: "registry_partitions_ahead",
	Help: "Partitions of a table made ahead of its newest row, on the replica that leads the schema's maintenance (one that stops leading drops its series).",
}, []string{"schema", "table"})

var boundExpr = regexp.MustCompile(`^FOR VALUES FROM \((.+)\) TO \((.+)\)$`)

// List is the table's partitions, lowest first. A partition left detached
// halfway (a DETACH ... CONCURRENTLY cut short) is finished first, unless
// another session holds or waits for a lock on it: then its detach may
// still be under way (a replica that lost the lead mid-drop, an operator),
// and finishing it here would wait for that session and then fail once
// it had finished; the session, or a later List, finishes it.
func (p Partitions) List(ctx context.Context, conn *pgx.Conn) ([]Partition, error) {
	rows, err := conn.Query(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), i.inhdetachpending
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass`, p.Table)
	if err != nil {
		return nil, fmt.Errorf("list the partitions of %s: %w", p.Table, err)
	}
	var (
		parts   []Partition
		pending []string
	)
	var name, bound string
	var detaching bool
	if _, err := pgx.ForEachRow(rows, []any{&name, &bound, &detaching}, func() error {
		if detaching {
			pending = append(pending, name)
			return nil
		}
		m := boundExpr.FindStringSubmatch(bound)
		if m == nil {
			return fmt.Errorf("partition %s: bound %q is not a range", name, bound)
		}
		part := Partition{Name: name, From: math.MinInt64}
		if m[1] != "MINVALUE" {
			if part.From, err = p.Key.parse(m[1]); err != nil {
				return fmt.Errorf("partition %s: %w", name, err)
			}
		}
		if part.To, err = p.Key.parse(m[2]); err != nil {
			return fmt.Errorf("partition %s: %w", name, err)
		}
		parts = append(parts, part)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list the partitions of %s: %w", p.Table, err)
	}
	for _, name := range pending {
		var busy bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks
			WHERE locktype = 'relation' AND relation = $1::regclass AND pid <> pg_backend_pid())`, name).Scan(&busy); err != nil {
			return nil, fmt.Errorf("look for a detach of partition %s under way: %w", name, err)
		}
		if busy {
			continue
		}
		if err := p.finishDrop(ctx, conn, name); err != nil {
			return nil, err
		}
	}
	for i := 1; i < len(parts); i++ {
		for j := i; j > 0 && parts[j].From < parts[j-1].From; j-- {
			parts[j], parts[j-1] = parts[j-1], parts[j]
		}
	}
	return parts, nil
}

// MakeAhead makes the partitions missing for Ahead of them to lie wholly
// beyond the newest row, and says how many there are now. Each is made
// empty on its own and then attached, which locks the table against
// neither reads nor writes (ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE;
// CREATE TABLE ... PARTITION OF would take ACCESS EXCLUSIVE).
func (p Partitions) MakeAhead(ctx context.Context, conn *pgx.Conn) (made, ahead int, err error) {
	parts, err := p.List(ctx, conn)
	if err != nil {
		return 0, 0, err
	}
	if len(parts) == 0 {
		return 0, 0, fmt.Errorf("%s has no partition to continue from", p.Table)
	}
	pos, err := p.Key.position(ctx, conn)
	if err != nil {
		return 0, 0, fmt.Errorf("where the newest row of %s is: %w", p.Table, err)
	}
	for _, part := range parts {
		if part.From > pos {
			ahead++
		}
	}
	gauge := partitionsAhead.WithLabelValues(schemaOf(conn), p.Table)
	gauge.Set(float64(ahead))
	last := parts[len(parts)-1].To
	for ahead < p.Ahead || last <= pos {
		from := last
		// A table left far behind (the task stopped for long) continues
		// at the newest row rather than filling the gap one by one.
		if pos-from > p.Key.width() {
			from = pos - pos%p.Key.width()
		}
		to := from + p.Key.width()
		if err := p.attach(ctx, conn, from, to); err != nil {
			return made, ahead, err
		}
		made++
		if from > pos {
			ahead++
			gauge.Set(float64(ahead))
		}
		last = to
	}
	return made, ahead, nil
}

func (p Partitions) partitionName(from int64) string {
	if _, ok := p.Key.(TimeKey); ok {
		return fmt.Sprintf("%s_%s", p.Table, time.UnixMilli(from).UTC().Format("20060102t1504"))
	}
	return fmt.Sprintf("%s_%d", p.Table, from)
}

// attach makes the partition [from, to) and attaches it. A step cut short
// after the CREATE leaves a table the next try attaches (IF NOT EXISTS).
func (p Partitions) attach(ctx context.Context, conn *pgx.Conn, from, to int64) error {
	name := pgx.Identifier{p.partitionName(from)}.Sanitize()
	table := pgx.Identifier{p.Table}.Sanitize()
	_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`, name, table))
	if err == nil {
		_, err = conn.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)`,
			table, name, p.Key.literal(from), p.Key.literal(to)))
	}
	if err != nil {
		return fmt.Errorf("make partition %s of %s: %w", name, p.Table, err)
	}
	return nil
}

// Drop detaches the partition CONCURRENTLY (SHARE UPDATE EXCLUSIVE on the
// table: requests go on) and drops it, giving its disk back at once,
// where a DELETE of its rows would write each one to the WAL and leave the
// space to vacuum. A detach cut short is finished by the next List.
func (p Partitions) Drop(ctx context.Context, conn *pgx.Conn, part Partition) error {
	_, err := conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DETACH PARTITION %s CONCURRENTLY",
		pgx.Identifier{p.Table}.Sanitize(), pgx.Identifier{part.Name}.Sanitize()))
	if err != nil {
		return fmt.Errorf("detach partition %s of %s: %w", part.Name, p.Table, err)
	}
	return p.finishDrop(ctx, conn, part.Name)
}

func (p Partitions) finishDrop(ctx context.Context, conn *pgx.Conn, name string) error {
	var pending bool
	err := conn.QueryRow(ctx, `SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = $1::regclass`, name).Scan(&pending)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("drop partition %s of %s: %w", name, p.Table, err)
	}
	if pending {
		if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DETACH PARTITION %s FINALIZE",
			pgx.Identifier{p.Table}.Sanitize(), pgx.Identifier{name}.Sanitize())); err != nil {
			return fmt.Errorf("finish detaching partition %s of %s: %w", name, p.Table, err)
		}
	}
	if _, err := conn.Exec(ctx, "DROP TABLE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("drop partition %s of %s: %w", name, p.Table, err)
	}
	return nil
}

// Task is the maintenance task that keeps the partitions made ahead.
func (p Partitions) Task(every time.Duration) Task {
	return Task{Name: "partitions of " + p.Table, Every: every,
		Step: func(ctx context.Context, conn *pgx.Conn) (int64, bool, error) {
			made, _, err := p.MakeAhead(ctx, conn)
			return int64(made), false, err
		}}
}

// IsPastLastPartition says whether err is a write refused because no
// partition holds its key (the partitions ahead ran out).
func IsPastLastPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.HasPrefix(pgErr.Message, "no partition of relation")
}

func schemaOf(conn *pgx.Conn) string { return conn.Config().RuntimeParams["search_path"] }

// BuildIndex makes the index name on the table as `CREATE INDEX
// CONCURRENTLY` would, which PostgreSQL refuses on a partitioned table: the
// index is made on the table alone (ON ONLY: no rows, invalid), each
// partition's is built CONCURRENTLY (writes go on) and attached, and the
// table's is valid once the last is. Partitions made later get the index
// by themselves. Each step may run again. def is what follows the table's
// name in CREATE INDEX ("(type, stored_at)", "USING gin (data)").
func (p Partitions) BuildIndex(ctx context.Context, conn *pgx.Conn, name, def string) error {
	table := pgx.Identifier{p.Table}.Sanitize()
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON ONLY %s %s`, pgx.Identifier{name}.Sanitize(), table, def)); err != nil {
		return fmt.Errorf("make index %s on %s: %w", name, p.Table, err)
	}
	parts, err := p.List(ctx, conn)
	if err != nil {
		return err
	}
	for _, part := range parts {
		child := pgx.Identifier{part.Name + "_" + name}.Sanitize()
		var attached bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_inherits
			WHERE inhparent = $1::regclass AND inhrelid = to_regclass($2))`, name, part.Name+"_"+name).Scan(&attached); err != nil {
			return fmt.Errorf("make index %s on %s: %w", name, part.Name, err)
		}
		if attached {
			continue
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE INDEX CONCURRENTLY IF NOT EXISTS %s ON %s %s`,
			child, pgx.Identifier{part.Name}.Sanitize(), def)); err != nil {
			return fmt.Errorf("make index %s on %s: %w", name, part.Name, err)
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER INDEX %s ATTACH PARTITION %s`, pgx.Identifier{name}.Sanitize(), child)); err != nil {
			return fmt.Errorf("attach index %s of %s: %w", child, part.Name, err)
		}
	}
	return nil
}
