package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LeaderSession tries to take the session advisory lock named name in the
// connection's schema, on a connection of its own: one holder per schema
// across replicas, for the work that must run once (a service's relay, the
// events service's consumer). Keyed by schema, installations (and tests)
// sharing a database each have their own leader. It returns the connection
// holding the lock, or nil when another session holds it. The connection
// never goes back to the pool: closing it releases the lock.
func LeaderSession(ctx context.Context, pool *pgxpool.Pool, name string) (*pgx.Conn, error) {
	pooled, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	conn := pooled.Hijack()
	var leader bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1 || current_schema(), 0))`, name+":").Scan(&leader); err != nil {
		conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // the session ends either way
		return nil, fmt.Errorf("take the %s lock: %w", name, err)
	}
	if !leader {
		conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // nothing held
		return nil, nil
	}
	return conn, nil
}
