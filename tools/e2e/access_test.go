package e2e

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/assetregistry/registry/pkg/access"
	"github.com/assetregistry/registry/pkg/catalog"
	"github.com/assetregistry/registry/tools/devstack"
)

// pgCode is the SQLSTATE of err, "" when it is none.
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func connectAs(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// withoutPassword is raw with the user kept and the password dropped.
func withoutPassword(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(u.User.Username())
	return u.String()
}

// Each deployable connects as its own role, which owns its schema (the
// migrations ran as it) and can use nothing else: not another's schema,
// not public, not a new schema, no superuser powers; and no role gets in
// without its password.
func TestEachDeployableHasItsOwnRole(t *testing.T) {
	t.Parallel()
	admin := connectAs(t, stack.DatabaseURL)
	if len(stack.RoleURLs) < 2 {
		t.Fatalf("roles: %v; the test would prove little", stack.RoleURLs)
	}
	// One table of every schema, as the superuser sees them.
	tables := map[string]string{}
	for schema, roleURL := range stack.RoleURLs {
		u, _ := url.Parse(roleURL)
		role := u.User.Username()
		var owner, table string
		var foreign int
		if err := admin.QueryRow(t.Context(), `SELECT n.nspowner::regrole::text,
				(SELECT min(c.relname) FROM pg_class c WHERE c.relnamespace = n.oid AND c.relkind = 'r'),
				(SELECT count(*) FROM pg_class c WHERE c.relnamespace = n.oid AND c.relowner <> n.nspowner)
			FROM pg_namespace n WHERE n.nspname = $1`, schema).Scan(&owner, &table, &foreign); err != nil {
			t.Fatalf("schema %s: %v", schema, err)
		}
		if owner != role || foreign != 0 {
			t.Errorf("schema %s is owned by %s with %d objects owned by others; want all of it %s's", schema, owner, foreign, role)
		}
		tables[schema] = schema + "." + table
	}
	for schema, roleURL := range stack.RoleURLs {
		t.Run(schema, func(t *testing.T) {
			conn := connectAs(t, roleURL)
			var super, createDB bool
			if err := conn.QueryRow(t.Context(), "SELECT rolsuper, rolcreatedb FROM pg_roles WHERE rolname = current_user").Scan(&super, &createDB); err != nil || super || createDB {
				t.Errorf("superuser %v, createdb %v (%v)", super, createDB, err)
			}
			if _, err := conn.Exec(t.Context(), "SELECT * FROM "+tables[schema]+" LIMIT 1"); err != nil {
				t.Errorf("its own schema: %v", err)
			}
			for other, table := range tables {
				if other == schema {
					continue
				}
				if _, err := conn.Exec(t.Context(), "SELECT * FROM "+table+" LIMIT 1"); pgCode(err) != "42501" {
					t.Errorf("reading %s: %v, want permission denied", table, err)
				}
			}
			for _, stmt := range []string{"CREATE SCHEMA t_elsewhere", "CREATE TABLE public.t_elsewhere (id int)", "CREATE TEMP TABLE t_scratch (id int)"} {
				if _, err := conn.Exec(t.Context(), stmt); pgCode(err) != "42501" {
					t.Errorf("%s: %v, want permission denied", stmt, err)
				}
			}
			_, err := pgx.Connect(t.Context(), withoutPassword(t, roleURL))
			if pgCode(err) != "28P01" {
				t.Errorf("connecting without the password: %v, want password authentication failed", err)
			}
		})
	}
}

// Each service with finds has its own Redis user, which reaches its own
// cache namespace and no other service's keys, and so has the gateway, for
// its rate-limit budgets; nobody gets in without a password.
func TestEachServiceHasItsOwnRedisUser(t *testing.T) {
	t.Parallel()
	if len(stack.RedisUserURLs) < 2 {
		t.Fatalf("users: %v; the test would prove little", stack.RedisUserURLs)
	}
	client := func(raw string) *redis.Client {
		opts, err := redis.ParseURL(raw)
		if err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(opts)
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := t.Context()
	if err := client(withoutPassword(t, stack.RedisURL)).Ping(ctx).Err(); !refusedByRedis(err) {
		t.Errorf("Redis without a password: %v, want NOAUTH or WRONGPASS", err)
	}
	for name, userURL := range stack.RedisUserURLs {
		user := client(userURL)
		own := devstack.RedisNamespace(name) + "e2e-access-check"
		if err := user.Set(ctx, own, "x", time.Minute).Err(); err != nil {
			t.Errorf("%s in its own namespace: %v", name, err)
		}
		for other := range stack.RedisUserURLs {
			if other == name {
				continue
			}
			theirs := devstack.RedisNamespace(other) + "e2e-access-check"
			for what, err := range map[string]error{
				"read":  user.Get(ctx, theirs).Err(),
				"write": user.Set(ctx, theirs, "poisoned", time.Minute).Err(),
			} {
				if err == nil || !strings.Contains(err.Error(), "NOPERM") {
					t.Errorf("%s may %s %s's keys: %v", name, what, other, err)
				}
			}
		}
		if err := user.Scan(ctx, 0, "*", 10).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%s may list every key: %v", name, err)
		}
		// The assets' access watermark: every service with Redis reads it
		// (pkg/access), none but the assets service writes it.
		watermark := devstack.RedisNamespace("assets") + "e2e-access-check:" + access.WatermarkName
		if name == "assets" || name == catalog.Gateway.Name {
			continue
		}
		if err := user.Get(ctx, watermark).Err(); err != nil && !errors.Is(err, redis.Nil) {
			t.Errorf("%s may not read the assets' access watermark: %v", name, err)
		}
		if err := user.Set(ctx, watermark, "1", time.Minute).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%s may write the assets' access watermark: %v", name, err)
		}
	}
}

// refusedByRedis reports whether err is Redis refusing a client without
// the right password.
func refusedByRedis(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "NOAUTH") || strings.Contains(err.Error(), "WRONGPASS"))
}
